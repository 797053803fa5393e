"""scorecard.html in a real browser: headless Chromium (Debian's `chromium`, installed by .ci/run).

Driven over the DevTools protocol on a pipe (tests/cdp.py): no port, no network. Asserts on the
*rendered* DOM — every chart's marks exist and have a size, the scripted label is visible, the
INDETERMINATE/ERROR rows show their word — and that the page logs no console error, uncaught
exception or blocked request. Saves a full-page screenshot (set SKILL_EVAL_SCREENSHOT=PATH to
keep a copy; docs/scorecard.png itself comes from `make scorecard-png`). Skipped only outside CI when chromium is absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import cdp
import pytest
import scorecard_fixture as fx

from skill_eval.content import config
from skill_eval.reporting import scorecard as sc

REPO = Path(__file__).resolve().parents[3]

if cdp.chromium_binary() is None:
    if os.environ.get("CI"):
        raise RuntimeError("chromium is required in CI (.ci/run installs it)")
    pytest.skip("chromium is not installed", allow_module_level=True)

PROBE = r"""
(() => {
  const visible = el => {
    if (!el) return false;
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    const sized = el.tagName === 'line' ? (r.width > 0 || r.height > 0) : (r.width > 0 && r.height > 0);  // a stroke has no box
    return sized && s.visibility === 'visible' && s.display !== 'none' && Number(s.opacity) > 0;
  };
  const charts = {};
  for (const fig of document.querySelectorAll('figure[data-chart]')) {
    const svg = fig.querySelector('svg');
    charts[fig.dataset.chart] = {
      svg: visible(svg),
      bars: [...fig.querySelectorAll('rect.bar, rect.cell')].filter(visible).length,
      ci: [...fig.querySelectorAll('line.ci-bar')].filter(visible).length,
      dots: [...fig.querySelectorAll('circle.effect')].filter(visible).length,
      words: [...fig.querySelectorAll('text.word')].map(t => t.textContent),
      badge: visible(fig.querySelector('figcaption .scripted-badge')),
    };
  }
  const badges = [...document.querySelectorAll('.scripted-badge')];
  return {
    charts,
    banner: visible(document.getElementById('scripted-banner')) ? document.getElementById('scripted-banner').innerText : null,
    badges_visible: badges.filter(visible).length,
    badge_text: badges.length ? badges[0].innerText : null,
    verdicts: [...document.querySelectorAll('g.lift-row')].map(g => g.dataset.verdict),
    resources: performance.getEntriesByType('resource').map(e => e.name),
  };
})()
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    evidence = fx.build(tmp / "evidence")
    card = sc.compute(config.load(REPO), evidence).card
    sc.write(card, tmp / "out")
    result = cdp.render(tmp / "out" / "scorecard.html", PROBE, width=1100, height=900)
    shot = tmp / "scorecard.png"
    shot.write_bytes(result.screenshot)
    keep = os.environ.get("SKILL_EVAL_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
    return result, shot


def test_every_chart_renders_with_marks(page):
    result, _ = page
    charts = result.result["charts"]
    assert set(charts) == {"lift", "activation", "dimensions", "passk", "cost", "aa"}
    assert all(c["svg"] for c in charts.values())
    lift = charts["lift"]
    assert lift["ci"] == 2 and lift["dots"] == 2  # the two LIFT rows have a CI bar and an effect dot
    assert sum(w.startswith("ERROR:") for w in lift["words"]) == 2  # infra errors, contamination: a word, no mark
    for name in ("activation", "dimensions", "passk", "cost", "aa"):
        assert charts[name]["bars"] > 0, name
    assert sorted(result.result["verdicts"]) == ["ERROR", "ERROR", "LIFT", "LIFT"]


def test_scripted_label_is_visible(page):
    result, _ = page
    assert result.result["banner"] and "SCRIPTED evidence" in result.result["banner"]
    assert result.result["badges_visible"] >= 6
    assert result.result["badge_text"].lower() == "scripted"
    assert all(c["badge"] for c in result.result["charts"].values())


def test_no_console_errors_and_no_network(page):
    result, shot = page
    assert result.errors == []
    assert result.result["resources"] == []  # nothing fetched: the page is self-contained
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_harness_catches_console_errors_and_blocked_requests(tmp_path):
    """The no-error assertion above is only worth something if a broken page fails it."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
                   "</head><body><img src=\"http://example.invalid/x.png\"><p>x</p></body></html>")
    errors = cdp.render(bad, "1").errors
    assert any("Content Security Policy" in e for e in errors), errors
    script = tmp_path / "script.html"
    script.write_text("<!DOCTYPE html><html><body><script>console.error('boom'); missing();</script></body></html>")
    errors = cdp.render(script, "1").errors
    assert "console: boom" in errors and any(e.startswith("exception:") for e in errors)
