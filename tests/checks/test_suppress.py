"""L0 findings: stable ids, suppressions with a reason (inline and config), the adoption baseline,
root-relative paths, and several skill sources in one config (issue 27)."""

import json
from pathlib import Path

import pytest

from skill_eval.checks.rules import HYGIENE
from skill_eval.cli import main
from skill_eval.content import config

CONFIG = """schema_version = 1
[skills]
source = "skills"
published = []
{checks}
[evals]
root = "agent-evals/skills"
"""
SOURCES = """schema_version = 1
[skills]
[[skills.sources]]
path = "skills/.curated"
[[skills.sources]]
path = "skills/.system"
publish = "standalone"
[evals]
root = "agent-evals/skills"
"""


def skill(name: str, body: str = "Do it.\n") -> str:
    return f"---\nname: {name}\ndescription: Does {name} things. Use for {name}.\n---\n\n{body}"


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path):
    write(tmp_path, "skill-eval.toml", CONFIG.format(checks=""))
    write(tmp_path, "skills/a/SKILL.md", skill("a", "See [b's guide](../b/guide.md).\n\nSee references/gone.md first.\n"))
    write(tmp_path, "skills/a/references/here.md", "x\n")
    write(tmp_path, "skills/b/SKILL.md", skill("b"))
    write(tmp_path, "skills/b/guide.md", "guide\n")
    return tmp_path


def check(root: Path, capsys, *extra: str) -> tuple[int, dict]:
    rc = main(["check-skills", "--root", str(root), "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def ids(out: dict, key: str) -> list[str]:
    return sorted(f["id"] for f in out[key] if f["rule"] not in HYGIENE)  # the fixtures' unnamed files: checks.hygiene


def test_ids_are_stable_and_levels_follow_publish(repo, capsys):
    rc, out = check(repo, capsys)
    assert rc == 1
    assert ids(out, "errors") == ["path-missing:skills/a/SKILL.md:references/gone.md"]
    assert ids(out, "warnings") == ["link-leaves-skill:skills/a/SKILL.md:../b/guide.md"]  # a plugin: portability
    p = repo / "skills/a/SKILL.md"
    p.write_text(p.read_text().replace("Do it.", "Do it.\n\nMore text.\n\n"), encoding="utf-8")
    _, again = check(repo, capsys)
    assert ids(again, "errors") == ids(out, "errors")  # lines moved, ids did not
    write(repo, "skill-eval.toml", CONFIG.format(checks='[checks]\npublish = "standalone"\n'))
    _, alone = check(repo, capsys)
    assert "link-leaves-skill:skills/a/SKILL.md:../b/guide.md" in ids(alone, "errors")


def test_inline_suppression_needs_a_reason(repo, capsys):
    p = repo / "skills/a/SKILL.md"
    text = p.read_text()
    p.write_text(text.replace("See references/gone.md", "<!-- skill-eval: ignore[path-missing] -->\nSee references/gone.md"),
                 encoding="utf-8")
    rc, out = check(repo, capsys)
    assert rc == 1
    assert "path-missing:skills/a/SKILL.md:references/gone.md" in ids(out, "errors")  # not suppressed
    assert any(f["rule"] == "suppression" and "gives no reason" in f["message"] for f in out["errors"])
    p.write_text(text.replace("See references/gone.md",
                              "<!-- skill-eval: ignore[path-missing] written by the installer -->\nSee references/gone.md"),
                 encoding="utf-8")
    rc, out = check(repo, capsys)
    assert rc == 0, out["errors"]
    assert [(f["id"], f["reason"]) for f in out["suppressed"]] == [
        ("path-missing:skills/a/SKILL.md:references/gone.md", "written by the installer")]


def test_config_suppression_with_wildcard_and_reason(repo, capsys):
    write(repo, "skill-eval.toml", CONFIG.format(checks=(
        '[checks]\n[[checks.ignore]]\nid = "path-missing:skills/a/*"\nreason = "generated at install time"\n')))
    rc, out = check(repo, capsys)
    assert rc == 0 and out["suppressed"][0]["reason"] == "generated at install time"
    write(repo, "skill-eval.toml", CONFIG.format(checks='[checks]\n[[checks.ignore]]\nid = "path-missing:skills/a/*"\n'))
    assert main(["check-skills", "--root", str(repo)]) == 2  # a suppression without a reason is refused
    assert "reason" in capsys.readouterr().err


def test_baseline_accepts_known_debt_and_fails_new_findings(repo, capsys):
    assert main(["check-skills", "--root", str(repo), "--write-baseline"]) == 0
    capsys.readouterr()
    baseline = json.loads((repo / "agent-evals/skills/check-skills-baseline.json").read_text())
    assert [e["id"] for e in baseline["findings"] if e["id"].split(":")[0] not in HYGIENE] == [
        "link-leaves-skill:skills/a/SKILL.md:../b/guide.md", "path-missing:skills/a/SKILL.md:references/gone.md"]
    rc, out = check(repo, capsys)
    assert rc == 0 and len(ids(out, "baselined")) == 2
    rc, out = check(repo, capsys, "--no-baseline")
    assert rc == 1
    write(repo, "skills/b/SKILL.md", skill("b", "Run `python scripts/missing.py`.\n"))
    rc, out = check(repo, capsys)
    assert rc == 1 and ids(out, "errors") == ["path-missing:skills/b/SKILL.md:scripts/missing.py"]
    write(repo, "skills/a/SKILL.md", skill("a"))  # the debt is paid: its entries are stale
    write(repo, "skills/b/SKILL.md", skill("b"))
    rc, out = check(repo, capsys)
    assert rc == 0 and len(out["stale_baseline"]) == 2


def test_a_malformed_baseline_is_refused(repo, capsys):
    write(repo, "agent-evals/skills/check-skills-baseline.json", '{"schema_version": 1, "findings": [{"id": 3}]}')
    assert main(["check-skills", "--root", str(repo)]) == 2
    assert "check-skills-baseline.json" in capsys.readouterr().err


def test_root_relative_path_is_found(repo, capsys):
    write(repo, "skills/b/visual.md", "v\n")
    write(repo, "skills/b/SKILL.md", skill("b", "If they agree, read the detailed guide before proceeding:\n"
                                                "`skills/b/visual.md`\n\nHistory: skills/b/guide.md was renamed.\n"))
    _, out = check(repo, capsys)
    errors = {f["id"]: f["message"] for f in out["errors"]}
    assert "write it relative to the skill: 'visual.md'" in errors["path-root-relative:skills/b/SKILL.md:skills/b/visual.md"]
    assert "path-root-relative:skills/b/SKILL.md:skills/b/guide.md" in ids(out, "warnings")  # named, not pointed to


def test_several_sources_in_one_config(tmp_path, capsys):
    write(tmp_path, "skill-eval.toml", SOURCES)
    write(tmp_path, "skills/.curated/one/SKILL.md", skill("one", "See [two](../two/SKILL.md).\n"))
    write(tmp_path, "skills/.curated/two/SKILL.md", skill("two"))
    write(tmp_path, "skills/.system/three/SKILL.md", skill("three", "See [one](../../.curated/one/SKILL.md).\n"))
    cfg = config.load(tmp_path)
    assert [(s.path, s.publish) for s in cfg.sources] == [("skills/.curated", "plugin"), ("skills/.system", "standalone")]
    rc, out = check(tmp_path, capsys)
    assert out["skills"] == ["one", "three", "two"]  # every source covered
    assert ids(out, "warnings") == ["link-leaves-skill:skills/.curated/one/SKILL.md:../two/SKILL.md"]  # plugin source
    assert ids(out, "errors") == ["link-leaves-skill:skills/.system/three/SKILL.md:../../.curated/one/SKILL.md"]
    assert rc == 1
    write(tmp_path, "skills/.system/two/SKILL.md", skill("two"))  # the same name in two sources
    _, out = check(tmp_path, capsys)
    assert any("must be unique across sources" in f["message"] for f in out["errors"])


@pytest.mark.parametrize("text,needle", [
    (SOURCES.replace('path = "skills/.system"', 'path = "skills/.curated"'), "listed twice"),
    (SOURCES.replace("[skills]\n", "[skills]\npublished = []\n"), "skills.published is set without skills.source"),
    ("schema_version = 1\n[skills]\nextension_keys = []\n[evals]\nroot = \"e\"\n", "skills"),
])
def test_bad_source_configs_are_refused(tmp_path, capsys, text, needle):
    write(tmp_path, "skill-eval.toml", text)
    write(tmp_path, "skills/.curated/one/SKILL.md", skill("one"))
    assert main(["check-skills", "--root", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err
