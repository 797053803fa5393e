"""Green on day one III (issue 36): init reads how a repository publishes (item 1) and the rough edges
of adopting (item 7): a dry run outside git, `pr --skip` by the names pr prints, a stale pack after a
one-line skill fix named once with its one command, frontmatter findings with a line."""

import json
import subprocess
from pathlib import Path

import pytest

from skill_eval.checks.rules import HYGIENE
from skill_eval.cli import main
from skill_eval.commands import pr


def _skill(repo: Path, name: str, body: str = "") -> Path:
    p = repo / "skills" / name / "SKILL.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\nname: {name}\ndescription: Handles {name} work. Use for {name} tasks.\n---\n\nDo {name}.\n{body}")
    return p


def _linked_repo(tmp_path: Path, git: bool = True) -> Path:
    """A flat repository whose skills link to each other (every link resolves) and no plugin manifest."""
    repo = tmp_path / "host"
    _skill(repo, "alpha", "\nThen follow [beta](../beta/SKILL.md).\n")
    _skill(repo, "beta", "\nBefore this, see [alpha's guide](../alpha/references/guide.md).\n")
    (repo / "skills/alpha/references").mkdir()
    (repo / "skills/alpha/references/guide.md").write_text("# Guide\n")
    _skill(repo, "gamma")
    if git:
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_linked_skills_without_signs_of_one_by_one_publishing_are_a_plugin_and_green(tmp_path, capsys):
    repo = _linked_repo(tmp_path)
    assert main(["init", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "publish: plugin (2 link(s) between sibling skills and no sign of one-by-one publishing" in out
    assert 'to change: set publish = "standalone" under [checks] in skill-eval.toml' in out  # the one line
    assert 'publish = "plugin"' in (repo / "skill-eval.toml").read_text()
    assert main(["pr", "--root", str(repo), "--json"]) == 0  # not red on day one: the links are warnings
    report = json.loads(capsys.readouterr().out)
    l0 = report["steps"][0]["detail"]
    # (the fixture's bundled files are named by nothing: checks.hygiene's warnings are not what this tests)
    assert not l0["errors"] and {w["rule"] for w in l0["warnings"] if w["rule"] not in HYGIENE} == {"link-leaves-skill"}


@pytest.mark.parametrize("sign,why", [
    ("licence", "3 of 3 skill folders carry their own licence or manifest"),
    ("readme", "README.md install lines name single skills (beta)"),
    ("marketplace", "marketplace.json: 3 of its 3 plugins are single skills"),
])
def test_a_sign_of_one_by_one_publishing_keeps_standalone_and_the_cross_link_error(tmp_path, capsys, sign, why):
    repo = _linked_repo(tmp_path)
    if sign == "licence":
        for name in ("alpha", "beta", "gamma"):
            (repo / "skills" / name / "LICENSE.txt").write_text("MIT\n")
    elif sign == "readme":
        (repo / "README.md").write_text("# Skills\n\nInstall one: `npx skills add acme/skills --skill beta`\n")
    else:
        (repo / ".claude-plugin").mkdir()
        (repo / ".claude-plugin/marketplace.json").write_text(json.dumps(
            {"plugins": [{"name": n, "source": f"./skills/{n}"} for n in ("alpha", "beta", "gamma")]}))
    assert main(["init", str(repo)]) == 0
    out = capsys.readouterr().out
    assert f"publish: standalone ({why}" in out and 'to change: set publish = "plugin"' in out
    assert main(["check-skills", "--root", str(repo), "--json"]) == 1
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert {e["rule"] for e in errors} == {"link-leaves-skill"} and len(errors) == 2


def test_no_links_and_no_manifest_stays_standalone(tmp_path, capsys):
    repo = tmp_path / "host"
    _skill(repo, "alpha")
    _skill(repo, "beta")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert main(["init", str(repo), "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["publish"] == "standalone"


def test_dry_run_looks_at_a_folder_that_is_not_a_git_repository(tmp_path, capsys):
    repo = _linked_repo(tmp_path, git=False)
    assert main(["init", str(repo), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "not a git repository yet: run `git init` there before adopting" in out and "dry run — nothing written" in out
    assert not (repo / "skill-eval.toml").exists()
    assert main(["init", str(repo)]) == 2  # adopting for real still needs git
    assert "is not inside a git repository" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["triggers", "l1s", "L1s-triggers", "check-triggers", "structure", "golden", "l4",
                                  "local-paths"])
def test_pr_skip_accepts_the_names_pr_prints(name):
    assert pr._canonical(name) in [m for _, m, _ in pr.STEPS]


def test_pr_skip_triggers_and_an_unknown_name(tmp_path, capsys):
    repo = _linked_repo(tmp_path)
    assert main(["init", str(repo)]) == 0
    capsys.readouterr()
    assert main(["pr", "--root", str(repo), "--skip", "triggers", "--json"]) == 0
    steps = {s["step"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    assert steps["L1s triggers"]["status"] == "skipped"
    assert main(["pr", "--root", str(repo), "--skip", "trigers"]) == 2
    assert "use one of structure, surface, triggers, pack" in capsys.readouterr().err


def test_a_one_line_skill_fix_names_the_stale_pack_once_with_its_command(tmp_path, capsys):
    repo = _linked_repo(tmp_path)
    assert main(["init", str(repo)]) == 0
    capsys.readouterr()
    skill = repo / "skills/alpha/SKILL.md"
    skill.write_text(skill.read_text() + "One more line.\n")
    (repo / "skills/beta/SKILL.md").write_text((repo / "skills/beta/SKILL.md").read_text() + "And here.\n")
    assert main(["pr", "--root", str(repo)]) == 1
    out = capsys.readouterr().out
    stale = [ln for ln in out.splitlines() if ln.startswith("  stale:")]
    assert stale == ["  stale: skill:alpha: inputs moved: skills/alpha (affects alpha)",
                     "  stale: skill:beta: inputs moved: skills/beta (affects beta)"]  # one line per edit
    assert out.rstrip().endswith("only the evaluation pack is stale: run `skill-eval pack`, then commit "
                                 "agent-evals/skills/skill-eval-pack.json")
    assert main(["pack", "--check", "--root", str(repo), "--json"]) == 1
    assert len(json.loads(capsys.readouterr().out)["problems"]) == 2  # machines still get every entry
    assert main(["pack", "--root", str(repo)]) == 0
    capsys.readouterr()
    assert main(["pr", "--root", str(repo)]) == 0  # the one command was the whole fix


def test_frontmatter_findings_carry_their_line_in_json(tmp_path, capsys):
    repo = tmp_path / "host"
    p = _skill(repo, "alpha")
    p.write_text("---\nname: Alpha Skill\ndescription: Handles alpha work.\nversion: 1.0.0\n---\n\nDo alpha.\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert main(["init", str(repo)]) in (0, 1)
    capsys.readouterr()
    main(["check-skills", "--root", str(repo), "--json"])
    out = json.loads(capsys.readouterr().out)
    lines = {f["id"].rsplit(":", 1)[-1]: f.get("line") for f in out["errors"] + out["warnings"]}
    assert lines["name"] == 2 and lines["version"] == 4, out


def test_publish_detection_survives_hostile_files(tmp_path, capsys):
    """A contributor writes the marketplace, the README and the skills: odd shapes never break init."""
    repo = _linked_repo(tmp_path)
    (repo / "skills/gamma/SKILL.md").write_text((repo / "skills/gamma/SKILL.md").read_text()
                                               + "\n[x](../beta/%00nul.md) [y](../gamma/loop/loop/a.md)\n")
    (repo / "skills/gamma/loop").symlink_to(repo / "skills/gamma", target_is_directory=True)  # a loop, not followed
    assert main(["init", str(repo), "--dry-run"]) == 0
    assert "publish: plugin (2 link(s) between sibling skills" in capsys.readouterr().out  # the odd links count nothing
    (repo / ".claude-plugin").mkdir()
    for market in ('{"plugins": 5}', '["x"]', '{"plugins": [{"source": 7}, "x", {"source": "\\u0000"}]}', "not json"):
        (repo / ".claude-plugin/marketplace.json").write_text(market)
        assert main(["init", str(repo), "--dry-run", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["publish"] == "plugin", market  # its shape is not trusted
