"""The scorecard of this repository's committed evidence (several agent/model cells) in headless Chromium:
every lift, pass^k, dimension and cost row names its cell, and no label is cut or overlaps anything
(issue 35 item 7). The rendered boxes are measured (getBBox/getBoundingClientRect), not pixels.

The probe is proven on a page built to fail it (a label running into a bar, a label past the edge).
"""

from __future__ import annotations

import os

import cdp
import pytest
from conftest import REPO

from skill_eval.content import config
from skill_eval.reporting import scorecard as sc

if cdp.chromium_binary() is None:
    if os.environ.get("CI"):
        raise RuntimeError("chromium is required in CI (.ci/run installs it)")
    pytest.skip("chromium is not installed", allow_module_level=True)

ROW_CHARTS = ("lift", "dimensions", "passk", "cost")

# Per chart: its row labels, and every text box that leaves its svg or overlaps another text or a mark.
# A heatmap cell's own figure sits inside its square by design: a text overlapping a rect it is centred
# in (the rect holds the text's centre) is that, not an overlap; a label may overlap nothing at all.
PROBE = r"""
(() => {
  const box = el => { const r = el.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const meets = (a, b) => a.l < b.r - 0.5 && b.l < a.r - 0.5 && a.t < b.b - 0.5 && b.t < a.b - 0.5;
  const holds = (a, b) => { const x = (b.l + b.r) / 2, y = (b.t + b.b) / 2; return a.l <= x && x <= a.r && a.t <= y && y <= a.b; };
  const out = {};
  for (const fig of document.querySelectorAll('figure[data-chart]')) {
    const svg = fig.querySelector('svg'), frame = box(svg);
    const texts = [...svg.querySelectorAll('text')].map(t => ({el: t, bx: box(t), label: t.classList.contains('label')}));
    const marks = [...svg.querySelectorAll('rect, circle, line')].map(m => ({el: m, bx: box(m)}));
    const problems = [];
    for (const t of texts) {
      const what = JSON.stringify(t.el.textContent);
      if (t.bx.l < frame.l - 0.5 || t.bx.r > frame.r + 0.5 || t.bx.t < frame.t - 0.5 || t.bx.b > frame.b + 0.5)
        problems.push(`cut: ${what} [${Math.round(t.bx.l)},${Math.round(t.bx.r)}] outside [${Math.round(frame.l)},${Math.round(frame.r)}]`);
      for (const u of texts) if (u !== t && u.el.compareDocumentPosition(t.el) & Node.DOCUMENT_POSITION_FOLLOWING && meets(t.bx, u.bx))
        problems.push(`overlap: ${what} and ${JSON.stringify(u.el.textContent)}`);
      for (const m of marks) if (meets(t.bx, m.bx) && (t.label || !holds(m.bx, t.bx)))
        problems.push(`overlap: ${what} and a ${m.el.tagName}.${m.el.getAttribute('class')}`);
    }
    out[fig.dataset.chart] = {labels: texts.filter(t => t.label).map(t => t.el.textContent), problems};
  }
  return out;
})()
"""


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("layout")
    card = sc.compute(config.load(REPO)).card
    sc.write(card, tmp)
    page = cdp.render(tmp / "scorecard.html", PROBE, width=1100, height=900)
    assert page.errors == []
    return card, page.result


def test_the_committed_scorecard_has_several_cells(charts):
    card, _ = charts
    assert len({(c["agent"], c["model"]) for c in card["cells"]}) >= 2


@pytest.mark.parametrize("chart", ROW_CHARTS)
def test_every_row_names_its_agent_model_cell(charts, chart):
    card, result = charts
    cells = {f"{c['agent']}/{c['model']}" for c in card["cells"]}
    labels = result[chart]["labels"]
    assert labels, chart
    unnamed = [x for x in labels if not any(f" · {cell} · " in x for cell in cells)]
    assert unnamed == [], unnamed
    assert len(set(labels)) == len(labels)  # two rows never read the same (the lift section showed one row twice)


@pytest.mark.parametrize("chart", ("lift", "activation", "dimensions", "passk", "cost", "aa"))
def test_no_label_is_cut_or_overlaps(charts, chart):
    _, result = charts
    assert result[chart]["problems"] == []


def test_a_missing_cost_says_why(charts):
    card, _ = charts
    missing = [a["cost"] for c in card["cells"] for a in c["arms"].values() if a["cost"]["usd_per_resolved"] is None]
    assert missing and all(c["why"] for c in missing)
    html = (sc.html.render(card))
    assert "n/a (unknown cost" not in html and "n/a: " in html


def test_the_probe_catches_a_cut_label_and_an_overlap(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><figure data-chart="x"><svg width="300" height="60">'
                   '<text class="label" x="4" y="20">a label far too long for this little chart, it runs past the edge</text>'
                   '<rect class="bar" x="10" y="30" width="100" height="14"/><text class="label" x="20" y="42">on a bar</text>'
                   "</svg></figure></body></html>")
    problems = cdp.render(bad, PROBE).result["x"]["problems"]
    assert any(p.startswith("cut: ") for p in problems)
    assert 'overlap: "on a bar" and a rect.bar' in problems
