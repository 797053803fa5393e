#!/usr/bin/env python3
"""Install the pinned real agent CLIs from npm into a cache directory (for `nox -s e2e`).

Idempotent: does nothing when the cache already holds exactly these versions. Installs into a
temporary prefix and renames it into place, so an interrupted install never leaves a half
tree that a later run would trust.

    python scripts/install_agent_clis.py [--prefix .cache/agent-clis] [--check]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Pinned: the versions measured in research/agent-cli (npm resolved these here).
PINS = {
    "@anthropic-ai/claude-code": "2.1.197",
    "@openai/codex": "0.171.0",
    "@google/gemini-cli": "0.61.0",
}
BINARIES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli"}
DEFAULT_PREFIX = Path(__file__).resolve().parents[1] / ".cache" / "agent-clis"


def installed_versions(prefix: Path) -> dict[str, str | None]:
    out = {}
    for pkg in PINS:
        manifest = prefix / "node_modules" / pkg / "package.json"
        try:
            out[pkg] = json.loads(manifest.read_text(encoding="utf-8"))["version"]
        except (OSError, ValueError, KeyError):
            out[pkg] = None
    return out


def is_current(prefix: Path) -> bool:
    return installed_versions(prefix) == PINS and all((prefix / "node_modules/.bin" / b).exists() for b in BINARIES)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    ap.add_argument("--check", action="store_true", help="exit 1 unless the pinned versions are installed")
    args = ap.parse_args()
    prefix = args.prefix.resolve()
    if is_current(prefix):
        print(f"agent CLIs: ok — {', '.join(f'{k}@{v}' for k, v in PINS.items())} in {prefix}")
        return 0
    if args.check:
        print(f"agent CLIs: missing or wrong versions in {prefix}: {installed_versions(prefix)}", file=sys.stderr)
        return 1
    npm = shutil.which("npm")
    if not npm:
        print("agent CLIs: npm is not installed (install Node.js >= 20 with npm)", file=sys.stderr)
        return 2
    prefix.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".agent-clis-", dir=prefix.parent))
    try:
        (tmp / "package.json").write_text(json.dumps({"name": "skill-eval-agent-clis", "private": True}), encoding="utf-8")
        cmd = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(tmp),
               *(f"{pkg}@{ver}" for pkg, ver in PINS.items())]
        print("agent CLIs: " + " ".join(cmd[1:]), flush=True)
        proc = subprocess.run(cmd, check=False)
        if proc.returncode != 0:
            print(f"agent CLIs: npm install failed (exit {proc.returncode})", file=sys.stderr)
            return 1
        if not is_current(tmp):
            print(f"agent CLIs: npm resolved other versions: {installed_versions(tmp)}", file=sys.stderr)
            return 1
        if prefix.exists():
            shutil.rmtree(prefix)
        tmp.rename(prefix)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"agent CLIs: installed into {prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
