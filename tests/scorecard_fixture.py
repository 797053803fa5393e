"""A synthetic multi-arm evidence tree built from this repository's committed (scripted) bundles.

Only the skill-agent arm is committed today, so every comparison on the real scorecard is
INDETERMINATE. This fixture copies those bundles into the other arms and edits what each arm
would really record, so every chart and every verdict path is exercised on graded bundles:

- abi-compat-review: baseline fails 8 of 11 scenarios (agent_error), an A/A replicate of the
  skill-agent arm identical to the main one (noise floor 0) -> LIFT; skill vs docs with docs
  failing 7 of 11 and reporting no cost (the price table prices it); baseline cheaper than the
  skill-agent arm (the cost gate fails); the 3 baseline-passing scenarios are saturated.
- abi-release-matrix: 4 of its 9 baseline runs are infra errors (503) -> ERROR.
- abi-consumer-impact: one baseline bundle still had the skill installed -> contaminated -> ERROR.
- trigger bundles copied as they are (activation chart).
"""

from __future__ import annotations

import json
from pathlib import Path

from skill_eval.core import stored

REPO = Path(__file__).resolve().parents[1]
EVIDENCE = REPO / "agent-evals" / "skills" / "evidence"
RUN = "claude-code-scripted"
COMPAT = "abi-compat-review"
MATRIX = "abi-release-matrix"
CONSUMER = "abi-consumer-impact"


def _load(p: Path):
    return json.loads(p.read_text())


def _dump(p: Path, value) -> None:
    p.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")


def _strip_skill(bundle: Path, skill: str, *, keep_installed: bool = False) -> None:
    """What a control arm records: the skill not installed, never activated, never read."""
    meta = _load(bundle / "meta.json")
    if not keep_installed:
        meta["extra"]["installed_skills"] = []
    meta["digests"] = {k: v for k, v in meta["digests"].items() if k != f"skill:{skill}"}
    meta["observed_inputs"] = [o for o in meta["observed_inputs"] if f"/{skill}/" not in o["path"]]
    if "arm_isolation" in meta:  # what the runner attests for a control arm: nothing of the skill discoverable or read
        meta["arm_isolation"] = {"discoverable": [] if not keep_installed else meta["arm_isolation"]["discoverable"],
                                 "read": []}
    _dump(bundle / "meta.json", meta)
    lines = (bundle / "events.jsonl").read_text().splitlines()
    skill_ids = {json.loads(line).get("id") for line in lines if json.loads(line).get("tool") == "Skill"}
    kept = [line for line in lines if json.loads(line).get("type") not in ("skill_activated", "skill_file_read")
            and json.loads(line).get("id") not in skill_ids]
    (bundle / "events.jsonl").write_text("".join(line + "\n" for line in kept))


def _edit_meta(bundle: Path, **changes) -> None:
    meta = _load(bundle / "meta.json")
    meta.update(changes)
    _dump(bundle / "meta.json", meta)


def _edit_usage(bundle: Path, **changes) -> None:
    usage = _load(bundle / "usage.json")
    usage.update(changes)
    _dump(bundle / "usage.json", usage)


def copy_arm(dest_root: Path, skill: str, arm: str, run_id: str = RUN) -> list[Path]:
    """Copy the committed skill-agent bundles of `skill` to `arm` (meta arm/run_id rewritten)."""
    out = []
    src_arm = EVIDENCE / skill / "skill-agent" / RUN
    for scenario_dir in sorted(src_arm.iterdir()):
        for kdir in sorted(scenario_dir.iterdir()):
            dest = dest_root / skill / arm / run_id / scenario_dir.name / kdir.name
            stored.materialize(kdir, dest)  # out of its evidence tree: every file plain (core.stored)
            _edit_meta(dest, arm=arm, run_id=run_id)
            out.append(dest)
    return out


def fail(bundle: Path, reason: str = "agent_error: the agent gave up without a verdict") -> None:
    """Mark a run failed as the runner would: status, reason and (meta v2) the outcome derived by the one rule."""
    from skill_eval.core import outcomes

    _edit_meta(bundle, status="error", status_reason=reason, outcome=outcomes.derive("error", reason))


def scenarios_of(bundles: list[Path]) -> list[str]:
    return sorted({b.parent.name for b in bundles})


def build(dest_root: Path) -> Path:
    """Write the synthetic evidence tree under dest_root and return it."""
    dest_root.mkdir(parents=True, exist_ok=True)
    for skill in (COMPAT, MATRIX, CONSUMER):
        copy_arm(dest_root, skill, "skill-agent")
    copy_arm(dest_root, COMPAT, "skill-agent", run_id=f"{RUN}-aa")  # A/A replicate

    base = copy_arm(dest_root, COMPAT, "baseline")
    failing = scenarios_of(base)[:8]
    for b in base:
        _strip_skill(b, COMPAT)
        _edit_usage(b, cost_usd=0.002)
        if b.parent.name in failing:
            fail(b)

    copy_arm(dest_root, COMPAT, "skill")
    docs = copy_arm(dest_root, COMPAT, "docs")
    for b in docs:
        _strip_skill(b, COMPAT)
        _edit_usage(b, cost_usd=None)
        if b.parent.name in scenarios_of(docs)[:7]:
            fail(b)

    matrix = copy_arm(dest_root, MATRIX, "baseline")
    for i, b in enumerate(matrix):
        _strip_skill(b, MATRIX)
        if i < 4:
            fail(b, "model_config: HTTP 503 Service Unavailable from the model endpoint")

    consumer = copy_arm(dest_root, CONSUMER, "baseline")
    for i, b in enumerate(consumer):
        _strip_skill(b, CONSUMER, keep_installed=(i == 0))

    for meta in sorted((EVIDENCE / "trigger").rglob("meta.json")):
        stored.materialize(meta.parent, dest_root / meta.parent.relative_to(EVIDENCE))
    return dest_root


def replicate(src_root: Path, dest_root: Path, copies: int) -> int:
    """`copies` run ids of every bundle under src_root (for timing the scorecard); returns the bundle count."""
    n = 0
    for meta in sorted(src_root.rglob("meta.json")):
        bundle = meta.parent
        rel = bundle.relative_to(src_root).parts
        for c in range(copies):
            run_id = f"r{c}-{rel[2]}"  # keeps an A/A run id's -aa suffix
            dest = dest_root.joinpath(rel[0], rel[1], run_id, *rel[3:])
            stored.materialize(bundle, dest)
            _edit_meta(dest, run_id=run_id)
            n += 1
    return n
