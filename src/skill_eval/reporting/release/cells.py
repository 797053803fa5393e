"""The release's matrix cells: which (agent, model) cells a release needs, and where each run belongs.

A cell is an (agent, model) pair of `[[evals.matrix]]` (content/config.MatrixCell, labelled
`agent/model`; every scripted model is `scripted`). A release case is one scenario *in one
cell*: the candidate, baseline and released arms of that scenario as that agent and model
recorded them, reviewed and compared on their own. A run's place is the evidence gate's run key
(grading/evidence.run_key: kind, skill, arm, item, k, cell), so two runs of one scenario, arm and
k in two cells are two runs, and two in one cell are the same run recorded twice (a failed arm).

Which cells a release needs is configuration:

  [release] cells = ["claude-code/claude-sonnet-4-5"]   the named cells (each must be declared in
                                                        [[evals.matrix]] when a matrix exists);
  (unset)                                               every cell the matrix declares for the
                                                        release profile;
  (no matrix)                                           any single cell: runs are not told apart
                                                        by cell, as in the evidence gate.

Every required cell gets every case; a cell with no runs makes its cases incomplete (missing
runs), never absent. Runs of a cell the release does not need are not staged; the stage lists
those cells (`bindings.cells.other`) so the report says what was left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skill_eval.content.config import Config
from skill_eval.core.errors import ConfigError

if TYPE_CHECKING:
    from skill_eval.grading.evidence import RunKey

ANY = ""  # no cell named: any single cell (a host without [[evals.matrix]])


@dataclass(frozen=True)
class Cells:
    required: tuple[str, ...]  # labels, sorted; (ANY,) when no cell is named
    configured_by: str  # "[release] cells" | "[[evals.matrix]]" | "none"

    @property
    def named(self) -> bool:
        return self.required != (ANY,)

    def of(self, meta: dict[str, Any]) -> str:
        """The cell a run's meta.json places it in (ANY when cells are not told apart)."""
        return meta_cell(meta) if self.named else ANY

    def binding(self, present: Iterable[str]) -> dict[str, Any]:
        """The stage's record of the cells: required, where that came from, and cells recorded but not needed."""
        return {"required": list(self.required), "configured_by": self.configured_by,
                "other": sorted(set(present) - set(self.required)) if self.named else []}


def required(cfg: Config) -> Cells:
    """The cells a release needs (module docstring); a named cell outside a declared matrix is a config error."""
    table = cfg.raw.get("release") or {}
    declared = cfg.cells("release")
    named = table.get("cells")
    if named is not None:
        unknown = sorted(set(named) - set(declared)) if declared else []
        if unknown:
            raise ConfigError(f"[release] cells names {unknown}, which [[evals.matrix]] does not declare for the release "
                              f"profile (declared: {', '.join(declared)})", field="release.cells",
                              fix="name declared cells (agent/model labels), or add them to [[evals.matrix]]")
        return Cells(tuple(sorted(named)), "[release] cells")
    if declared:
        return Cells(tuple(sorted(declared)), "[[evals.matrix]]")
    return Cells((ANY,), "none")


def scoped(name: str, cell: str) -> str:
    """A scenario or skill in one cell: a release case's id (`scenario@agent/model`) and a lift gate's key
    (`skill@agent/model`); the bare name when cells are not told apart. Names never hold '@' (ids and
    Agent Skills names are lower-case words), so `unscoped` splits it back."""
    return f"{name}@{cell}" if cell else name


def unscoped(key: str) -> tuple[str, str]:
    name, _, cell = key.partition("@")
    return name, cell


case_id = scoped


def label(cell: str) -> str:
    """How a report names a cell (ANY reads as such, never as an empty cell)."""
    return cell or "any cell"


# grading.evidence is imported where used: the report reader (report.py, via lift_gate) does not pay for it
def run_key(meta: dict[str, Any], cell: str) -> RunKey:
    """The evidence gate's key of one recorded run (its slot in `cell`)."""
    from skill_eval.grading import evidence

    return evidence.run_key(evidence.slot_of(meta), cell)


def meta_cell(meta: dict[str, Any]) -> str:
    from skill_eval.grading import evidence

    return evidence.meta_cell(meta)
