import re

import pytest

from skill_eval.checks import structure, surface
from skill_eval.cli import main
from skill_eval.content import config, generate


def run_check(root, capsys):
    rc = main(["check-skills", "--root", str(root)])
    return rc, capsys.readouterr().out


def regen(root):
    generate.write_published(config.load(root))


def test_clean_repo_passes(mini_repo, capsys):
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0, out
    assert "check-skills: ok — 2 skills" in out


@pytest.mark.parametrize(
    "old,new,needle",
    [
        ("name: alpha", "name: Alpha", "must be lowercase"),
        ("name: alpha", "name: alpha--x", "single hyphens"),
        ("name: alpha", "name: gamma", "must equal its folder name 'alpha'"),
        ("name: alpha", "name: " + "a" * 65, "the limit is 64"),
        ("description: Compare", "description: ''\nx_y: Compare", "'description' is missing or empty"),
        ("description: Compare", "owner: me\ndescription: Compare", "unknown frontmatter field 'owner'"),
        ("description: Compare", "compatibility: ''\ndescription: Compare", "compatibility must be a string of 1-500"),
        ("description: Compare", "metadata: {a: 1}\ndescription: Compare", "metadata must map strings to strings"),
    ],
)
def test_frontmatter_violations(mini_repo, capsys, old, new, needle):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text().replace(old, new, 1))
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and needle in out, out


def test_description_too_long(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text().replace("description: Explain", "description: " + "x" * 1030 + " Explain"))
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "the limit is 1024" in out


def test_duplicate_frontmatter_key_is_that_skills_finding(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text().replace("name: beta", "name: beta\nname: beta"))
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1
    assert "error: skills-src/beta/SKILL.md: invalid YAML at line 3 column 1: duplicate key 'name'" in out  # file line numbers
    assert "1 skill, 1 error" in out  # alpha is still checked; beta's published copy is not a second finding


def test_broken_relative_link(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "\nSee [missing](references/nope.md).\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "broken relative link 'references/nope.md'" in out


def test_link_escaping_the_skill(mini_repo, capsys):
    (mini_repo / "README.md").write_text("# host\n")
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "\nSee [readme](../../README.md).\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)  # resolves in the repository: a portability warning for a plugin
    assert rc == 0 and re.search(r"warning: skills-src/beta/SKILL\.md:\d+: link '\.\./\.\./README\.md' leaves the skill folder", out)
    cfg = mini_repo / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace("[evals]", '[checks]\npublish = "standalone"\n\n[evals]', 1))
    rc, out = run_check(mini_repo, capsys)  # published alone: the same link is an error
    assert rc == 1 and re.search(r"error: skills-src/beta/SKILL\.md:\d+: link '\.\./\.\./README\.md' leaves the skill folder", out)
    p.write_text(p.read_text() + "\nSee [gone](../../NOPE.md).\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)  # resolves nowhere: a broken link whatever the publishing
    assert rc == 1 and "broken relative link '../../NOPE.md'" in out


def test_unresolved_references_path_mention(mini_repo, capsys):
    p = mini_repo / "skills-src/alpha/SKILL.md"  # alpha has a references/ folder
    p.write_text(p.read_text() + "\nRead references/ghost.md first.\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "'references/ghost.md'" in out


def test_unknown_flag_in_code_block(mini_repo, capsys):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text().replace("-o json=report.json", "--format json \\\n  --output-dir out"))
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1
    assert "`tool compare --format`: tool compare has no option --format" in out
    assert "--output-dir" in out


def test_unknown_command(mini_repo, capsys):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text() + "\n```sh\nFOO=1 tool frobnicate x\n```\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "tool has no command 'frobnicate'" in out


def test_flags_outside_code_blocks_are_not_checked(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "\nNever pass `tool compare --format`; it was removed.\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0, out


def test_published_copy_drift(mini_repo, capsys):
    (mini_repo / ".agents/skills/alpha/SKILL.md").write_text("drifted\n")
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and ".agents/skills/alpha/SKILL.md: differs from its source" in out


def test_orphan_fragment_warns(mini_repo, capsys):
    (mini_repo / "skills-src/shared/orphan.md").write_text("nobody cites me\n")
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0 and "warning: skills-src/shared/orphan.md: shared fragment is cited by no skill" in out


def test_long_body_warns(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "line\n" * 600)
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0 and "body is" in out and "lines (> 500)" in out


def test_subject_invocations_parsing():
    text = "```bash\nA=1 tool compare a b \\\n  --suppress s.yaml | tee x; tool dump --bad\n# tool compare --comment\n```\n"
    found = structure.subject_invocations(text, "tool")
    assert [argv[:2] for _, argv in found] == [["tool", "compare"], ["tool", "dump"]]
    assert found[0][1][-2:] == ["--suppress", "s.yaml"]


def test_parse_help_boxed_and_plain():
    boxed = "╭─ Options ─╮\n│ --header   -H  PATH   Public header │\n│                 --not-a-flag wrapped │\n│ --follow-deps/--no-follow-deps  x │\n╰──╯\n╭─ Commands ─╮\n│ compare   Compare things │\n╰──╯\n"
    opts, cmds = surface.parse_help(boxed)
    assert opts == ["--follow-deps", "--header", "--no-follow-deps", "-H"] and cmds == ["compare"]
    plain = "Usage: x\n\nOptions:\n  --variant NAME=PATH  Capture\n                       --wrapped x\n  -o, --output TEXT  out\n\nCommands:\n  tree  Show tree\n"
    opts, cmds = surface.parse_help(plain)
    assert opts == ["--output", "--variant", "-o"] and cmds == ["tree"]


def test_surface_drift():
    ref = {"version": "1", "commands": {"compare": {"options": ["-o", "--old"]}}}
    now = {"tool": "t", "version": "2", "commands": {"compare": {"options": ["-o", "--new"]}, "dump": {"options": []}}}
    problems = surface.drift(ref, now)
    assert any("installed t is 2" in p for p in problems)
    assert "compare: options removed from the installed tool: --old" in problems
    assert "compare: options added in the installed tool: --new" in problems
    assert any("'dump' exists in the installed tool but not in the reference" in p for p in problems)


def _findings(root):
    findings, _ = structure.check_all(config.load(root), None)
    return findings


def test_link_findings_adopting_real_repositories_taught(mini_repo):
    """Patterns from public skills repositories (getsentry, UiPath, editframe, K-Dense) that were false
    errors: each is now quiet or a warning, and the true findings beside them stay errors on their line."""
    skill = mini_repo / "skills-src/alpha"
    (skill / "references/other.md").write_text("Other.\n")
    (skill / "references/details.md").write_text(
        "Details.\n\n"
        "See [other](references/other.md), written from the skill root as the spec asks.\n"  # quiet
        "A note.[^1] Run [the solution skill](/uipath:uipath-solution).\n\n"  # a slash command: quiet
        "[^1]: The package keeps its templates.\n"  # a footnote, not a link definition: quiet
        "Open [the editor](/docs/editor) for trims.\n"  # site-absolute: dead for an agent
        "Then [again](references/gone.md)\n\nand [again](references/gone.md).\n")  # one finding, first line
    (skill / "SPEC.md").write_text("Maintainers run `python skills-src/alpha/scripts/check.py` and see [x](nope.md).\n")
    (skill / "scripts").mkdir()
    (skill / "scripts/check.py").write_text("print(1)\n")
    p = skill / "SKILL.md"
    p.write_text(p.read_text().replace("description:", "version: 1.0.0\ndescription:", 1)
                 + "\nRead references/details.md#usage before starting.\n")  # an anchor on an existing file: quiet
    regen(mini_repo)
    got = {(f.rule, f.where.rsplit("/", 1)[-1], f.subject): f for f in _findings(mini_repo)}
    assert ("link-broken", "details.md", "/uipath:uipath-solution") not in got
    assert not [k for k in got if k[2] in ("references/other.md", "The", "references/details.md#usage", "references/details.md")]
    absolute = got[("link-broken", "details.md", "/docs/editor")]
    assert absolute.level == "error" and "absolute link" in absolute.message and absolute.line == 7
    gone = [f for f in _findings(mini_repo) if f.subject == "references/gone.md"]
    assert len(gone) == 1 and gone[0].level == "error" and gone[0].line == 8
    # a maintainer document beside SKILL.md: what it names is a warning, and says why
    spec_rooted = got[("path-root-relative", "SPEC.md", "skills-src/alpha/scripts/check.py")]
    spec_link = got[("link-broken", "SPEC.md", "nope.md")]
    assert spec_rooted.level == spec_link.level == "warning" and "maintainer document" in spec_link.message
    # `version` is a client extension (warning), not an unknown-field error
    assert got[("client-key", "SKILL.md", "version")].level == "warning"
    assert not [f for f in got.values() if f.level == "error" and f.subject != "/docs/editor"
                and f.subject != "references/gone.md"], [str(f) for f in got.values()]


def test_root_relative_path_in_an_instruction_is_an_error_and_says_so(mini_repo):
    p = mini_repo / "skills-src/beta/SKILL.md"
    (mini_repo / "skills-src/beta/scripts").mkdir()
    (mini_repo / "skills-src/beta/scripts/run.py").write_text("print(1)\n")
    p.write_text(p.read_text() + "\n```bash\npython skills-src/beta/scripts/run.py\n```\n\nThe folder skills-src/beta holds it.\n")
    regen(mini_repo)
    rooted = {f.subject: f for f in _findings(mini_repo) if f.rule == "path-root-relative"}
    cmd = rooted["skills-src/beta/scripts/run.py"]
    assert cmd.level == "error" and "an instruction names" in cmd.message and "'scripts/run.py'" in cmd.message
    own = rooted["skills-src/beta"]
    assert own.level == "warning" and "the skill's own folder" in own.message and "copy the file" not in own.message


def test_a_skills_own_references_shared_folder_is_its_own(mini_repo):
    """`where` names the skill's own references/shared/ file, not the host's shared-fragments folder."""
    skill = mini_repo / "skills-src/beta"
    (skill / "references/shared").mkdir(parents=True)
    (skill / "references/shared/cli.md").write_text("See [gone](gone.md).\n")
    regen(mini_repo)
    broken = [f for f in _findings(mini_repo) if f.subject == "gone.md"]
    assert [f.where for f in broken] == ["skills-src/beta/references/shared/cli.md"]


def test_placeholders_templates_and_a_named_sibling_skills_file_are_not_errors(mini_repo):
    """More patterns from public repositories (getsentry, K-Dense, UiPath, editframe): an ellipsis or a
    placeholder name, a link inside a template the agent copies into its output, and a path of another
    skill named beside it. A real missing file next to them stays an error."""
    (mini_repo / "skills-src/beta/references").mkdir()
    (mini_repo / "skills-src/beta/references/files.md").write_text("Files.\n")
    skill = mini_repo / "skills-src/alpha"
    (skill / "templates").mkdir()
    (skill / "templates/report.md").write_text("See [the ADR](../adr/0001.md) in your project.\n")
    (skill / "assets").mkdir()
    (skill / "assets/soap_note_template.md").write_text("[ECG]: [Results]\n")
    p = skill / "SKILL.md"
    p.write_text(p.read_text() + "\n2. Use `references/...` and `assets/...` paths by default.\n"
                 "All scripts have help: `python scripts/script_name.py --help`.\n"
                 "Read the retention rules in the `beta` skill's `references/files.md`.\n"
                 "Read `references/missing.md` first.\n")
    regen(mini_repo)
    findings = _findings(mini_repo)
    errors = [(f.rule, f.subject) for f in findings if f.level == "error"]
    assert errors == [("path-missing", "references/missing.md")], [str(f) for f in findings]
    sibling = [f for f in findings if f.subject == "references/files.md"]
    assert [f.level for f in sibling] == ["warning"] and "a file of the skill 'beta'" in sibling[0].message
    template = [f for f in findings if f.subject == "../adr/0001.md"]
    assert [f.level for f in template] == ["warning"] and "in a template" in template[0].message


def test_a_link_into_a_renamed_folder_suggests_the_file(mini_repo):
    skill = mini_repo / "skills-src/alpha"
    (skill / "references/diagrams").mkdir()
    (skill / "references/diagrams/flow.md").write_text("Flow.\n")
    (skill / "references/guide.md").write_text("See [flow](mermaid_diagrams/flow.md).\n")
    regen(mini_repo)
    broken = [f for f in _findings(mini_repo) if f.subject == "mermaid_diagrams/flow.md"]
    assert len(broken) == 1 and broken[0].message.endswith("did you mean 'diagrams/flow.md'?")


def test_what_the_noise_rules_must_not_hide(mini_repo):
    """An adversarial review of the rules above: each line here is a real missing file an agent would hit,
    and each stays an error (before the review, every one of them was hidden or only a warning)."""
    (mini_repo / "skills-src/beta/scripts").mkdir()
    (mini_repo / "skills-src/beta/scripts/validate.py").write_text("print(1)\n")
    skill = mini_repo / "skills-src/alpha"
    (skill / "FORMS.md").write_text("Run `python scripts/check_fields.py in.pdf`.\n")  # linked from SKILL.md: loaded
    (skill / "references/templates.md").write_text("Read references/layouts.md first.\n")  # a guide, not a template
    p = skill / "SKILL.md"
    p.write_text(p.read_text() + "\nFill forms with [FORMS.md](FORMS.md) and [templates](references/templates.md).\n"
                 "If you would like a preview, run `python scripts/preview.py`.\n"
                 "Good practice: run `python scripts/lint.py` before committing.\n"
                 "Unlike beta, run `python scripts/validate.py out.docx` to validate it.\n"
                 "First read references/setup.md... then continue.\n"
                 "Run `python scripts/my_helper.py` to start, then `bash scripts/foo.sh` and `python scripts/example.py`.\n"
                 "Run scripts/deploy to ship.\n"
                 f"A {'x' * 300} word, and see references/long.md.\n")
    regen(mini_repo)
    errors = {f.subject for f in _findings(mini_repo) if f.level == "error"}
    for missing in ("scripts/check_fields.py", "references/layouts.md", "scripts/preview.py", "scripts/lint.py",
                    "scripts/validate.py", "references/setup.md", "scripts/my_helper.py", "scripts/foo.sh",
                    "scripts/example.py", "scripts/deploy", "references/long.md"):
        assert missing in errors, (missing, sorted(errors))


def test_a_skill_file_named_beside_another_skill_is_an_error_when_published_alone(mini_repo):
    (mini_repo / "skills-src/beta/references").mkdir()
    (mini_repo / "skills-src/beta/references/files.md").write_text("Files.\n")
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text() + "\nRead the retention rules in the `beta` skill's `references/files.md`.\n")
    cfg = mini_repo / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace("[evals]", '[checks]\npublish = "standalone"\n\n[evals]', 1))
    regen(mini_repo)
    named = [f for f in _findings(mini_repo) if f.subject == "references/files.md"]
    assert [f.level for f in named] == ["error"] and "'../beta/references/files.md'" in named[0].message


def test_l0_precision_on_patterns_from_public_repositories(mini_repo):
    """Issue 36: prose read as a path, fenced examples in reference files, one defect as two findings,
    client variables in links and frontmatter values read as paths (wshobson/agents, posit-dev/skills,
    anthropics/claude-plugins-official)."""
    skill = mini_repo / "skills-src/alpha"
    (skill / "references/runbook.md").write_text(
        "# Runbook\n\n```bash\n./scripts/smoke-test.sh\n```\n\n"  # a runbook's script in a reference: an example
        "````markdown\n```html\n<img src=\"chart.png\" alt=\"x\" />\n```\n![](image1.png)\n````\n"  # fenced: no link
        "Then run `python scripts/not-shipped.py` now.\n"  # a real pointer in prose stays an error
        "```bash\npython skills-src/alpha/references/details.md\n```\n")  # from the root, in an example: a warning
    (skill / "jobs").mkdir()
    (skill / "jobs/scan.md").write_text("Scan.\n")
    p = skill / "SKILL.md"
    p.write_text(p.read_text()
                 + "\n- Loads references/examples when needed\n"  # prose, not a path
                 + "1. [Scan](${CLAUDE_SKILL_DIR}/jobs/scan.md)\n2. [Gone](${CLAUDE_SKILL_DIR}/jobs/gone.md)\n"
                 + "- [Scripts](${CLAUDE_PLUGIN_ROOT}/scripts)\n"  # the plugin's folder: not L0's to resolve
                 + "```bash\n./scripts/in-skill-md.sh\n```\n"  # a command in SKILL.md itself: still an error
                 + "See [the runbook](references/runbook.md).\n")
    regen(mini_repo)
    got = {(f.rule, f.where.rsplit("/", 1)[-1], f.subject): f for f in _findings(mini_repo)}
    example = got[("path-missing", "runbook.md", "scripts/smoke-test.sh")]
    assert example.level == "warning" and "code example of a reference file" in example.message and example.line == 4
    assert got[("path-missing", "runbook.md", "scripts/not-shipped.py")].level == "error"
    rooted = got[("path-root-relative", "runbook.md", "skills-src/alpha/references/details.md")]
    assert rooted.level == "warning" and "code example of a reference file" in rooted.message
    assert got[("path-missing", "SKILL.md", "scripts/in-skill-md.sh")].level == "error"
    gone = got[("link-broken", "SKILL.md", "jobs/gone.md")]
    assert gone.level == "error" and "${CLAUDE_SKILL_DIR}/jobs/gone.md" in gone.message
    quiet = {"chart.png", "image1.png", "references/examples", "jobs/scan.md", "${CLAUDE_PLUGIN_ROOT}/scripts"}
    assert not [k for k in got if k[2] in quiet], [str(got[k]) for k in got if k[2] in quiet]


@pytest.mark.parametrize("name,needle", [
    ("Agent Development", "must be lowercase a-z"),  # a display name: bad format and not the folder, one finding
    ("r-lib/cli", "must equal its folder name 'alpha'"),
    ("alpha-two", "must equal its folder name 'alpha'"),
])
def test_one_defect_in_name_is_one_finding(mini_repo, name, needle):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text().replace("name: alpha", f"name: {name}", 1))
    regen(mini_repo)
    findings = [f for f in _findings(mini_repo) if f.where == "skills-src/alpha/SKILL.md"]
    assert len(findings) == 1, [str(f) for f in findings]  # no second name finding, no path read from `name:`
    assert findings[0].level == "error" and needle in findings[0].message and "write `name: alpha`" in findings[0].message


def test_frontmatter_keys_no_client_documents_are_errors_and_documented_ones_warnings(mini_repo):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text().replace("description:", "version: 0.1.0\ntools: Read\nuser-invocable: false\ndescription:", 1))
    regen(mini_repo)
    got = {f.subject: f for f in _findings(mini_repo) if f.where == "skills-src/alpha/SKILL.md"}
    version, tools, invocable = got["version"], got["tools"], got["user-invocable"]
    assert version.level == "warning" and version.rule == "client-key"
    assert "Agent Skills spec" in version.message and "Claude Code" in version.message and "`metadata.version`" in version.message
    assert invocable.level == "warning" and "Claude Code documents it" in invocable.message
    assert tools.level == "error" and "did you mean 'allowed-tools'" in tools.message
    assert "Claude Code, Codex, Gemini CLI" in tools.message


def test_a_folder_the_skill_says_lives_in_a_clone_is_a_warning(mini_repo):
    """anthropics/claude-plugins-official m5-onboard: 'the executable scripts ... live in a local clone of ...'."""
    p = mini_repo / "skills-src/beta/SKILL.md"
    text = p.read_text() + "\n```bash\npython3 scripts/onboard.py --apps buddy\n```\n"
    p.write_text(text)
    regen(mini_repo)
    assert [f.level for f in _findings(mini_repo) if f.subject == "scripts/onboard.py"] == ["error"]
    p.write_text(text + "\nThe executable scripts and the app bundle live in a local clone of https://example.com/x.\n")
    regen(mini_repo)
    found = [f for f in _findings(mini_repo) if f.subject == "scripts/onboard.py"]
    assert [f.level for f in found] == ["warning"] and "live in a clone" in found[0].message


def test_quoted_site_links_and_paths_said_to_be_another_repositorys(mini_repo):
    """coreyhaines31/marketingskills: a site-absolute link inside a quoted example is text for the user's
    site, and a root path 'in the `x` repo' is said to be that repository's: a warning, not an instruction."""
    (mini_repo / "skills-src/beta/references").mkdir()
    (mini_repo / "skills-src/beta/references/ideas.md").write_text("# Ideas\n")
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text()
                 + '\n| Contextual | "Learn more about [analytics](/features/analytics)" |\n'
                 + "Open [the editor](/docs/editor) now.\n"  # not quoted: still an error
                 + "1. Read `skills-src/beta/references/ideas.md` in the `acme-skills` repo\n"
                 + "2. Read `skills-src/beta/SKILL.md` before you start.\n")
    regen(mini_repo)
    got = {(f.rule, f.subject): f for f in _findings(mini_repo) if f.where == "skills-src/alpha/SKILL.md"}
    assert ("link-broken", "/features/analytics") not in got
    assert got[("link-broken", "/docs/editor")].level == "error"
    assert got[("path-root-relative", "skills-src/beta/references/ideas.md")].level == "warning"
    assert got[("path-root-relative", "skills-src/beta/SKILL.md")].level == "error"
