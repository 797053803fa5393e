"""scorecard.json -> one static scorecard.html: inline CSS and inline SVG charts, no script, no network.

The page is self-contained (a Content-Security-Policy of `default-src 'none'` makes the browser
refuse any fetch, so a stray external reference shows up as a console error in the Chromium test
instead of silently phoning home). Charts: lift with CI bars and the A/A floor band per skill,
activation precision/recall with tier, dimension pass rates, pass^k for 2/6, cost per resolved
question, A/A calibration. Each chart is a <figure data-chart=NAME>; a chart built from scripted
evidence carries a visible `scripted` badge; INDETERMINATE/ERROR rows carry the word, no mark.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from html import escape
from typing import Any

from skill_eval.reporting.scorecard.markdown import lift_figure, pct, summary_line, usd

# Every row is two lines: its label (naming the cell: skill · agent/model · ...) across the full width, then
# the plot under it from PLOT_X, so no label is cut or runs into a bar (tests/reporting/scorecard/test_scorecard_browser.py
# measures the rendered boxes).
W, ROW_H, PLOT_X, PLOT_W = 960, 38, 12, 520
DIMENSION_COLUMNS = ("1", "2", "3", "4", "5", "6", "oracle")
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1000px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
.banner{background:#fff4ce;border:2px solid #b58100;padding:8px 12px;font-weight:600}
.scripted-badge{display:inline-block;background:#b58100;color:#fff;border-radius:3px;padding:0 6px;margin-left:6px;
font-size:12px;font-weight:700;text-transform:uppercase;letter-spacing:.04em}
figure{margin:12px 0 20px}figcaption{font-weight:600;margin-bottom:4px}
svg text{font:12px system-ui,sans-serif;fill:#1b1f24}svg .muted{fill:#57606a}svg .word{font-weight:700;fill:#9a6700}
.bar{fill:#2f6fb0}.bar.recall{fill:#2da44e}.bar.cost{fill:#8250df}.bar.fdr{fill:#cf222e}
.bar.passk{fill:#1a7f37}.bar.floor{fill:#9a6700}
.ci-bar{stroke:#1b1f24;stroke-width:2}.effect{fill:#1b1f24}.aa-floor{fill:#eaeef2}.axis{stroke:#8c959f;stroke-width:1}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d0d7de;padding:3px 6px;text-align:left;font-size:13px}
.note{color:#57606a;font-size:13px}
"""


def badge(scripted: bool) -> str:
    return '<span class="scripted-badge">scripted</span>' if scripted else ""


def figure(name: str, title: str, scripted: bool, svg: str, note: str = "") -> str:
    extra = f'<p class="note">{escape(note)}</p>' if note else ""
    return (f'<figure id="chart-{name}" data-chart="{name}"><figcaption>{escape(title)}{badge(scripted)}</figcaption>'
            f"{svg}{extra}</figure>")


def svg(rows: int, body: str, label: str, extra: int = 0) -> str:
    h = max(1, rows) * ROW_H + 24 + extra
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" width="{W}" height="{h}" '
            f'viewBox="0 0 {W} {h}">{body}</svg>')


def empty(label: str, why: str) -> str:
    return svg(1, f'<text class="muted empty" x="4" y="20">{escape(why)}</text>', label)


def bars(rows: Sequence[tuple[str, float | None, str, str]], label: str, vmax: float = 1.0) -> str:
    """Horizontal bars: (label, value or None, text after the bar, css class). None draws the text only."""
    if not rows:
        return empty(label, "no data")
    vmax = max([vmax] + [v for _, v, _, _ in rows if v is not None]) or 1.0
    out = []
    for i, (name, value, text, cls) in enumerate(rows):
        y = 20 + i * ROW_H
        out.append(f'<g class="row"><text class="label" x="4" y="{y}">{escape(name)}</text>')
        if value is None:
            out.append(f'<text class="word" x="{PLOT_X}" y="{y + 18}">{escape(text)}</text></g>')
            continue
        w = max(1.0, PLOT_W * value / vmax)
        out.append(f'<rect class="bar {cls}" x="{PLOT_X}" y="{y + 6}" width="{w:.1f}" height="{ROW_H - 22}"><title>{escape(name)}: '
                   f'{escape(text)}</title></rect>')
        out.append(f'<text x="{PLOT_X + w + 4:.1f}" y="{y + 18}">{escape(text)}</text></g>')
    return svg(len(rows), "".join(out), label)


def lift_chart(card: dict[str, Any]) -> str:
    """Effect (dot) with CI bar on a -1..+1 axis; the A/A floor band (±floor) shaded behind it."""
    rows = [(c, e) for c in card["cells"] for e in c["lift"]]
    if not rows:
        return empty("lift", "no behavioural evidence")
    x0 = PLOT_X + PLOT_W / 2

    def x(v: float) -> float:
        return x0 + v * PLOT_W / 2

    # the axis is drawn in each row's plot band only (under the label line), so it never crosses a label
    out = [f'<text class="muted" x="{x(-1):.0f}" y="{20 + len(rows) * ROW_H}">-1</text>'
           f'<text class="muted" x="{x0 - 4:.0f}" y="{20 + len(rows) * ROW_H}">0</text>'
           f'<text class="muted" x="{x(1) - 16:.0f}" y="{20 + len(rows) * ROW_H}">+1</text>']
    for i, (cell, e) in enumerate(rows):
        y = 20 + i * ROW_H
        name = f"{cell['skill']} · {who(cell)} · {e['treatment']} vs {e['control']} · {e['split']}{row_tag(card, cell)}"
        out.append(f'<g class="lift-row row" data-verdict="{e["verdict"]}"><text class="label" x="4" y="{y}">{escape(name)}</text>')
        if e["effect"] is None:
            out.append(f'<text class="word" x="{PLOT_X}" y="{y + 18}">{escape(e["verdict"])}: {escape(_short(e["reason"], 110))}</text></g>')
            continue
        out.append(f'<line class="axis" x1="{x0}" y1="{y + 5}" x2="{x0}" y2="{y + 23}"/>')
        if e["noise_floor"] is not None:
            f = min(1.0, e["noise_floor"])
            out.append(f'<rect class="aa-floor" x="{x(-f):.1f}" y="{y + 6}" width="{x(f) - x(-f):.1f}" height="{ROW_H - 22}"/>')
        lo, hi = e["ci"]
        out.append(f'<line class="ci-bar" x1="{x(lo):.1f}" y1="{y + 14}" x2="{x(hi):.1f}" y2="{y + 14}"/>'
                   f'<circle class="effect" cx="{x(e["effect"]):.1f}" cy="{y + 14}" r="4"><title>{escape(lift_figure(e))}</title></circle>'
                   f'<text class="word" x="{x(1) + 6:.0f}" y="{y + 18}">{escape(e["verdict"])}</text></g>')
    return svg(len(rows), "".join(out), "lift with confidence intervals", extra=12)


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def who(cell: dict[str, Any]) -> str:
    """The row's matrix cell, as `agent/model`."""
    return f"{cell['agent']}/{cell['model']}"


def arm_rows(card: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str, dict[str, Any], str]]:
    """(cell, arm, summary, label); every label names its agent/model cell."""
    for cell in card["cells"]:
        for arm, a in cell["arms"].items():
            yield cell, arm, a, f"{cell['skill']} · {who(cell)} · {arm}{row_tag(card, cell)}"


def row_tag(card: dict[str, Any], cell: dict[str, Any]) -> str:
    """In a card mixing scripted and real evidence, each scripted row says so (the chart badge cannot)."""
    mixed = len({c["scripted"] for c in card["cells"]}) > 1
    return " · SCRIPTED" if mixed and cell["scripted"] else ""


def heatmap(rows: list[tuple[str, dict[str, Any], str]], columns: tuple[str, ...], label: str) -> str:
    """Rows x columns of rates: a shaded square per (row, column) with its percentage; words for errors."""
    if not rows:
        return empty(label, "no data")
    cw = min(80, (W - PLOT_X - 10) // len(columns))
    out = [f'<text class="muted" x="{PLOT_X + i * cw + 4}" y="12">dim {escape(c)}</text>' for i, c in enumerate(columns)]
    for r, (name, dims, status) in enumerate(rows):
        y = 34 + r * ROW_H
        out.append(f'<text class="label" x="4" y="{y}">{escape(name)}</text>')
        if status == "error":
            out.append(f'<text class="word" x="{PLOT_X + 4}" y="{y + 18}">ERROR: infra errors above the limit, no rates</text>')
            continue
        for i, c in enumerate(columns):
            d = dims.get(c)
            x = PLOT_X + i * cw
            if d is None:
                out.append(f'<text class="muted" x="{x + 4}" y="{y + 18}">—</text>')
            elif d["rate"] is None:
                out.append(f'<text class="muted" x="{x + 4}" y="{y + 18}">not judged</text>')
            else:
                light = round(92 - 50 * d["rate"])
                out.append(f'<rect class="cell dim" x="{x}" y="{y + 5}" width="{cw - 4}" height="{ROW_H - 20}" '
                           f'style="fill:hsl(212,60%,{light}%)"><title>{escape(name)} dim {escape(c)}: {d["passed"]}/{d["total"]}</title></rect>'
                           f'<text x="{x + 6}" y="{y + 18}" style="fill:{"#fff" if light < 60 else "#1b1f24"}">{pct(d["rate"])}</text>')
    return svg(len(rows), "".join(out), label, extra=14)


def render(card: dict[str, Any]) -> str:
    scripted_any = card["scripted"]
    parts = [f"<h1>skill-eval scorecard{badge(scripted_any)}</h1>"]
    if scripted_any:
        parts.append('<p class="banner" id="scripted-banner">SCRIPTED evidence: figures marked <span class="scripted-badge">scripted'
                     "</span> come from scripted model turns (meta scripted: true) or a local endpoint the runner does not run "
                     "(meta model_source: local-endpoint), not a provider model.</p>")
    parts.append(f'<p class="note">{escape(summary_line(card))}</p>')
    cells_scripted = any(c["scripted"] for c in card["cells"])
    floors = [e["noise_floor"] for c in card["cells"] for e in c["lift"] if e["noise_floor"] is not None]
    parts.append("<h2>Lift</h2>" + figure("lift", "Lift (mean paired difference of scenario pass rates) with CI; grey band = A/A floor",
                                          cells_scripted, lift_chart(card),
                                          "" if floors else "No A/A recording: no noise floor, significant effects are UNCALIBRATED."))
    act_rows, act_scripted = [], False
    for act in card["activation"]:
        act_scripted |= act["scripted"]
        cell_name = f"{act['agent']}/{act['model']}"
        if act["status"] == "error":
            act_rows.append((f"all skills · {cell_name}", None, "ERROR: infra errors", "precision"))
            continue
        for skill, p in act["per_skill"].items():
            tier = ",".join(p["tiers"]) or "—"
            for metric in ("precision", "recall"):
                v = p[metric]
                act_rows.append((f"{skill} · {cell_name} · {metric}", v, f"{pct(v)} (tier {tier})" if v is not None else "n/a", metric))
    parts.append("<h2>Activation</h2>" + figure("activation", "Trigger activation precision / recall per skill (tier)", act_scripted,
                                               bars(act_rows, "activation precision and recall")))
    agr = card["agreement"]
    agr_rows = "".join(f"<tr><td>{escape(d['skill'])}</td><td>{escape(d['arm'])}</td><td>{escape(d['scenario'])}</td>"
                       + "".join(f"<td>{escape(d['cells'].get(c, '—'))}</td>" for c in agr["cells"]) + "</tr>"
                       for d in agr["disagree"])
    head = "".join(f"<th>{escape(c)}</th>" for c in agr["cells"])
    parts.append(f'<h2>Cross-agent agreement</h2><p id="agreement">{agr["compared"]} scenario(s) recorded in more than '
                 f'one cell; {len(agr["disagree"])} pass in one cell and fail in another.</p>'
                 + (f'<table id="agreement-table"><tr><th>skill</th><th>arm</th><th>scenario</th>{head}</tr>{agr_rows}</table>'
                    if agr["disagree"] else ""))
    dim_rows, pk_rows, cost_rows = [], [], []
    for _cell, _arm, a, name in arm_rows(card):
        dim_rows.append((name, a["dimensions"], a["status"]))
        for d, v in a["pass_k"].items():
            pk_rows.append((f"{name} · dim {d}", v["rate"], f"pass^{v['k']} {v['passed']}/{v['scenarios']} scenarios", "passk"))
        c = a["cost"]
        value = c["usd_per_resolved"]
        cost_rows.append((name, value, f"{usd(value)} ({c['source']}; {c['resolved']} resolved)" if value is not None
                          else f"n/a: {c.get('why') or c['source'] + ' cost'} ({c['resolved']} resolved)", "cost"))
    parts.append("<h2>Dimensions</h2>" + figure("dimensions", "Dimension pass rates per arm", cells_scripted,
                                               heatmap(dim_rows, DIMENSION_COLUMNS, "dimension pass rates")))
    parts.append("<h2>pass^k</h2>" + figure("passk", "pass^k for the zero-tolerance dimensions 2 and 6", cells_scripted,
                                          bars(pk_rows, "pass^k for dimensions 2 and 6")))
    parts.append("<h2>Cost</h2>" + figure("cost", "Cost per resolved question (USD; source labelled)", cells_scripted,
                                         bars(cost_rows, "cost per resolved question", vmax=0.0)))
    aa_rows = []
    for cell in card["cells"]:
        for x in cell["aa"]:
            name = f"{cell['skill']} · {who(cell)} · {x['arm']} A/A"
            if x["status"] != "ok":
                aa_rows.append((name, None, f"{x['status']}: {x['reason']}", "fdr"))
            else:
                aa_rows.append((f"{name} · false differences", x["false_difference_rate"], pct(x["false_difference_rate"]), "fdr"))
                aa_rows.append((f"{name} · noise floor", x["noise_floor"], f"{x['noise_floor']:.2f}", "floor"))
    cal = card.get("calibration") or {}
    for c in (cal or {}).get("cells", []):
        x = c["calibration"]
        name = f"{c['skill']} · {c['model']} local calibration ({cal['status']})"
        if x["status"] != "ok":
            aa_rows.append((name, None, f"{x['status']}: {x['reason']}", "fdr"))
        else:
            aa_rows.append((f"{name} · false differences", x["false_difference_rate"], pct(x["false_difference_rate"]), "fdr"))
            aa_rows.append((f"{name} · noise floor", x["noise_floor"], f"{x['noise_floor']:.2f}", "floor"))
    aa_svg = bars(aa_rows, "A/A calibration") if aa_rows else empty("A/A calibration", "no A/A recording (skill-eval run --aa)")
    parts.append("<h2>A/A calibration</h2>" + figure("aa", "A/A false-difference rate and noise floor", cells_scripted, aa_svg))
    parts.append(tables(card))
    body = "\n".join(parts)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
            f"<title>skill-eval scorecard</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


def tables(card: dict[str, Any]) -> str:
    rows = []
    for cell in card["cells"]:
        for e in cell["lift"]:
            fig = lift_figure(e) if e["effect"] is not None else e["verdict"]
            rows.append(f"<tr><td>{escape(cell['skill'])}</td><td>{escape(cell['agent'])}/{escape(cell['model'])}{badge(cell['scripted'])}</td>"
                        f"<td>{escape(e['treatment'])} vs {escape(e['control'])} ({e['split']})</td><td><b>{e['verdict']}</b></td>"
                        f"<td>{escape(fig)}</td><td>{e['n_paired']}</td><td>{escape(e['reason'])}</td></tr>")
    audit = card["audit"]
    flagged = "".join(f"<li><code>{escape(f['scenario'])}</code>: {escape('; '.join(f['details'].values()))}</li>" for f in audit["flagged"])
    gate = card["gates"]["cost_regression"]
    gate_html = "ok" if gate["passed"] else "<b>FAILED</b><ul>" + "".join(f"<li>{escape(p)}</li>" for p in gate["problems"]) + "</ul>"
    return ("<h2>Lift table</h2><table id=\"lift-table\"><tr><th>skill</th><th>agent/model</th><th>comparison</th><th>verdict</th>"
            "<th>effect [CI]</th><th>paired</th><th>why</th></tr>" + "".join(rows) + "</table>"
            f"<h2>Eval-quality audit</h2><ul id=\"audit\">{flagged or '<li>no scenario flagged</li>'}"
            f"<li>holdout: {escape(', '.join(audit['holdout']) or 'none')}</li></ul>"
            f"<h2>Gates</h2><p id=\"cost-gate\">cost regression (&gt; {gate['threshold']:.0%}): {gate_html}</p>")
