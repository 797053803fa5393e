"""docs/scorecard.png shows the current scorecard: its sidecar (docs/scorecard.png.json, written by
`make scorecard-png`) names the sha256 of the scorecard.json it was rendered from, and that must be the
scorecard.json built now from the committed evidence. Digests, not pixels: pixels move with Chromium and
fonts, the scorecard's content does not.
"""

from __future__ import annotations

import hashlib
import json

from conftest import REPO

from skill_eval.content import config
from skill_eval.reporting import scorecard as sc

PNG = REPO / "docs/scorecard.png"
SIDECAR = REPO / "docs/scorecard.png.json"


def test_the_docs_picture_was_rendered_from_the_current_scorecard(tmp_path):
    sidecar = json.loads(SIDECAR.read_text(encoding="utf-8"))
    assert sidecar["image"] == PNG.name and PNG.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sc.write(sc.compute(config.load(REPO)).card, tmp_path)
    current = hashlib.sha256((tmp_path / "scorecard.json").read_bytes()).hexdigest()
    assert sidecar["scorecard_json_sha256"] == current, (
        "docs/scorecard.png shows another scorecard.json than the committed evidence gives now: run `make scorecard-png`")
