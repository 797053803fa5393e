"""L4: the committed golden corpus proves every grader rule can fail.

Each golden bundle must fail exactly its manifest's expected set; disabling any single
grader rule (monkeypatched to report nothing) must make the golden check notice.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval.content import config
from skill_eval.grading import golden
from skill_eval.grading.graders import Catalog, artifacts, claims, uncertainty, workflow

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "agent-evals" / "skills" / "golden"
pytestmark = pytest.mark.skipif(not (GOLDEN / "manifest.yaml").is_file(), reason="golden corpus not generated")


@pytest.fixture(scope="module")
def cfg():
    return config.load(REPO)


@pytest.fixture(scope="module")
def catalog(cfg):
    return Catalog(cfg)


def mismatches(cfg, catalog):
    outcomes, problems = golden.check(cfg, catalog)
    return [o.entry.id for o in outcomes if not o.ok] + problems


def test_every_golden_bundle_fails_exactly_its_expected_set(cfg, catalog):
    outcomes, problems = golden.check(cfg, catalog)
    assert problems == []
    bad = {o.entry.id: (list(o.entry.expected), o.actual) for o in outcomes if not o.ok}
    assert bad == {}
    assert sum(not o.entry.good for o in outcomes) >= 20 and sum(o.entry.good for o in outcomes) >= 10


def test_corpus_covers_the_required_classes(cfg):
    entries = {e.id: e for e in golden.load_manifest(cfg)}
    kinds = {"not_comparable", "evidence_too_shallow", "matrix_target_unrun", "contract_coverage_incomplete"}
    good_scenarios = set()
    for e in entries.values():
        if e.good:
            good_scenarios.add(e.id)
    assert {"good-not-comparable", "good-stripped-layout", "good-matrix-missing-target", "good-contract-coverage"} <= good_scenarios
    assert len(kinds) == 4
    primaries = {e.primary for e in entries.values() if not e.good}
    assert {1, 2, 3, 4, 6, "activation", "oracle"} <= primaries


ZERO_TOLERANCE_RULES = [(uncertainty, r) for r in uncertainty.DIM2_RULES] + [(claims, r) for r in claims.DIM6_RULES]
BASELINE_RULES = [(workflow, r) for r in workflow.DIM1_RULES + workflow.DIM3_RULES]
# Why a call carries no evidence at all (killed, unfinished, no or unstable input digests).
CALL_RULES = [(artifacts, r) for r in artifacts.CALL_RULES]


@pytest.mark.parametrize("module,rule", ZERO_TOLERANCE_RULES + BASELINE_RULES + CALL_RULES,
                         ids=lambda x: getattr(x, "__name__", x))
def test_disabling_any_rule_is_caught(cfg, catalog, monkeypatch, module, rule):
    monkeypatch.setattr(module, rule, lambda run: [])
    assert mismatches(cfg, catalog), f"golden corpus does not notice {rule} being disabled"


def test_input_digests_decide_the_pair(cfg, catalog, monkeypatch):
    """Matching a report without sides to the fixture by argv path alone (the old rule) is caught."""
    from skill_eval.grading.graders import artifacts as arts

    real = arts.pair_mismatch

    def argv_only(art, old_sha, new_sha, old_rel, new_rel):
        if art.sides is None:
            ops = {arts.norm(art.call.cwd, t) for t in art.call.argv[1:] if not t.startswith("-")}
            return None if old_rel in ops and new_rel in ops else "not named"
        return real(art, old_sha, new_sha, old_rel, new_rel)

    monkeypatch.setattr(arts, "pair_mismatch", argv_only)
    monkeypatch.setattr("skill_eval.grading.graders.context.pair_mismatch", argv_only)
    # fixture_inputs_intact also refuses the swapped sides (defence in depth): disable both.
    monkeypatch.setattr("skill_eval.grading.graders.context.fixture_inputs_intact", lambda art, sha: [])
    assert "bad-inputs-swapped-not-comparable" in mismatches(cfg, catalog)


def test_edited_fixture_inputs_are_caught(cfg, catalog, monkeypatch):
    """An edited scoping list (not a side) is refused by fixture_inputs_intact alone."""
    monkeypatch.setattr("skill_eval.grading.graders.context.fixture_inputs_intact", lambda art, sha: [])
    assert mismatches(cfg, catalog) == ["bad-scoping-list-edited"]


def test_tier2_activation_is_caught_for_trigger_bundles(cfg, catalog):
    outcomes, _ = golden.check(cfg, catalog)
    got = {o.entry.id: o for o in outcomes}
    assert got["bad-trigger-activation-by-read"].actual == ["activation"]
    assert any("tier-2" in r for r in got["bad-trigger-activation-by-read"].reasons["activation"])


def test_disabling_judged_replay_or_oracles_is_caught(cfg, catalog, monkeypatch):
    from skill_eval.grading import oracles
    from skill_eval.grading.graders import judged

    monkeypatch.setattr(judged, "replay", lambda *a: ("pass", []))
    assert "bad-judged-failure" in mismatches(cfg, catalog)
    monkeypatch.undo()
    monkeypatch.setattr(oracles, "grade", lambda b, s, *_: ("not_applicable", [], {}))
    assert "bad-oracle-missing-action" in mismatches(cfg, catalog)


def test_reading_the_requested_path_instead_of_the_snapshot_is_caught(cfg, catalog, monkeypatch):
    """A grader that read the final file at the requested path would grade call 1 on call 2's report."""
    from skill_eval.grading.graders import artifacts

    real = artifacts._report_bytes

    def latest_write(bundle, call, subject):
        datas, problems = real(bundle, call, subject)
        later = [c for c in bundle.calls if c.call > call.call and any(o.requested == p.requested for o in c.outputs for p in call.outputs)]
        return (real(bundle, later[-1], subject)[0] if later else datas), problems

    monkeypatch.setattr(artifacts, "_report_bytes", latest_write)
    bad = mismatches(cfg, catalog)
    # The good bundle (claim rests on call 1, whose path call 2 overwrote) would then fail; the bad
    # one still fails either way because call 1's exit code contradicts the later report.
    assert "good-overwritten-path-cites-call-1" in bad


def test_unlisted_and_missing_bundles_are_reported(cfg, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "evidence", "*.pyc"))
    g = root / "agent-evals" / "skills" / "golden"
    shutil.copytree(g / "good-removed-export", g / "stray-bundle")
    shutil.rmtree(g / "bad-no-envelope")
    outcomes, problems = golden.check(config.load(root))
    assert any("stray-bundle is a bundle not listed" in p for p in problems)
    assert any("bad-no-envelope" in p for p in problems)


def test_manifest_rejects_a_good_bundle_with_failures(cfg, tmp_path, monkeypatch):
    text = (GOLDEN / "manifest.yaml").read_text().replace("good: true\n  expected_failures: []", "good: true\n  expected_failures: [6]", 1)
    fake = tmp_path / "golden"
    fake.mkdir()
    (fake / "manifest.yaml").write_text(text)
    monkeypatch.setattr(golden, "golden_dir", lambda c: fake)
    with pytest.raises(Exception, match="good bundle must expect no failures"):
        golden.load_manifest(cfg)


GRADING_MODULES = ["content/claim", *(p.relative_to(REPO / "src/skill_eval").with_suffix("").as_posix()
                                       for p in sorted((REPO / "src/skill_eval/grading").rglob("*.py")))]


@pytest.mark.parametrize("mod", GRADING_MODULES)
def test_graders_never_import_the_subject(mod, cfg):
    path = REPO / "src" / "skill_eval" / f"{mod}.py"
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("import_module", "__import__"):
            names |= {a.value.split(".")[0] for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    assert cfg.subject.name not in names and (cfg.subject.package or "") not in names
    assert "subprocess" not in names or mod == "evidence"


def test_grading_the_corpus_loads_no_subject_module():
    code = ("import sys; from skill_eval.content import config; from skill_eval.grading import golden; cfg = config.load(); golden.check(cfg); "
            "bad = [m for m in sys.modules if m.split('.')[0] == 'abicheck']; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_corpus_holds_when_the_profile_names_a_coverage_path(cfg):
    """Once subject.report gains coverage_path, coverage is read from the artifacts, not the scenario."""
    cat = Catalog(cfg)
    cat.coverage_path = "contract_coverage_failures"
    assert mismatches(cfg, cat) == []
