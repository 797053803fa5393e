"""Record a fixed set of run items exactly once into a tree of their own (the release's `stage --run`).

Each item runs once, in its own fresh sandbox, through the ordinary runner (runner.execute.run_item,
so the one agent launch of runner/launch.py: the same isolation, network, shim, redaction and
sealing); no run is retried. The runner seals bundles under the evidence tree with the items' run
id; they are then moved, whole, into `raw` so such a session never mixes with the committed evidence
the pr gate checks. Which items (arms, cases) is the caller's decision (reporting/release/arms.py).

An absent credential is not an error here: nothing is recorded, and the caller's stage says incomplete.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TextIO

from skill_eval.content import freshness
from skill_eval.content.config import Config
from skill_eval.core.errors import InputError
from skill_eval.harness.adapters import get_adapter
from skill_eval.harness.runner import plan
from skill_eval.harness.runner.execute import RunOptions, preflight, run_item
from skill_eval.harness.runner.pool import run_all

FILE_IO_HELPERS = ("_move_home",)


def _move_home(home: Path, dest: Path) -> None:
    """Move one sealed run tree (<evidence>/<skill>/<arm>/<run-id>) whole; drop unsealed partial bundles."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(home), str(dest))
    for partial in dest.rglob(f"{plan.TMP_PREFIX}*"):
        shutil.rmtree(partial, ignore_errors=True)


def record_once(cfg: Config, items: list[plan.RunItem], opts: RunOptions, *, raw: Path, jobs: int,
                progress: TextIO | None) -> list[str]:
    """Run `items` once each and move their bundles under `raw`; returns one line per run that did not
    complete (they stay as incomplete evidence)."""
    if raw.exists():
        raise InputError("this session already has recorded runs; each arm runs exactly once", source=raw,
                         fix="choose a new --session")
    homes = sorted({plan.bundle_path(cfg, i).parent.parent for i in items})
    taken = [h for h in homes if h.exists()]
    if taken:
        raise InputError("the evidence tree already holds this session's run id", source=taken[0], fix="choose a new --session")
    adapter = get_adapter(opts.adapter, **opts.adapter_options)
    creds = tuple(adapter.credential_vars or ())
    if not opts.scripted and creds and not any(os.environ.get(v) for v in creds):
        print(f"release: no credential for {adapter.name} (none of {', '.join(creds)} is set): "
              "no arm recorded; the stage will be incomplete", file=sys.stderr)
        raw.mkdir(parents=True)
        return [f"absent credential for {adapter.name}"]
    adapter, info = preflight(cfg, opts)
    cur = freshness.current(cfg)
    outcomes = run_all(items, lambda item: run_item(cfg, item, opts, cur, adapter, info), jobs=jobs, progress=progress)
    raw.mkdir(parents=True)
    evidence = plan.evidence_root(cfg)
    for home in homes:  # sealed bundles only
        if home.exists():
            _move_home(home, raw / home.relative_to(evidence))
    return [f"{o.item.label}: {o.status} ({o.reason})" for o in outcomes if o.status != "complete"]
