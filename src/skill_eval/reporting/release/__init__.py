"""Release evaluation (DESIGN §10, the task-tool seed's contract): stage -> worksheet -> resume -> report.

`release stage` freezes every input of a release decision by digest (case set, assertions,
candidate and released skill bytes, agent binaries, harness, raw evidence file by file),
grades the evidence, renders a canonical *sealed* stage plus a human worksheet, and stops.
`release resume` decodes that stage, rechecks its seal, recomputes the same snapshot from the
current checkout and refuses any difference (naming it), then renders the report from the
stage and the human's worksheet. Nothing here invents a comparison, edits a skill, or trusts
a file it did not re-derive: the stage is a claim about the inputs, checked again at resume.

Module map: `snapshot` (what is frozen and how a case's evidence state is derived), `stage`
(seal, canonical bytes, decode, diff), `worksheet`, `waiver`, `report` (outcome rule, JSON and
Markdown), `sign` (opt-in SSH signatures), `publication` (build digest of the published trees),
`record` (`--run`: every required arm once), `judging` (4/5 judged before the stage is sealed),
`lift_gate` (non-negative lift per skill), `released` (released skill bytes from git, for a host
anywhere in its repository), `cells` (the [[evals.matrix]] cells a release needs; a case is one
scenario in one cell), `candidate` (a clean tested HEAD, or a recorded waiver). The whole sequence:
docs/RELEASE.md.
"""

from __future__ import annotations

from pathlib import Path

from skill_eval.core import fsio

STAGE_FILE = "stage.json"
WORKSHEET_FILE = "worksheet.yaml"
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
RAW_DIR = "raw"
SIG_SUFFIX = ".sig"
SIGN_NAMESPACE = "skill-eval"

OUTCOMES = ("pass", "fail", "incomplete", "waived")


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same directory, fsync, rename: a reader never sees half a stage or report."""
    fsio.write_output(path, data)
