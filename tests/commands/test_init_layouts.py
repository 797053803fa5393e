"""`init` on layouts seen in public skill repositories: skills at the repository root (editframe/skills),
a folder of SKILL.md fragments and a preview channel duplicating skills/ (UiPath/skills), a skill name in
two sources (unique draft ids), a pack that cannot be written (not ok), and a dry run that lists the pack."""

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml

from skill_eval.cli import main
from skill_eval.commands import _corpus_template as corpus_template
from skill_eval.content import config


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _skill(root: Path, rel: str, name: str | None = None) -> None:
    name = name or rel.rsplit("/", 1)[-1]
    _write(root, f"{rel}/SKILL.md", f"---\nname: {name}\ndescription: Handles {name} work. Use for {name} tasks.\n---\n\n"
                                    f"Do {name}.\n")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "host"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _write(repo, "README.md", "# skills\n")
    return repo


def _l0(capsys, repo: Path) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["pr", "--root", str(repo), "--json"])
    report = json.loads(capsys.readouterr().out)
    return code, next(s for s in report["steps"] if s["step"] == "L0 structure")


@pytest.mark.parametrize("argv", [[], ["--source", "."], ["--source", "./"]])
def test_skills_at_the_repository_root_are_adopted_never_a_false_green(tmp_path, capsys, argv):
    repo = _repo(tmp_path)
    for name in ("alpha", "beta", "gamma"):
        _skill(repo, name)
    assert main(["init", str(repo), *argv]) == 0
    out = capsys.readouterr().out
    assert "found no SKILL.md" not in out and "example skill" not in out
    assert "found 3 skill(s) at the repository root: alpha, beta, gamma" in out and "./" not in out
    assert not (repo / "skills").exists()  # no example scaffolded beside the real skills
    assert [s.path for s in config.load(repo).sources] == ["."]
    # the hooks fire on the skill folders (pre-commit paths never start with './'), and on a new root skill
    for hook in yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]:
        pat = re.compile(hook["files"])
        assert not hook["files"].startswith(r"^(\./")
        for path in ("alpha/SKILL.md", "beta/references/r.md", "delta/SKILL.md", "skill-eval.toml"):
            assert pat.search(path), (hook["id"], path)
        assert not pat.search("src/app.py") and not pat.search("README.md")
    corpus = yaml.safe_load((repo / "agent-evals/skills/trigger_corpus.yaml").read_text())
    assert {p["expected_skill"] for p in corpus["prompts"]} == {"alpha", "beta", "gamma", None}
    code, l0 = _l0(capsys, repo)
    assert code == 0 and l0["status"] == "ok" and sorted(l0["detail"]["skills"]) == ["alpha", "beta", "gamma"]
    # a real finding in a root skill fails pr (before the fix, pr checked only a scaffolded example)
    _write(repo, "beta/SKILL.md", "---\nname: beta\n---\n\nDo beta.\n")
    assert main(["pack", "--root", str(repo)]) in (0, 1)
    code, l0 = _l0(capsys, repo)
    assert code == 1 and l0["status"] == "fail"
    assert any("beta/SKILL.md" in e["where"] for e in l0["detail"]["errors"]), l0["detail"]["errors"]
    # a root source names its skills without './' (finding ids stay the same if a baseline is written later),
    # its own evaluation folder is not a skipped "skill", and its publish setting applies to its skills
    assert {e["where"] for e in l0["detail"]["errors"]} == {"beta/SKILL.md"}
    assert "agent-evals" not in json.dumps(l0["detail"].get("skipped", []))
    cfg = config.load(repo)
    assert cfg.publish_of("beta") == cfg.sources[0].publish and cfg.sources[0].shared == "shared"


def test_fragments_and_a_duplicate_preview_channel_are_not_adopted(tmp_path, capsys):
    repo = _repo(tmp_path)
    for name in ("api-workflow", "feedback", "maestro-flow", "planner"):
        _skill(repo, f"skills/{name}")
    for name in ("api-workflow", "feedback"):  # override fragments: SKILL.md without frontmatter
        _write(repo, f"skill-flavors/studioweb/{name}/SKILL.md", "<!--flavor:start-->\nUse the web surface.\n<!--flavor:end-->\n")
    for name in ("feedback", "maestro-flow"):  # a generated preview channel of skills/
        _skill(repo, f"preview/{name}")
    assert main(["init", str(repo), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "source: skills/" in out
    assert re.search(r"note: skill-flavors/studioweb/ \(2 SKILL\.md\) not adopted: none of its SKILL\.md files starts "
                     r"with a '---' frontmatter block.*--source skill-flavors/studioweb", out), out
    assert re.search(r"note: preview/ \(2 skill\(s\)\) not adopted: 2 of its skill names duplicate skills/ "
                     r"\(feedback, maestro-flow\); pass --source preview", out), out
    assert main(["init", str(repo)]) == 0
    assert [s.path for s in config.load(repo).sources] == ["skills"]
    code, l0 = _l0(capsys, repo)
    assert code == 0, l0


def test_a_lone_source_without_frontmatter_is_still_adopted_so_pr_names_it(tmp_path, capsys):
    repo = _repo(tmp_path)
    _write(repo, "skills/alpha/SKILL.md", "Do alpha.\n")  # the only skills: a real finding, never skipped
    assert main(["init", str(repo)]) == 1  # the pack cannot be built from it
    assert [s.path for s in config.load(repo).sources] == ["skills"]
    code, l0 = _l0(capsys, repo)
    assert code == 1 and "frontmatter" in json.dumps(l0["detail"]["errors"])


def test_drafted_prompt_ids_are_unique_when_a_skill_name_is_in_two_sources(tmp_path, capsys):
    repo = _repo(tmp_path)
    for name in ("api-workflow", "feedback", "a_b", "a-b"):  # a_b and a-b slug alike
        _skill(repo, f"skills/{name}")
    for name in ("api-workflow", "feedback"):
        _skill(repo, f"preview/{name}")
    text = corpus_template.render(repo, ["skills", "preview"])
    prompts = yaml.safe_load(text)["prompts"]
    ids = Counter(p["id"] for p in prompts)
    assert max(ids.values()) == 1, ids
    assert Counter(p["expected_skill"] for p in prompts) == {"api-workflow": 2, "feedback": 2, "a_b": 2, "a-b": 2, None: 2}
    # through init with both sources named explicitly: the clash of names is the one finding (no pack), and the
    # drafted corpus is not a second one (L1s, pack and freshness refuse duplicate prompt ids)
    assert main(["init", str(repo), "--source", "skills", "--source", "preview"]) == 1
    assert "skill names must be unique" in capsys.readouterr().out
    corpus = yaml.safe_load((repo / "agent-evals/skills/trigger_corpus.yaml").read_text())
    assert max(Counter(p["id"] for p in corpus["prompts"]).values()) == 1
    main(["pr", "--root", str(repo)])
    captured = capsys.readouterr()
    assert "duplicate prompt id" not in captured.out + captured.err


def test_init_is_not_ok_when_the_pack_cannot_be_written(tmp_path, capsys):
    repo = _repo(tmp_path)
    _skill(repo, "skills/alpha")
    _write(repo, "skills/beta/SKILL.md", "---\nname: beta\nname: beta\ndescription: B. Use for b.\n---\nx\n")
    assert main(["init", str(repo), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["ok"] is False and payload["pack"] is None and "duplicate key 'name'" in json.dumps(payload["pack_error"])
    assert (repo / "skill-eval.toml").is_file()  # adopted: the config and snippets are written
    assert main(["init", str(repo), "--force"]) == 1
    out = capsys.readouterr().out
    assert "init: ok" not in out and "init: FAIL" in out and "skill-eval pack" in out
    assert "create agent-evals/skills/skill-eval-pack.json" not in out


def test_dry_run_lists_the_pack_the_real_run_writes(tmp_path, capsys):
    repo = _repo(tmp_path)
    _skill(repo, "skills/alpha")
    assert main(["init", str(repo), "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "create agent-evals/skills/skill-eval-pack.json" in dry
    assert main(["init", str(repo)]) == 0
    real = capsys.readouterr().out
    created = [ln.strip() for ln in real.splitlines() if ln.strip().startswith("create ")]
    assert created == [ln.strip() for ln in dry.splitlines() if ln.strip().startswith("create ")]
    assert (repo / "agent-evals/skills/skill-eval-pack.json").is_file()
    assert main(["init", str(repo), "--dry-run", "--force", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pack"] == "agent-evals/skills/skill-eval-pack.json"


def test_the_makefile_says_what_the_install_placeholder_is_or_names_the_git_install():
    from skill_eval.commands import init

    local = init.render_snippets(["skills"], [], (None, "a local checkout"))["skill-eval.mk"]
    assert "<skill-eval repository URL> is a placeholder: replace it" in local
    spec = "skill-eval @ git+https://example.org/skill-eval.git@" + "c" * 40
    git = init.render_snippets(["skills"], [], (spec, spec))["skill-eval.mk"]
    assert f'pipx install "{spec}"' in git


def test_a_single_skill_repository_is_refused_not_adopted_green(tmp_path, capsys):
    repo = _repo(tmp_path)
    _write(repo, "SKILL.md", "---\nname: host\ndescription: Does host work. Use for host tasks.\n---\n\nDo it.\n")
    assert main(["init", str(repo)]) == 2
    err = capsys.readouterr().err
    assert "SKILL.md at the root" in err and "skills/<name>/" in err
    assert not (repo / "skill-eval.toml").exists() and not (repo / "skills").exists()  # no example scaffolded


def test_a_folder_of_skills_with_broken_frontmatter_is_adopted_so_l0_names_it(tmp_path, capsys):
    """A SKILL.md without '---' fences but with name:/description: lines is a skill with a mistake, not a
    fragment: its folder is adopted and pr fails on it (only a file with neither is a fragment)."""
    repo = _repo(tmp_path)
    _skill(repo, "skills/a")
    _write(repo, "tools/skills/b/SKILL.md", "name: b\ndescription: Does b.\n\nDo b.\n")
    _write(repo, "tools/skills/c/SKILL.md", "\n---\nname: c\ndescription: Does c.\n---\nDo c.\n")
    assert main(["init", str(repo)]) == 1  # adopted, but the pack cannot be written over a broken skill
    assert "tools/skills" in [s.path for s in config.load(repo).sources]
    code, l0 = _l0(capsys, repo)
    assert code == 1 and {e["where"] for e in l0["detail"]["errors"]} >= {"tools/skills/b/SKILL.md", "tools/skills/c/SKILL.md"}


def test_a_root_source_finds_root_relative_paths_and_keeps_quiet_about_plain_folders(tmp_path, capsys):
    repo = _repo(tmp_path)
    for name in ("alpha", "beta"):
        _skill(repo, name)
    _write(repo, "beta/scripts/x.py", "print(1)\n")
    _write(repo, "docs/guide.md", "# docs\n")
    _write(repo, "alpha/SKILL.md", "---\nname: alpha\ndescription: Handles alpha work.\n---\n\n"
                                   "Run `python beta/scripts/x.py` first.\n")
    assert main(["init", str(repo)]) == 0
    code, l0 = _l0(capsys, repo)
    rooted = [e for e in l0["detail"]["errors"] if e["rule"] == "path-root-relative"]
    assert code == 1 and [e["where"] for e in rooted] == ["alpha/SKILL.md"], l0["detail"]
    assert not [n for n in l0["detail"].get("skipped", []) if "docs" in json.dumps(n)]


def test_plugins_sharing_a_skill_name_are_not_adopted_into_one_failing_config(tmp_path, capsys):
    """terrylica/cc-skills: 40 plugins, eleven with a skill named `setup`; alirezarezvani/claude-skills: `init`
    in two plugins. init adopted every plugin and then could not write its own pack (names must be unique in
    one config). Now a plugin that would clash is named as not adopted, with the clash and the way to choose;
    init and the first pr are green; a plugin with no clash is still adopted."""
    repo = _repo(tmp_path)
    _write(repo, ".claude-plugin/marketplace.json", "{}\n")
    for name in ("record", "convert", "setup"):
        _skill(repo, f"plugins/cast-tools/skills/{name}")
    for name in ("send", "setup"):
        _skill(repo, f"plugins/tele/skills/{name}")
    for name in ("lint", "format"):
        _skill(repo, f"plugins/quality/skills/{name}")
    assert main(["init", str(repo)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"note: plugins/tele/skills/ \(2 skill\(s\)\) not adopted: skill names are unique in one config "
                     r"and setup also in plugins/cast-tools/skills/.*pass --source plugins/tele/skills", out), out
    assert sorted(s.path for s in config.load(repo).sources) == ["plugins/cast-tools/skills", "plugins/quality/skills"]
    code, l0 = _l0(capsys, repo)
    assert code == 0 and l0["status"] == "ok", l0
