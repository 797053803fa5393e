#!/usr/bin/env python3
"""The dogfood release, end to end, as CI runs it: stage -> resume with the committed worksheet -> verify.

  python scripts/release_rehearsal.py [STAGE-FLAG...]
      stages the committed evidence (`release stage --session dogfood`), resumes it with
      agent-evals/release/worksheet.dogfood.yaml and verifies both signatures. CI holds no key, so
      the stage and the report are signed with a throwaway key made here (ssh-keygen) and checked
      against a temporary allowed-signers file naming it `test-signed@skill-eval.invalid`: proof that
      the signing path works, not a maintainer's signature. Asserts: stage exits 0, resume exits 1
      with outcome INCOMPLETE and every incomplete reason naming why (scripted evidence), verify
      exits 0 naming the test-signed principal. Exit 1 (and what differed) otherwise.

  python scripts/release_rehearsal.py --write-worksheet [STAGE-FLAG...]
      regenerates the committed worksheet from a fresh stage of the committed evidence: every case
      `inconclusive` (scripted evidence completes no release arm) with one review. Run it after the
      evidence is re-recorded (`make eval-dogfood`), then commit the worksheet.

STAGE-FLAGs go to `release stage` (e.g. `--allow-dirty-candidate "rehearsal on a working copy"`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SESSION = "dogfood"
WORKSHEET = ROOT / "agent-evals/release/worksheet.dogfood.yaml"
PRINCIPAL = "test-signed@skill-eval.invalid"
REVIEWER = "skill-eval maintainers (example worksheet for the committed dogfood evidence)"
REVIEW = ("The committed dogfood evidence is real agent CLIs (one cell per agent) against scripted model servers, so "
          "it proves the harness, not a model's behaviour; dimensions 4/5 are not judged and no released:<ref> arm "
          "exists. Nothing here can be compared: inconclusive.")
HEADER = """\
# Example worksheet for `nox -s release -- --worksheet agent-evals/release/worksheet.dogfood.yaml`.
# It answers every case `inconclusive` because the committed evidence is scripted: the report is
# honestly INCOMPLETE (exit 1). A real release records real-model evidence and fills a fresh worksheet.
# GENERATED: `python scripts/release_rehearsal.py --write-worksheet` (after the evidence is re-recorded);
# tests/reporting/release/test_release_dogfood.py fails while it is out of date.
"""


def skill_eval(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "skill_eval", *args, "--root", str(ROOT)], capture_output=True, text=True,
                          env=env, cwd=ROOT, check=False)


def stage(out: Path, flags: list[str], sign: Path | None = None) -> subprocess.CompletedProcess[str]:
    return skill_eval("release", "stage", "--session", SESSION, "--force", "--out", str(out), *flags,
                      *(["--sign", str(sign)] if sign else []))


def filled_worksheet(staged: Path) -> str:
    """The committed worksheet's text from the worksheet a stage wrote: every case inconclusive, one review."""
    import yaml

    text = staged.read_text(encoding="utf-8")
    body = yaml.safe_load(text)
    body["reviewer"] = REVIEWER
    for row in body["cases"]:
        row["comparison"], row["review"] = "inconclusive", REVIEW
    then = f"# Then: skill-eval release resume build/release/{SESSION}/stage.json --worksheet {WORKSHEET.relative_to(ROOT)}"
    comments = "".join((then if line.startswith("# Then:") else line) + "\n" for line in text.splitlines() if line.startswith("#"))
    return HEADER + comments + yaml.safe_dump(body, sort_keys=False, width=110, allow_unicode=True)


def keypair(tmp: Path) -> tuple[Path, Path]:
    key = tmp / "test_signed_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", PRINCIPAL, "-f", str(key)], check=True)
    signers = tmp / "allowed_signers"
    signers.write_text(PRINCIPAL + " " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n")
    return key, signers


def check(flags: list[str]) -> list[str]:
    """Run stage -> resume -> verify; the problems found (empty: the rehearsal behaved as promised)."""
    with tempfile.TemporaryDirectory(prefix="release-rehearsal-") as tmp_name:
        tmp = Path(tmp_name)
        key, signers = keypair(tmp)
        out = tmp / "out"
        st = stage(out, flags, sign=key)
        if st.returncode != 0:
            return [f"release stage exited {st.returncode} (want 0): {st.stdout}{st.stderr}"]
        print(st.stdout, end="")
        stage_json = out / SESSION / "stage.json"
        rs = skill_eval("release", "resume", str(stage_json), "--worksheet", str(WORKSHEET), "--sign", str(key),
                        "--allowed-signers", str(signers), "--json")
        problems = resume_problems(rs)
        vf = skill_eval("release", "verify", str(stage_json), str(out / SESSION / "report.json"), "--allowed-signers", str(signers))
        print(vf.stdout, end="")
        if vf.returncode != 0 or vf.stdout.count(PRINCIPAL) != 2:
            problems.append(f"release verify exited {vf.returncode} (want 0, both files signed by {PRINCIPAL}): {vf.stdout}{vf.stderr}")
        return problems


def resume_problems(rs: subprocess.CompletedProcess[str]) -> list[str]:
    try:
        doc: dict[str, Any] = json.loads(rs.stdout)
    except json.JSONDecodeError:
        return [f"release resume exited {rs.returncode} without a JSON answer: {rs.stdout}{rs.stderr}"]
    print(f"release report {SESSION}: {str(doc.get('outcome')).upper()} ({len(doc.get('reasons', []))} reason(s))")
    problems = []
    if rs.returncode != 1 or doc.get("outcome") != "incomplete":
        problems.append(f"release resume exited {rs.returncode} with outcome {doc.get('outcome')!r} (want 1, incomplete): "
                        + "; ".join(doc.get("reasons", [])[:3]))
    unexplained = [r for r in doc.get("reasons", []) if "scripted" not in r and "INDETERMINATE" not in r]
    if not doc.get("reasons") or unexplained:
        problems.append(f"incomplete for a reason other than scripted evidence: {unexplained[:3] or 'no reason given'}")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write-worksheet"]:
        with tempfile.TemporaryDirectory(prefix="release-worksheet-") as tmp:
            st = stage(Path(tmp), argv[1:])
            if st.returncode != 0:
                print(st.stdout + st.stderr, file=sys.stderr)
                return 1
            WORKSHEET.write_text(filled_worksheet(Path(tmp) / SESSION / "worksheet.yaml"), encoding="utf-8")
        print(f"wrote {WORKSHEET.relative_to(ROOT)}")
        return 0
    problems = check(argv)
    for p in problems:
        print(f"release rehearsal: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
