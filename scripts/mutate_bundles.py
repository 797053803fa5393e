"""Re-signed mutants of this repository's committed bundles (issue 34 item 7; grading/mutants.py).

    python scripts/mutate_bundles.py [--root DIR] [--bundles N] [--class NAME ...] [--json]

Copies each bundle out plain, changes one recorded fact at a time, re-seals it with a throwaway key and judges
it as the evidence gate judges one bundle. Prints mutants, meaningful passes (graded classes the graders
missed) and every class. Exit 1 when a meaningful pass remains. Read-only: nothing in the repository changes."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from skill_eval.content import config
from skill_eval.grading import evidence, mutants


def throwaway_key(where: Path) -> tuple[Path, list]:
    key = where / "mutant-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "mutants", "-f", str(key)], check=True)
    return key, mutants.signers_for(" ".join(key.with_suffix(".pub").read_text().split()[:2]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=".", help="the repository (default: .)")
    p.add_argument("--bundles", type=int, default=None, help="a sample of N bundles across kinds and arms (default: all)")
    p.add_argument("--class", dest="classes", action="append", default=[], help="only this mutation class (repeatable)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    cfg = config.load(Path(args.root).resolve())
    chosen = [c for c in mutants.CLASSES if not args.classes or c.name in args.classes]
    bundles = mutants.sample(evidence.evidence_dir(cfg), args.bundles)
    with tempfile.TemporaryDirectory(prefix="skill-eval-mutants-") as tmp:
        tally = mutants.run(cfg, bundles, Path(tmp), throwaway_key(Path(tmp)), classes=chosen,
                            progress=None if args.json else lambda line: print(line, file=sys.stderr, flush=True))
    out = tally.to_json()
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(f"mutants: {out['mutants']} over {out['bundles']} bundles ({len(out['skipped'])} skipped); "
              f"meaningful passes: {out['meaningful_passes']}; informational passes: {out['informational_passes']}")
        for name, c in out["classes"].items():
            tag = "graded" if c["graded"] else "informational"
            print(f"  {name:55} {tag:13} mutants {c['mutants']:5}  caught {c['caught']:5}  passed {c['passed']:5}"
                  + (f"  e.g. {c['passed_in'][0]}" if c["passed_in"] and c["graded"] else ""))
            if not c["graded"]:
                print(f"      ({c['why']})")
    return 1 if out["meaningful_passes"] else 0


if __name__ == "__main__":
    sys.exit(main())
