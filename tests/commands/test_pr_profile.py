"""Issue acceptance: `skill-eval pr` (what `nox -s pr` runs) exits 1 naming the cause for each
way the committed state can go wrong, and passes on the untouched repository."""

import json
import shutil

import pytest

from skill_eval.cli import main

SKIP = ["--skip", "surface"]  # the surface drift step runs the subject ~14 times; tested on its own


def run_pr(root, capsys):
    rc = main(["pr", "--root", str(root), *SKIP])
    return rc, capsys.readouterr().out


def test_untouched_repository_passes(repo_copy, capsys):
    rc, out = run_pr(repo_copy, capsys)
    assert rc == 0, out
    assert "pr: ok" in out
    # the committed evidence is scripted: the summary line says so (issue 10), with the count
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("pr: ok") and "bundles recorded with SCRIPTED model turns" in summary, summary


def test_summary_line_says_nothing_of_scripts_when_no_evidence_is_scripted(repo_copy, capsys):
    for meta in (repo_copy / "agent-evals/skills/evidence").rglob("meta.json"):
        data = json.loads(meta.read_text())
        data["scripted"] = False
        data["extra"]["model_source"] = "remote:api.anthropic.com"  # neither scripted nor a local endpoint
        meta.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    rc, out = run_pr(repo_copy, capsys)  # (the edits break every seal: pr fails, the label is what is checked)
    assert "SCRIPTED" not in out.strip().splitlines()[-1] and "forged:" in out


def edit(root, rel, fn):
    p = root / rel
    p.write_text(fn(p.read_text()))


def _stale_bundle(root):
    from skill_eval.content import config, freshness

    cfg = config.load(root)
    cur = freshness.current(cfg)
    meta = {
        "schema_version": 1, "kind": "behavioral", "scenario": "review-removed-export", "skill": "abi-compat-review",
        "arm": "skill-agent", "run_id": "synthetic", "k": 0, "agent": {"name": "scripted", "version": "0"},
        "model": "scripted:" + "0" * 64, "adapter_tier": "1", "runner_version": "0", "started_at": "t",
        "finished_at": "t", "status": "complete", "observed_inputs": [],
        "digests": {"skill:abi-compat-review": "0" * 64, "scenario:review-removed-export": cur.digest("scenario:review-removed-export"),
                    "harness": cur.digest("harness"), "surface": cur.digest("surface")},
    }
    b = root / "agent-evals/skills/evidence/abi-compat-review/skill-agent/synthetic/review-removed-export/0"
    b.mkdir(parents=True)
    (b / "meta.json").write_text(json.dumps(meta))


MUTATIONS = {
    "hand-edited pack": (
        lambda r: edit(r, "agent-evals/skills/skill-eval-pack.json", _hand_edit_pack),
        ["digest does not match its inputs (hand-edited?)"],
    ),
    "SKILL.md edit without pack": (
        lambda r: (edit(r, "skills-src/abi-release-matrix/SKILL.md", lambda t: t + "\nOne more line.\n"), main(["generate", "--root", str(r)])),
        ["skill:abi-release-matrix: inputs moved"],
    ),
    "shared fragment edit": (
        lambda r: (edit(r, "skills-src/shared/evidence-depth.md", lambda t: t + "\nEdited.\n"), main(["generate", "--root", str(r)])),
        ["skill:abi-compat-review: inputs moved", "skill:abi-release-matrix: inputs moved"],
    ),
    "fixture byte changed": (
        lambda r: _flip_byte(r / "agent-evals/skills/fixtures/removed-export/new/libdemo.so.1"),
        ["agent-evals/skills/fixtures/removed-export"],
    ),
    "frontmatter violation": (
        lambda r: (edit(r, "skills-src/abi-consumer-impact/SKILL.md", lambda t: t.replace("name: abi-consumer-impact", "name: Abi_Consumer", 1)), main(["generate", "--root", str(r)])),
        ["must be lowercase"],
    ),
    "broken relative link": (
        lambda r: (edit(r, "skills-src/abi-compat-review/SKILL.md", lambda t: t + "\nSee [gone](references/gone.md).\n"), main(["generate", "--root", str(r)])),
        ["broken relative link 'references/gone.md'"],
    ),
    "flag abicheck lacks": (
        lambda r: (edit(r, "skills-src/abi-compat-review/SKILL.md", lambda t: t + "\n```bash\nabicheck compare old.so new.so --output-dir out/\n```\n"), main(["generate", "--root", str(r)])),
        ["abicheck compare has no option --output-dir"],
    ),
    "published copy drift": (
        lambda r: edit(r, ".claude/skills/abi-release-matrix/SKILL.md", lambda t: t + "drift\n"),
        [".claude/skills/abi-release-matrix/SKILL.md: differs from its source"],
    ),
    "stale bundle": (_stale_bundle, ["(moved: skill:abi-compat-review)"]),
}


def _hand_edit_pack(text):
    d = json.loads(text)
    d["entries"]["skill:abi-compat-review"]["digest"] = "f" * 64
    return json.dumps(d, indent=2, sort_keys=True) + "\n"


def _flip_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_pr_fails_naming_the_cause(repo_copy, capsys, name):
    mutate, needles = MUTATIONS[name]
    mutate(repo_copy)
    capsys.readouterr()
    rc, out = run_pr(repo_copy, capsys)
    assert rc == 1, out
    for needle in needles:
        assert needle in out, (name, out)


def test_shared_fragment_names_exactly_citing_skills(repo_copy, capsys):
    edit(repo_copy, "skills-src/shared/evidence-depth.md", lambda t: t + "\nEdited.\n")
    main(["generate", "--root", str(repo_copy)])
    capsys.readouterr()
    assert main(["pack", "--check", "--root", str(repo_copy), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    skills = sorted(p.split(":")[1] for p in out["problems"] if p.startswith("skill:"))
    assert skills == ["abi-compat-review", "abi-release-matrix"]  # not abi-consumer-impact


def test_scenario_referencing_missing_fixture(repo_copy, capsys):
    shutil.rmtree(repo_copy / "agent-evals/skills/fixtures/enum-value")
    rc = main(["pr", "--root", str(repo_copy), *SKIP])
    captured = capsys.readouterr()
    assert rc in (1, 2)
    assert "fixtures/enum-value/ is missing" in captured.out + captured.err


def test_skill_edit_without_new_evidence_names_skill_and_what_to_run(repo_copy, capsys):
    """The freshness gate the seed calls the one that matters: pack regenerated, evidence not."""
    edit(repo_copy, "skills-src/abi-consumer-impact/SKILL.md", lambda t: t + "\nA changed instruction.\n")
    assert main(["generate", "--root", str(repo_copy)]) == 0
    assert main(["pack", "--root", str(repo_copy)]) == 0
    capsys.readouterr()
    rc, out = run_pr(repo_copy, capsys)
    assert rc == 1
    assert "pack ok" in out and "freshness fail" in out and "evidence fail" in out
    assert "fix: re-record the evidence of abi-consumer-impact, trigger: `make eval-risk`" in out  # the fix first
    assert "(moved: skill:abi-consumer-impact)" in out
    assert "skill:abi-compat-review" not in out  # other skills keep their evidence
    stale_part = out.split("== freshness", 1)[1].splitlines()  # the freshness and evidence sections
    assert len(stale_part) < 30, stale_part  # one summary per skill, not a per-bundle wall
