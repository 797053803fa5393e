"""scorecard.json -> scorecard.md, short enough for a pull-request comment.

Reads only the scorecard object. A figure from scripted model turns carries **scripted**; an
INDETERMINATE or ERROR lift shows the word and its reason, never a number.
"""

from __future__ import annotations

from typing import Any

SCRIPTED = "**scripted**"


def esc(text: object) -> str:
    """Free text for a PR comment: recorded strings (tool ids, paths, reasons) may come from the agent
    under test, so Markdown/HTML syntax is neutralised and the text stays on one table row."""
    out = " ".join(str(text).split())
    for ch in "\\`*_[]<>|#!":
        out = out.replace(ch, "\\" + ch)
    return out


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def usd(x: float | None) -> str:
    return "—" if x is None else f"${x:.4f}"


def num(x: float | None, fmt: str = ".1f") -> str:
    return "—" if x is None else format(x, fmt)


def who(cell: dict[str, Any]) -> str:
    tag = f" {SCRIPTED}" if cell.get("scripted") else ""
    return f"{cell['agent']} / {cell['model']}{tag}"


def lift_figure(entry: dict[str, Any]) -> str:
    """The effect as text: a number with its CI, or the verdict word when there is no number."""
    if entry["effect"] is None:
        return "—"
    lo, hi = entry["ci"]
    return f"{entry['effect']:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def calibration_lines(cal: dict[str, Any] | None) -> list[str]:
    """The committed local-model A/A calibration: its measured noise, labelled with its model and state."""
    if not cal:
        return []
    label = {"ok": "current", "stale calibration": "**stale calibration**", "inconclusive": "**INCONCLUSIVE**",
             "invalid": "**invalid**"}[cal["status"]]
    out = ["", f"#### Local-model calibration ({label}; `{cal['kind']}`, model {esc(cal['model'])}, scripted: "
               f"{str(cal['scripted']).lower()}, recorded {esc(cal['recorded_at'])})", ""]
    if cal["status"] == "stale calibration":
        out.append(f"{cal['stale']['bundles']} of {cal['bundles']} calibration bundles were recorded against older content "
                   f"(e.g. {esc(cal['stale']['examples'][0])}); re-record with `{cal['command']}`.")
    out += [f"- problem: {esc(p)}" for p in cal["problems"][:5]]
    for c in cal["cells"]:
        x = c["calibration"]
        fig = (f"false-difference rate {pct(x['false_difference_rate'])}, noise floor {num(x['noise_floor'], '.2f')} "
               f"({x['n_paired']} paired)") if x["status"] == "ok" else f"**{x['status']}**: {esc(x['reason'])}"
        lift = c["lift_on_aa"]
        calls = f"; lift on A/A: {lift['false_calls']} false call(s) in {lift['seeds']} seeds x {len(lift['questions'])} questions" if lift else ""
        checks = ", ".join(f"{k} {pct(v['false_difference_rate'])}" for k, v in c["checks"].items())
        out.append(f"- {c['skill']} {c['agent']} / {c['model']} [{c['arm']}, runs {c['runs']['main']}+{c['runs']['aa']}]: {fig}{calls}")
        out.append(f"  - per-check false-difference rate: {checks or '—'}; mean {num(c['mean_wall_clock_s'])} s/run")
    if cal["status"] == "inconclusive":
        out.append("- INCONCLUSIVE: most calibration runs never finished (budget_stop, no final answer, or no subject call "
                   "and no claim), so the two recordings agree only because both stopped before the question; "
                   "no false-difference rate or noise floor is shown.")
    out.append("- This floor measures the pipeline's noise with a small local model; it is not applied to other models' lift.")
    return out


def summary_line(card: dict[str, Any]) -> str:
    """One line for the `pr` summary: verdict counts, gate, and the scripted label."""
    verdicts: dict[str, int] = {}
    for cell in card["cells"]:
        for e in cell["lift"]:
            if e["split"] == "main":
                verdicts[e["verdict"]] = verdicts.get(e["verdict"], 0) + 1
    counts = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())) or "no lift comparisons"
    gate = "cost gate ok" if card["gates"]["cost_regression"]["passed"] else "COST GATE FAILED"
    tag = " [scripted or local-endpoint evidence]" if card["scripted"] else ""
    return f"scorecard: {len(card['cells'])} cell(s), lift: {counts}; {gate}{tag}"


def render(card: dict[str, Any]) -> str:
    out = ["## skill-eval scorecard", ""]
    for section in (_intro_lines, _lift_lines, _arm_lines, _aa_lines):
        out += section(card)
    out += calibration_lines(card.get("calibration"))
    out += _activation_lines(card)
    out += agreement_lines(card["agreement"])
    out += _audit_lines(card["audit"])
    out += _gate_lines(card)
    out += ["", f"_{summary_line(card)}_", ""]
    return "\n".join(out)


def _intro_lines(card: dict[str, Any]) -> list[str]:
    s = card["settings"]
    out: list[str] = []
    if card["scripted"]:
        out += [f"> {SCRIPTED}: figures marked {SCRIPTED} come from scripted model turns (meta `scripted: true`) "
                "or a local endpoint the runner does not run (meta `model_source: local-endpoint`), not from a provider model. They test the harness, not the skill's effect on a model.", ""]
    out += [f"{card['bundles']} bundle(s). Lift is paired by scenario (repeats averaged, one vote per scenario), "
            f"{s['confidence']:.0%} paired bootstrap CI ({s['bootstrap_samples']} resamples, seed {s['seed']}), exact sign test; "
            f"fewer than {s['min_paired_scenarios']} paired scenarios is INDETERMINATE; cells with more than "
            f"{s['max_infra_error_rate']:.0%} infra errors are ERROR; a comparison or A/A whose arm has more than "
            f"{s.get('max_incomplete_rate', 0.25):.0%} incomplete runs (budget_stop, no final answer, no subject call and "
            "no claim) is INCONCLUSIVE.", ""]
    return out


def _lift_lines(card: dict[str, Any]) -> list[str]:
    out = ["### Lift", "", "| skill | agent / model | comparison | split | verdict | effect [CI] | sign test | paired | A/A floor | why |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for cell in card["cells"]:
        for e in cell["lift"]:
            st = e["sign_test"]
            sign = f"{st['wins']}+/{st['losses']}−, p={st['p']:.3g}" if st else "—"
            out.append(f"| {cell['skill']} | {who(cell)} | {e['treatment']} vs {e['control']} | {e['split']} | **{e['verdict']}** | "
                       f"{lift_figure(e)} | {sign} | {e['n_paired']} | {num(e['noise_floor'], '.2f')} | {esc(e['reason'])} |")
    return out


def _arm_lines(card: dict[str, Any]) -> list[str]:
    out = ["", "### Per arm", "",
           "| skill | agent / model | arm | runs | infra err | incomplete | status | pass rate | dims 1/2/3/6 | pass^k 2 / 6 | verdict acc. "
           "| $/run | $/resolved | cost source | tokens in/out | wall s | turns |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for cell in card["cells"]:
        for arm, a in cell["arms"].items():
            dims = "/".join(pct((a["dimensions"].get(d) or {}).get("rate")) for d in ("1", "2", "3", "6"))
            pk = ", ".join(f"{d}: {p['passed']}/{p['scenarios']}" if (p := a["pass_k"].get(d)) else f"{d}: —" for d in ("2", "6"))
            c = a["cost"]
            status = "**ERROR**" if a["status"] == "error" else "ok"
            rate = "ERROR" if a["status"] == "error" else pct(a["pass_rate"])
            unfinished = (a.get("incomplete") or {}).get("rate")
            out.append(f"| {cell['skill']} | {who(cell)} | {arm} | {a['runs']} | {pct(a['infra_error_rate'])} | {pct(unfinished)} | "
                       f"{status} | {rate} | "
                       f"{dims} | {pk} | {pct(a['verdict_accuracy']['rate'])} | {usd(c['mean_usd_per_run'])} | "
                       f"{usd(c['usd_per_resolved'])} | {c['source']}{esc(' (' + c['why'] + ')') if c.get('why') else ''} | {num(c['mean_tokens_in'], '.0f')}/{num(c['mean_tokens_out'], '.0f')} | "
                       f"{num(c['mean_wall_clock_s'])} | {num(c['mean_turns'])} |")
    return out


def _aa_lines(card: dict[str, Any]) -> list[str]:
    out = ["", "### A/A calibration", "",
           "_Two recordings of the same arm: the false-difference rate is the share of paired scenarios whose pass "
           "rate differs (noise, by construction); the noise floor is the largest |CI bound| of their mean difference, "
           "and no smaller lift is called. Over runs that mostly never finished both are artefacts of the budget: "
           "INCONCLUSIVE, no figure._", ""]
    aa = [(cell, x) for cell in card["cells"] for x in cell["aa"]]
    if not aa:
        out.append("No A/A recording (`skill-eval run --arm skill-agent --aa`): no noise floor, so a significant "
                   "effect is reported as UNCALIBRATED, never LIFT.")
    for cell, x in aa:
        fig = (f"false-difference rate {pct(x['false_difference_rate'])}, noise floor {num(x['noise_floor'], '.2f')} "
               f"({x['n_paired']} paired)") if x["status"] == "ok" else f"**{x['status']}**: {esc(x['reason'])}"
        out.append(f"- {cell['skill']} {who(cell)} [{x['arm']}]: {fig}")
    return out


def _activation_lines(card: dict[str, Any]) -> list[str]:
    out = ["", "### Activation (trigger corpus)", ""]
    if not card["activation"]:
        out.append("No trigger evidence.")
    for act in card["activation"]:
        tag = f" {SCRIPTED}" if act["scripted"] else ""
        if act["status"] == "error":
            out.append(f"- {act['agent']} / {act['model']}{tag}: **ERROR** ({pct(act['infra_error_rate'])} infra errors)")
            continue
        out.append(f"- {act['agent']} / {act['model']}{tag} (adapter tier {', '.join(act['adapter_tiers'])}): precision "
                   f"{pct(act['precision'])}, recall {pct(act['recall'])}, negatives clean {act['negatives_clean']}/{act['negatives']}")
        for skill, p in act["per_skill"].items():
            out.append(f"  - {skill}: precision {pct(p['precision'])}, recall {pct(p['recall'])} "
                       f"(tp {p['tp']}, fp {p['fp']}, fn {p['fn']}; tier {', '.join(p['tiers']) or '—'})")
    return out


def _audit_lines(audit: dict[str, Any]) -> list[str]:
    out = ["", "### Eval-quality audit", ""]
    if not audit["flagged"]:
        out.append("No scenario flagged (saturated baseline, fails everywhere, prompt leakage).")
    for f in audit["flagged"]:
        out.append(f"- `{f['scenario']}` ({f['skill']}{', holdout' if f['holdout'] else ''}): "
                   + "; ".join(f"{k}: {esc(v)}" for k, v in f["details"].items()))
    out.append(f"- holdout scenarios: {', '.join(audit['holdout']) or 'none'} (their lift is the `holdout` split)")
    return out


def _gate_lines(card: dict[str, Any]) -> list[str]:
    gate = card["gates"]["cost_regression"]
    out = ["", "### Gates", "",
           f"- cost regression (> {gate['threshold']:.0%} over baseline/released): " + ("ok" if gate["passed"] else "**FAILED**")]
    out += [f"  - {esc(p)}" for p in gate["problems"]]
    if card["contaminated"]:
        out.append(f"- contaminated control bundles: {len(card['contaminated'])} (their comparisons are ERROR)")
        out += [f"  - {esc(p)}: {esc(why[0])}" for p, why in list(card["contaminated"].items())[:10]]
    if card["problems"]:
        out.append(f"- unreadable bundles: {len(card['problems'])}")
    return out


def agreement_lines(agr: dict[str, Any]) -> list[str]:
    """Cross-agent agreement: scenarios that pass in one agent/model cell and fail in another."""
    out = ["", "### Cross-agent agreement", ""]
    if agr["compared"] == 0:
        return [*out, "Each scenario was recorded in one agent/model cell only: nothing to compare."]
    out.append(f"{agr['compared']} scenario(s) recorded in more than one cell ({', '.join(agr['cells'])}); "
               f"{len(agr['disagree'])} pass in one cell and fail in another.")
    if agr["disagree"]:
        out += ["", "| skill | arm | scenario | " + " | ".join(agr["cells"]) + " |",
                "|---|---|---|" + "---|" * len(agr["cells"])]
        for d in agr["disagree"]:
            out.append(f"| {d['skill']} | {d['arm']} | {esc(d['scenario'])} | "
                       + " | ".join(d["cells"].get(c, "—") for c in agr["cells"]) + " |")
    return out
