"""L0 precision taught by an outside check on four more public skills repositories (issue 36's last
acceptance line: alirezarezvani/claude-skills, terrylica/cc-skills, remotion-dev/skills,
callstackincubator/agent-skills). Each pattern was a false error there; each test keeps the true defect
beside it (a near miss) an error. Fixtures are synthetic, written in the shape of what was found."""

import subprocess

from skill_eval.checks import structure
from skill_eval.cli import main
from skill_eval.content import config, generate


def _findings(root):
    generate.write_published(config.load(root))
    findings, _ = structure.check_all(config.load(root), None)
    return findings


def _publish(root, mode: str) -> None:
    cfg = root / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace("[evals]", f'[checks]\npublish = "{mode}"\n\n[evals]', 1))


def _append(root, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text((p.read_text() if p.exists() else "# Notes\n") + text)


def test_a_link_whose_text_is_its_target_is_one_finding(mini_repo):
    """`See [references/x.md](references/x.md)` with no such file: one link-broken error, not a second
    path-missing error for the link's own text."""
    _append(mini_repo, "skills-src/alpha/SKILL.md",
            "\nSee [references/experiments.md](references/experiments.md) for ideas.\n"
            "Then read `references/playbooks.md` before you start.\n")  # no link: still its own error
    got = [(f.rule, f.subject, f.level) for f in _findings(mini_repo) if f.where == "skills-src/alpha/SKILL.md"]
    assert [g for g in got if "experiments" in g[1]] == [("link-broken", "references/experiments.md", "error")], got
    assert ("path-missing", "references/playbooks.md", "error") in got


def test_a_verb_that_does_not_govern_a_word_pair_makes_no_path(mini_repo):
    """'setup steps (clone, install, run), and available scripts/commands' and 'Replace `cargo test` with
    `cargo nextest run` in scripts/CI': the verb is closed off or inside inline code."""
    _append(mini_repo, "skills-src/alpha/SKILL.md",
            "\n- README: setup steps (clone, install, configure env, run), and available scripts/commands.\n"
            "- Replace `cargo test` with `cargo nextest run` in scripts/CI\n"
            "- Run scripts/bootstrap before anything else.\n")  # the verb governs it: still a pointer
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-missing"}
    assert "scripts/commands" not in got and "scripts/CI" not in got, sorted(got)
    assert got["scripts/bootstrap"].level == "error"


def test_a_command_run_in_another_folder_names_that_folders_file(mini_repo):
    """`ssh host "cd ~/project && ./scripts/populate.sh"`: the project's script, not the skill's; a `cd`
    into the skill's own folder keeps the path the skill's."""
    _append(mini_repo, "skills-src/alpha/SKILL.md",
            '\n```bash\nssh host "cd ~/project && ./scripts/populate.sh setup"\n'
            'cd "$SKILL_DIR" && ./scripts/own-missing.sh\n./scripts/plain-missing.sh\n```\n')
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-missing"}
    assert "scripts/populate.sh" not in got, sorted(got)
    assert got["scripts/own-missing.sh"].level == "error" and got["scripts/plain-missing.sh"].level == "error"


def test_links_in_an_indented_code_block_are_examples(mini_repo):
    """A reference file shows a fence as an indented code block (CommonMark: 4 spaces after a paragraph):
    its link is text. Four spaces continuing a list item are not code: that link is still checked."""
    _append(mini_repo, "skills-src/alpha/references/details.md",
            "\nLinks inside fenced code blocks are not validated:\n\n"
            "    ```markdown\n    This [link](/absolute/path.md) is in a code block\n    ```\n\n"
            "- An item\n\n    continued with [a guide](missing-guide.md)\n")
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "link-broken"}
    assert "/absolute/path.md" not in got, sorted(got)
    assert got["missing-guide.md"].level == "error"


def test_a_relative_link_in_a_quoted_example_is_a_warning(mini_repo):
    """'> "For tactical patterns, see our [cold email frameworks](link)."': the user's text, a warning named
    as such; the same link outside quotes stays an error."""
    _append(mini_repo, "skills-src/alpha/references/details.md",
            '\n> "For tactical patterns, see our [cold email frameworks](link)."\n'
            "See [the frameworks](frameworks.md) next.\n")
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "link-broken"}
    assert got["link"].level == "warning" and "quoted example" in got["link"].message
    assert got["frameworks.md"].level == "error"


def test_a_script_at_the_repository_root_is_a_portability_finding(mini_repo):
    """`./scripts/convert.sh --skill x` (the repository's own installer, run from a clone): a warning where
    the skills ship together, an error where each is published alone; a script in neither place stays an error."""
    _append(mini_repo, "scripts/convert.sh", "#!/bin/sh\n")
    _append(mini_repo, "skills-src/alpha/SKILL.md", "\n```bash\n./scripts/convert.sh --skill alpha\n./scripts/nowhere.sh\n```\n")
    _publish(mini_repo, "plugin")
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-missing"}
    assert got["scripts/convert.sh"].level == "warning" and "repository root" in got["scripts/convert.sh"].message
    assert got["scripts/nowhere.sh"].level == "error"
    cfg = mini_repo / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace('publish = "plugin"', 'publish = "standalone"'))
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-missing"}
    assert got["scripts/convert.sh"].level == "error"


def test_a_table_cell_is_its_own_sentence(mini_repo):
    """'| Nested | Instructions in reference files | Injection in references/guide.md loaded on demand |':
    the verb ("instructions in") is in another cell; a verb in the path's own cell still makes a pointer."""
    _append(mini_repo, "skills-src/alpha/references/details.md",
            "\n| Vector | Where | Example |\n|---|---|---|\n"
            "| Nested | Instructions in reference files | Injection in references/guide.md loaded on demand |\n"
            "| Setup | First step | See references/setup.md before you start |\n")
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-missing"}
    assert "references/guide.md" not in got, sorted(got)
    assert got["references/setup.md"].level == "error"


def test_links_in_a_sample_of_the_output_are_the_samples(mini_repo):
    """expected_outputs/sample-prd-readme.md links to its own (unshipped) pages: a warning named as a sample
    of the output, like a template's; the same link in a reference file stays an error."""
    _append(mini_repo, "skills-src/alpha/expected_outputs/sample-prd-readme.md", "\n| 1 | Home | [→](./pages/01-home.md) |\n")
    _append(mini_repo, "skills-src/alpha/references/details.md", "\nSee [home](./pages/01-home.md).\n")
    got = {(f.where.rsplit("/", 1)[-1], f.subject): f for f in _findings(mini_repo) if f.rule == "link-broken"}
    sample = got[("sample-prd-readme.md", "./pages/01-home.md")]
    assert sample.level == "warning" and "sample of the skill's output" in sample.message
    assert got[("details.md", "./pages/01-home.md")].level == "error"


def test_a_script_in_the_plugin_folder_is_named_with_its_plugin_path(tmp_path, capsys):
    """plugins/minimax/skills/m3 runs `bun scripts/m3-cli.ts`, which is plugins/minimax/scripts/m3-cli.ts: it ships
    with the plugin, under another path (a warning naming ${CLAUDE_PLUGIN_ROOT}); a script nowhere stays an error."""
    repo = tmp_path / "host"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _append(repo, ".claude-plugin/marketplace.json", "{}\n")
    _append(repo, "plugins/mm/scripts/m3-cli.ts", "export {}\n")
    (repo / "plugins/mm/skills/m3").mkdir(parents=True)
    (repo / "plugins/mm/skills/m3/SKILL.md").write_text(
        "---\nname: m3\ndescription: Checks the m3 model catalogue for drift. Use for m3 upgrades.\n---\n\n"
        "```bash\nbun scripts/m3-cli.ts verify\nbun scripts/gone-cli.ts verify\n```\n")
    assert main(["init", str(repo)]) == 0, capsys.readouterr().out
    findings, _ = structure.check_all(config.load(repo), None)
    got = {f.subject: f for f in findings if f.rule == "path-missing"}
    assert got["scripts/m3-cli.ts"].level == "warning", got["scripts/m3-cli.ts"]
    assert "${CLAUDE_PLUGIN_ROOT}/scripts/m3-cli.ts" in got["scripts/m3-cli.ts"].message
    assert got["scripts/gone-cli.ts"].level == "error"


def test_maintainer_files_in_subfolders_and_tests_only_warn(mini_repo):
    """session-chronicle/tests/README.md and tests/AUDIT-REPORT.md link the repository's ADRs: the agent does
    not load them (a warning); the same link in a reference file stays an error; `./references/guide.md`
    alone in a table cell is a path named, not a command run."""
    for rel in ("tests/README.md", "tests/AUDIT-REPORT.md", "references/README.md"):
        _append(mini_repo, f"skills-src/alpha/{rel}", "\n**ADR**: [decision](/docs/adr/2026-01-02-x.md)\n")
    _append(mini_repo, "skills-src/alpha/references/details.md",
            "\n**ADR**: [decision](/docs/adr/2026-01-02-x.md)\n| Relative | `./references/guide.md` | resolves |\n")
    got = {(f.where.split("alpha/", 1)[-1], f.subject): f.level for f in _findings(mini_repo)}
    assert got[("tests/README.md", "/docs/adr/2026-01-02-x.md")] == "warning"
    assert got[("tests/AUDIT-REPORT.md", "/docs/adr/2026-01-02-x.md")] == "warning"
    assert got[("references/README.md", "/docs/adr/2026-01-02-x.md")] == "warning"
    assert got[("references/details.md", "/docs/adr/2026-01-02-x.md")] == "error"
    assert ("references/details.md", "references/guide.md") not in got


def test_a_path_in_a_links_text_is_its_label(mini_repo):
    """`See [references/api.md](../../references/api.md)`: the link's target is checked (here it leaves the
    skill), its text is a label, not a second path; the same path in prose beside it is still checked."""
    _append(mini_repo, "skills-src/alpha/SKILL.md",
            "\nSee [references/api.md](../../references/api.md) for the API.\nThen read `references/api.md` again.\n")
    got = [(f.rule, f.subject, f.line) for f in _findings(mini_repo) if f.where == "skills-src/alpha/SKILL.md"]
    mentions = [g for g in got if g[0] == "path-missing"]
    prose = 1 + next(i for i, line in enumerate((mini_repo / "skills-src/alpha/SKILL.md").read_text().split("\n"))
                     if line.startswith("Then read"))
    assert mentions == [("path-missing", "references/api.md", prose)], got  # the prose line's, not the label's
    assert ("link-broken", "../../references/api.md") in {g[:2] for g in got}


def test_a_file_to_create_and_a_quoted_example_are_not_pointers(mini_repo):
    """A skill that teaches skill writing: 'Create `references/common-issues.md` with ...' names a file to
    write; '✅ "To rotate a PDF, run `scripts/rotate_pdf.py`"' quotes wording. 'Read `references/gone.md`' and
    a command after a closed quote stay errors."""
    _append(mini_repo, "skills-src/alpha/references/details.md",
            "\n2. **Detail in references**: Create `references/common-issues.md` with the procedures\n"
            '- ✅ "To rotate a PDF, run `scripts/rotate_pdf.py <file> <degrees>`"\n'
            "Read `references/gone.md` first.\n"
            'Say "done", then run `python scripts/after-quote.py`.\n')
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-missing"}
    assert "references/common-issues.md" not in got and "scripts/rotate_pdf.py" not in got, sorted(got)
    assert got["references/gone.md"].level == "error" and got["scripts/after-quote.py"].level == "error"


def test_a_verb_inside_inline_code_is_the_codes(mini_repo):
    """'with `can't open file 'scripts/populate.py': [Errno 2]`' quotes an error message and
    '`ssh host "pueue add -- uv run python scripts/process.py"` queues the job' describes a remote command: the
    verbs (open, run) are inside the code. 'See `scripts/setup-guide.md`' keeps its verb outside: an error."""
    _append(mini_repo, "skills-src/alpha/references/details.md",
            "\n**Symptom**: Jobs fail with `can't open file 'scripts/populate.py': [Errno 2] No such file`.\n"
            '**Root cause**: `ssh host "pueue add -- uv run python scripts/process.py"` queues the job in $HOME.\n'
            "See `scripts/setup-guide.md` for the fix.\n")
    got = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-missing"}
    assert "scripts/populate.py" not in got and "scripts/process.py" not in got, sorted(got)
    assert got["scripts/setup-guide.md"].level == "error"
