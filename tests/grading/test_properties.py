"""Property tests: graders never raise, greener-than-cited claims always fail 6, removing a
cited call always fails 6 or 3, no claim is greener than any call over the pair (cited or
not), and a tampered side input always voids the evidence."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_graders_helpers import bundle, claim, compare, grade, make_repo

from skill_eval.grading.graders import Catalog

VERDICTS = ["NO_CHANGE", "COMPATIBLE", "COMPATIBLE_WITH_RISK", "API_BREAK", "BREAKING"]
FILES = ["meta.json", "calls.jsonl", "events.jsonl", "final.md", "claim.json", "usage.json", "judgments.json",
         "captured/1.out.d/0/r.json", "captured/1.err", "facts.json"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    cfg = make_repo(tmp_path_factory.mktemp("repo"))
    cat = Catalog(cfg)
    cat.coverage_path = "contract_coverage_failures"
    base = tmp_path_factory.mktemp("base")
    good = bundle(cfg, base, "breaking", [compare("BREAKING")], claim("BREAKING"),
                  judgments={"schema_version": 1, "judgments": []})
    return cfg, cat, good


def fresh_copy(good: Path) -> Path:
    dest = Path(tempfile.mkdtemp()) / "b"
    shutil.copytree(good, dest)
    return dest


@SETTINGS
@given(edits=st.lists(st.tuples(st.sampled_from(FILES),
                                st.one_of(st.integers(min_value=0, max_value=400), st.binary(max_size=200),
                                          st.text(max_size=120).map(str.encode),
                                          st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                                                       lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                                                       max_leaves=8).map(lambda v: json.dumps(v).encode()))),
                      min_size=1, max_size=4))
def test_graders_never_raise_on_truncated_or_arbitrary_content(env, edits):
    cfg, cat, good = env
    path = fresh_copy(good)
    for name, edit in edits:
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = target.read_bytes() if target.exists() else b""
        target.write_bytes(data[:edit] if isinstance(edit, int) else edit)
    g = grade(cfg, path, cat)
    assert isinstance(g.failures(), list)
    json.dumps(g.to_json())
    shutil.rmtree(path.parent)


@SETTINGS
@given(cited=st.sampled_from(VERDICTS), data=st.data())
def test_claim_greener_than_cited_artifact_fails_6(env, cited, data):
    cfg, cat, _ = env
    greener = [v for v in VERDICTS if VERDICTS.index(v) < VERDICTS.index(cited)]
    if not greener:
        return
    claimed = data.draw(st.sampled_from(greener))
    confident = data.draw(st.booleans())
    kind = data.draw(st.sampled_from(["not_comparable", "evidence_too_shallow", "matrix_target_unrun", "contract_coverage_incomplete"]))
    scenario = data.draw(st.sampled_from(["breaking", "compatible", "api-break", "coverage", "consumer"]))
    c = claim(claimed, confident=confident, kind=kind, unresolved=["u"])
    tmp = Path(tempfile.mkdtemp())
    g = grade(cfg, bundle(cfg, tmp, scenario, [compare(cited)], c), cat)
    assert 6 in g.failed_dimensions(), (cited, claimed, confident, kind, scenario)
    shutil.rmtree(tmp)


@SETTINGS
@given(n=st.integers(min_value=1, max_value=4), data=st.data())
def test_removing_a_cited_call_fails_6_or_3(env, n, data):
    cfg, cat, _ = env
    cited = data.draw(st.lists(st.integers(min_value=1, max_value=n), min_size=1, unique=True))
    victim = data.draw(st.sampled_from(cited))
    renumber = data.draw(st.booleans())
    calls = [compare("BREAKING", dest=f"r{i}.json") for i in range(n)]
    tmp = Path(tempfile.mkdtemp())
    path = bundle(cfg, tmp, "breaking", calls, claim("BREAKING", evidence=tuple(cited)))
    lines = [json.loads(line) for line in (path / "calls.jsonl").read_text().splitlines()]
    kept = [rec for rec in lines if rec["call"] != victim]
    if renumber:
        for i, rec in enumerate(kept, start=1):
            rec["call"] = i
    (path / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    g = grade(cfg, path, cat)
    assert {3, 6} & set(g.failed_dimensions()), (n, cited, victim, renumber, g.failures())
    shutil.rmtree(tmp)


@SETTINGS
@given(verdicts=st.lists(st.sampled_from(VERDICTS), min_size=1, max_size=4), data=st.data())
def test_claim_greener_than_any_call_over_the_pair_fails_6(env, verdicts, data):
    """Citing selectively cannot hide the most severe comparison of the pair anywhere in the run."""
    cfg, cat, _ = env
    cited = data.draw(st.lists(st.integers(min_value=1, max_value=len(verdicts)), min_size=1, unique=True))
    claimed = max((verdicts[i - 1] for i in cited), key=VERDICTS.index)
    calls = [compare(v, dest=f"r{i}.json") for i, v in enumerate(verdicts)]
    tmp = Path(tempfile.mkdtemp())
    g = grade(cfg, bundle(cfg, tmp, "breaking", calls, claim(claimed, evidence=tuple(cited))), cat)
    if VERDICTS.index(claimed) < VERDICTS.index(max(verdicts, key=VERDICTS.index)):
        assert 6 in g.failed_dimensions(), (verdicts, cited, g.failures())
    shutil.rmtree(tmp)


@SETTINGS
@given(side=st.sampled_from([0, 1]), change=st.sampled_from(["sha", "stable", "drop", "null"]))
def test_any_tampered_side_input_voids_the_evidence(env, side, change):
    """A side whose runner digest is not the fixture's (or unstable, or unrecorded) never grades 3 and 6 clean."""
    cfg, cat, _ = env
    call = compare("BREAKING")
    entry = call.inputs[side]
    if change == "sha":
        entry["sha256"] = "0" * 64
    elif change == "stable":
        entry["stable"] = False
    elif change == "drop":
        call.inputs.pop(side)
    else:
        call.inputs = None
    tmp = Path(tempfile.mkdtemp())
    g = grade(cfg, bundle(cfg, tmp, "breaking", [call], claim("BREAKING")), cat)
    assert {3, 6} <= set(g.failed_dimensions()), (side, change, g.failures())
    shutil.rmtree(tmp)
