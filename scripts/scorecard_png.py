#!/usr/bin/env python3
"""docs/scorecard.png: the scorecard of the committed evidence, rendered by headless Chromium (`make scorecard-png`).

Builds scorecard.json/.html from the committed evidence (what `skill-eval scorecard` writes), loads the page
in headless Chromium over the DevTools pipe (tests/cdp.py: no port, no network), saves a full-page
screenshot to docs/scorecard.png and writes docs/scorecard.png.json beside it: the sha256 of the
scorecard.json the picture was rendered from (and the Chromium that drew it). tests/reporting/
test_scorecard_png.py rebuilds scorecard.json from the committed evidence and compares that digest, not
pixels (which move with Chromium and fonts): after the evidence or the scorecard changes, run this again.

    python scripts/scorecard_png.py [--out docs/scorecard.png]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))  # cdp.py: the Chromium driver the browser test uses

WIDTH, HEIGHT = 1100, 900
SIDECAR_SUFFIX = ".json"


def build(out_dir: Path) -> Path:
    """scorecard.json/.md/.html of the committed evidence into out_dir; the scorecard.json path."""
    from skill_eval.content import config
    from skill_eval.reporting import scorecard as sc

    card = sc.compute(config.load(ROOT)).card
    sc.write(card, out_dir)
    return out_dir / "scorecard.json"


def chromium_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def main(argv: list[str]) -> int:
    import cdp

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs/scorecard.png")
    args = ap.parse_args(argv)
    binary = cdp.chromium_binary()
    if binary is None:
        print("scorecard-png: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="scorecard-png-") as tmp:
        card_json = build(Path(tmp))
        page = cdp.render(card_json.with_name("scorecard.html"), "document.title", width=WIDTH, height=HEIGHT)
        if page.errors:
            print("scorecard-png: the page logged errors: " + "; ".join(page.errors), file=sys.stderr)
            return 1
        digest = hashlib.sha256(card_json.read_bytes()).hexdigest()
    args.out.write_bytes(page.screenshot)
    sidecar = {"image": args.out.name, "scorecard_json_sha256": digest,
               "rendered_from": "scorecard.json of the committed evidence (skill-eval scorecard)",
               "renderer": chromium_version(binary), "viewport": [WIDTH, HEIGHT], "regenerate": "make scorecard-png"}
    args.out.with_name(args.out.name + SIDECAR_SUFFIX).write_text(json.dumps(sidecar, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(page.screenshot)} bytes) from scorecard.json sha256 {digest[:16]}…")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
