"""The scorecard over real graded bundles: the committed evidence and a synthetic multi-arm tree."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest
import scorecard_fixture as fx

from skill_eval import cli
from skill_eval.content import config
from skill_eval.content.config import Price
from skill_eval.core import schemas
from skill_eval.grading.graders import Catalog
from skill_eval.reporting import scorecard as sc
from skill_eval.reporting.scorecard import audit, html, markdown

REPO = Path(__file__).resolve().parents[3]
CHARTS = ("lift", "activation", "dimensions", "passk", "cost", "aa")


@pytest.fixture(scope="module")
def cfg():
    return config.load(REPO)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return fx.build(tmp_path_factory.mktemp("evidence") / "evidence")


@pytest.fixture(scope="module")
def compat_only(synthetic, tmp_path_factory):
    """The abi-compat-review part of the synthetic tree (keeps the recomputing tests fast)."""
    root = tmp_path_factory.mktemp("compat") / "evidence"
    shutil.copytree(synthetic / fx.COMPAT, root / fx.COMPAT)
    return root


@pytest.fixture(scope="module")
def lean(synthetic, tmp_path_factory):
    """skill-agent (+ A/A) and baseline of abi-compat-review only: LIFT, and the cost gate fails."""
    root = tmp_path_factory.mktemp("lean") / "evidence"
    for arm in ("skill-agent", "baseline"):
        shutil.copytree(synthetic / fx.COMPAT / arm, root / fx.COMPAT / arm)
    return root


@pytest.fixture(scope="module")
def card(cfg, synthetic):
    return sc.compute(cfg, synthetic).card


def lift_of(card, skill, treatment="skill-agent", control="baseline", split="main"):
    cell = next(c for c in card["cells"] if c["skill"] == skill)
    return next(e for e in cell["lift"] if (e["treatment"], e["control"], e["split"]) == (treatment, control, split))


def test_committed_evidence_scorecard_is_honest_about_what_it_lacks(cfg, tmp_path):
    """The committed skill-agent and baseline arms are scripted: every figure says so, and no lift is called
    (too few paired scenarios -> INDETERMINATE; abi-compat-review's scripted baseline answers like the
    careful agent -> NO_LIFT with a zero effect, and no A/A run is committed to calibrate anything)."""
    result = sc.compute(cfg)
    card = result.card
    schemas.validate(card, "scorecard", "scorecard.json")
    assert card["scripted"] is True and card["cells"] and all(c["scripted"] for c in card["cells"])
    lifts = [e for c in card["cells"] for e in c["lift"]]
    assert lifts and {e["verdict"] for e in lifts} <= {"INDETERMINATE", "NO_LIFT"}
    assert all(e["effect"] is None for e in lifts if e["verdict"] == "INDETERMINATE")
    assert all(e["effect"] == 0 for e in lifts if e["verdict"] == "NO_LIFT")
    assert card["activation"] and card["activation"][0]["scripted"] is True
    sc.write(card, tmp_path)
    md = (tmp_path / "scorecard.md").read_text()
    assert "**scripted**" in md and "**INDETERMINATE**" in md
    assert markdown.summary_line(card).endswith("[scripted or local-endpoint evidence]")
    assert json.loads((tmp_path / "scorecard.json").read_text()) == card


def test_synthetic_lift_verdicts(card):
    compat = lift_of(card, fx.COMPAT)
    assert compat["verdict"] == "LIFT" and compat["n_paired"] == 11
    assert compat["effect"] == pytest.approx(8 / 11, abs=1e-6)
    assert compat["sign_test"] == {"wins": 8, "losses": 0, "ties": 3, "p": 2 / 2**8}
    assert compat["calibrated"] and compat["calibration_arm"] == "skill-agent" and compat["noise_floor"] == 0
    docs = lift_of(card, fx.COMPAT, "skill", "docs")
    assert docs["verdict"] == "LIFT" and docs["effect"] == pytest.approx(7 / 11, abs=1e-6)
    aa = next(c for c in card["cells"] if c["skill"] == fx.COMPAT)["aa"]
    assert aa == [{"arm": "skill-agent", "n_paired": 11, "false_difference_rate": 0.0, "noise_floor": 0.0, "sign_p": 1.0,
                   "status": "ok", "reason": ""}]


def test_infra_error_heavy_cell_is_error(card):
    matrix = lift_of(card, fx.MATRIX)
    assert matrix["verdict"] == "ERROR" and matrix["effect"] is None and "infra errors" in matrix["reason"]
    arm = next(c for c in card["cells"] if c["skill"] == fx.MATRIX)["arms"]["baseline"]
    assert arm["status"] == "error" and arm["outcomes"]["infra_error"] == 4 and arm["infra_error_rate"] == pytest.approx(4 / 9, abs=1e-6)


def test_contaminated_baseline_bundle_fails_its_comparison(card):
    consumer = lift_of(card, fx.CONSUMER)
    assert consumer["verdict"] == "ERROR" and "contaminated" in consumer["reason"]
    bad = "abi-consumer-impact/baseline/claude-code-scripted/consumer-addition-evidence-free/0"
    assert bad in card["contaminated"]
    assert "installed the skill under test" in card["contaminated"][bad][0]
    assert len(card["contaminated"]) == 1  # the stripped baselines are clean


def test_cost_gate_fails_with_the_numbers(card, cfg, lean):
    gate = card["gates"]["cost_regression"]
    assert not gate["passed"]
    assert gate["problems"] == ["cost regression: abi-compat-review claude-code/scripted: skill-agent $0.0031/run vs "
                                "baseline $0.0020/run (+54.5% > 10%; sources reported/reported)"]
    looser = dataclasses.replace(cfg, thresholds=dataclasses.replace(cfg.thresholds, cost_regression=0.6))
    assert sc.compute(looser, lean).card["gates"]["cost_regression"]["passed"]


def test_cost_sources_are_labelled_and_the_price_table_fills_gaps(card, cfg, compat_only):
    arms = next(c for c in card["cells"] if c["skill"] == fx.COMPAT)["arms"]
    assert arms["skill-agent"]["cost"]["source"] == "reported"
    assert arms["docs"]["cost"]["source"] == "unknown" and arms["docs"]["cost"]["usd_per_resolved"] is None
    resolved = arms["skill-agent"]["cost"]["resolved"]
    assert resolved == 33 and arms["skill-agent"]["cost"]["usd_per_resolved"] == pytest.approx(
        arms["skill-agent"]["cost"]["total_usd"] / resolved, abs=1e-6)
    model = json.loads(next((compat_only / fx.COMPAT / "docs").rglob("meta.json")).read_text())["model"]
    priced = dataclasses.replace(cfg, prices={model: Price(input_per_mtok=3.0, output_per_mtok=15.0)})
    docs = next(c for c in sc.compute(priced, compat_only).card["cells"] if c["skill"] == fx.COMPAT)["arms"]["docs"]["cost"]
    assert docs["source"] == "price_table"
    expected = (docs["mean_tokens_in"] * 3.0 + docs["mean_tokens_out"] * 15.0) / 1e6
    assert docs["mean_usd_per_run"] == pytest.approx(expected, rel=1e-4)


def test_dimensions_pass_k_and_activation(card):
    arm = next(c for c in card["cells"] if c["skill"] == fx.COMPAT)["arms"]["skill-agent"]
    assert arm["dimensions"]["2"] == {"passed": 33, "total": 33, "not_judged": 0, "rate": 1.0}
    assert arm["dimensions"]["4"]["rate"] is None and arm["dimensions"]["4"]["not_judged"] == 33
    assert arm["pass_k"]["6"] == {"k": 3, "passed": 11, "scenarios": 11, "rate": 1.0, "short": 0}
    base = next(c for c in card["cells"] if c["skill"] == fx.COMPAT)["arms"]["baseline"]
    assert base["pass_rate"] == pytest.approx(9 / 33, abs=1e-6)
    act = card["activation"][0]
    assert act["precision"] == 1.0 and act["recall"] == 1.0 and act["per_skill"][fx.COMPAT]["tiers"] == ["1"]


def test_audit_flags_saturated_baseline_scenarios(card):
    flagged = {f["scenario"]: f["flags"] for f in card["audit"]["flagged"] if f["skill"] == fx.COMPAT}
    passing = set(fx.scenarios_of(sorted((fx.EVIDENCE / fx.COMPAT / "skill-agent" / fx.RUN).glob("*/0"))) [8:])
    assert set(flagged) == passing and all(v == ["baseline_saturated"] for v in flagged.values())


def test_audit_fails_everywhere_and_leakage():
    skill_text = "Run the comparison over both binaries and report the verdict exactly as the JSON report states it."
    infos = [audit.ScenarioInfo("leaky", "s", "Please run the comparison over both binaries and report the verdict exactly."),
             audit.ScenarioInfo("honest", "s", "Is my new build of libfoo safe to ship to users?"),
             audit.ScenarioInfo("broken", "s", "Compare these.", holdout=True)]

    @dataclasses.dataclass
    class R:
        item: str
        arm: str
        passed: bool | None
        kind: str = "behavioral"
        replicate: str = "main"

    runs = [R("broken", "skill-agent", False), R("broken", "baseline", False), R("broken", "baseline", None),
            R("honest", "skill-agent", True), R("honest", "baseline", False)]
    out = audit.audit(infos, runs, {"s": skill_text})
    flags = {f["scenario"]: f["flags"] for f in out["flagged"]}
    assert flags == {"broken": ["fails_everywhere"], "leaky": ["prompt_leakage"]}
    assert out["holdout"] == ["broken"]
    assert audit.leaked("report the verdict", skill_text) == []  # short overlaps are ordinary phrasing


def test_committed_scenarios_do_not_quote_their_skills(cfg):
    catalog = Catalog(cfg)
    for s in catalog.scenarios.values():
        text = audit.skill_text(cfg.root / cfg.skills_source / s.skill)
        assert text and audit.leaked(s.prompt, text) == [], s.id


def test_holdout_scenarios_are_reported_separately(cfg, lean):
    catalog = Catalog(cfg)
    held = fx.scenarios_of(sorted((fx.EVIDENCE / fx.COMPAT / "skill-agent" / fx.RUN).glob("*/0")))[:3]
    for sid in held:
        catalog.scenarios[sid] = dataclasses.replace(catalog.scenarios[sid], holdout=True)
    card = sc.compute(cfg, lean, catalog=catalog).card
    main, hold = lift_of(card, fx.COMPAT), lift_of(card, fx.COMPAT, split="holdout")
    assert main["n_paired"] == 8 and hold["n_paired"] == 3
    assert hold["verdict"] == "INDETERMINATE" and hold["effect"] is None
    assert card["audit"]["holdout"] == sorted(held)


def test_markdown_and_html_say_the_word_instead_of_a_number(card):
    md = markdown.render(card)
    row = next(line for line in md.splitlines() if line.startswith(f"| {fx.MATRIX} ") and "vs baseline" in line)
    assert "**ERROR**" in row and "| — |" in row
    assert "+0.73 [" in md and "**scripted**" in md
    page = html.render(card)
    for chart in CHARTS:
        assert f'data-chart="{chart}"' in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert "<script" not in page and "default-src 'none'" in page


def test_unreadable_bundle_is_a_listed_problem_not_a_crash(cfg, synthetic, tmp_path):
    root = tmp_path / "evidence"
    shutil.copytree(synthetic / fx.MATRIX, root / fx.MATRIX)
    victim = next(root.rglob("meta.json"))
    victim.write_text("{not json")
    card = sc.compute(cfg, root).card
    assert len(card["problems"]) == 1 and "meta.json" in card["problems"][0]
    assert card["bundles"] == len(list(root.rglob("meta.json")))


def test_scorecard_and_lift_commands(synthetic, lean, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["scorecard", "--root", str(REPO), "--evidence", str(lean), "--out", str(out)]
    # the lean evidence fails the cost gate: a printed FAIL exits 1 (issue 28 item 6), files still written
    assert cli.main(args) == 1
    assert sorted(p.name for p in out.iterdir()) == ["scorecard.html", "scorecard.json", "scorecard.md"]
    assert "FAIL cost regression" in capsys.readouterr().out
    assert cli.main([*args, "--gate"]) == 1  # the old spelling still gates
    capsys.readouterr()
    assert cli.main([*args, "--report-only"]) == 0
    assert "report only" in capsys.readouterr().out
    assert cli.main(["lift", "--root", str(REPO), "--evidence", str(lean), "--json", "--require-lift"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [(r["skill"], r["verdict"]) for r in payload["lift"]] == [(fx.COMPAT, "LIFT")]
    matrix = tmp_path / "matrix"
    shutil.copytree(synthetic / fx.MATRIX, matrix / fx.MATRIX)
    assert cli.main(["lift", "--root", str(REPO), "--evidence", str(matrix), "--require-lift"]) == 1
    assert "ERROR" in capsys.readouterr().out


def test_mixed_cards_tag_every_scripted_row(card):
    mixed = json.loads(json.dumps(card))
    mixed["cells"][0]["scripted"] = False
    mixed["cells"][0]["model"] = "real-model-1"
    page = html.render(mixed)
    first, second = (f"{c['skill']} · {c['agent']}/{c['model']}" for c in mixed["cells"][:2])  # every row names its cell
    assert f"{second} · skill-agent vs baseline · main · SCRIPTED" in page
    assert f"{first} · skill-agent vs baseline · main · SCRIPTED" not in page
    assert f"{first} · skill-agent vs baseline · main" in page


def test_recorded_text_cannot_inject_markdown_into_the_pr_comment(card):
    hostile = json.loads(json.dumps(card))
    evil = "baseline agent's tool call '[x](https://evil.example)|<img src=x>' names\nSKILL.md"
    hostile["cells"][0]["lift"][0]["reason"] = evil
    hostile["contaminated"] = {"a/b": [evil]}
    md = markdown.render(hostile)
    assert re.search(r"(?<!\\)<img", md) is None and re.search(r"(?<!\\)\[x", md) is None
    row = next(line for line in md.splitlines() if "evil.example" in line and line.startswith("|"))
    assert row.count(" | ") == 9  # still exactly ten columns: the | in the text was escaped
    assert "\\[x\\](https://evil.example)\\|\\<img" in md


def test_scorecard_is_reproducible(cfg, lean):
    first, second = sc.compute(cfg, lean).card, sc.compute(cfg, lean).card
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_an_unusable_treatment_aa_falls_back_to_another_arms_floor():
    from skill_eval.reporting import lift
    from skill_eval.reporting.scorecard import build as build_mod
    from skill_eval.reporting.scorecard.runs import RunRecord

    def rec(arm, item, passed):
        return RunRecord(path=f"{arm}/{item}", kind="behavioral", skill="s", arm=arm, replicate="main", agent="a",
                         model="m", scripted=False, item=item, k=0, outcome="completed", passed=passed)

    by_arm = {"skill": [rec("skill", f"x{i}", True) for i in range(8)], "docs": [rec("docs", f"x{i}", False) for i in range(8)]}
    cals = {"skill": lift.Calibration("skill", 2, None, None, None, lift.INDETERMINATE, "2 paired"),
            "skill-agent": lift.Calibration("skill-agent", 8, 0.0, 0.0, 1.0, "ok")}
    (entry,) = build_mod.cell_lifts(by_arm, cals, lift.Settings())
    assert entry["verdict"] == "LIFT" and entry["calibration_arm"] == "skill-agent"


def test_cross_agent_agreement_names_scenarios_that_pass_on_one_agent_and_fail_on_another(tmp_path):
    from skill_eval.reporting import lift
    from skill_eval.reporting.scorecard import build as build_mod
    from skill_eval.reporting.scorecard.runs import RunRecord

    def rec(agent, item, k, passed):
        return RunRecord(path=f"{agent}/{item}/{k}", kind="behavioral", skill="s", arm="skill-agent", replicate="main",
                         agent=agent, model="scripted", scripted=True, item=item, k=k, outcome="completed", passed=passed)

    records = [rec("claude-code", "same", k, True) for k in range(3)] + [rec("codex", "same", k, True) for k in range(3)]
    records += [rec("claude-code", "split", k, True) for k in range(3)] + [rec("codex", "split", k, k != 1) for k in range(3)]
    records += [rec("claude-code", "alone", k, False) for k in range(3)]  # one cell only: nothing to compare
    agr = build_mod.agreement(records)
    assert agr["cells"] == ["claude-code/scripted", "codex/scripted"] and agr["compared"] == 2
    assert agr["disagree"] == [{"skill": "s", "arm": "skill-agent", "scenario": "split",
                                "cells": {"claude-code/scripted": "pass", "codex/scripted": "fail"}}]
    card = build_mod.build(records, lift.Settings(), k=3, cost_regression=0.25,
                           audit={"ngram": 8, "flagged": [], "holdout": []})
    schemas.validate(card, "scorecard", "scorecard.json")
    md = markdown.render(card)
    assert "2 scenario(s) recorded in more than one cell" in md and "| s | skill-agent | split | pass | fail |" in md
    assert 'id="agreement-table"' in html.render(card) and ">split<" in html.render(card)
