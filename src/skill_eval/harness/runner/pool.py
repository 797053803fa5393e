"""Run many items in parallel with progress, resume and a clean stop.

Finished bundles are kept (resume skips them), leftovers of an interrupted run are
discarded before starting, and Ctrl-C stops scheduling new items while in-flight ones are
abandoned (their temp bundles are discarded on the next start), so an interrupted run
never leaves a half bundle that a later gate could read.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TextIO

from skill_eval.core.errors import SkillEvalError
from skill_eval.harness.runner import isolation
from skill_eval.harness.runner.execute import Outcome
from skill_eval.harness.runner.plan import RunItem


def run_all(items: list[RunItem], worker: Callable[[RunItem], Outcome], *, jobs: int = 1,
            progress: TextIO | None = sys.stderr) -> list[Outcome]:
    outcomes: list[Outcome] = []
    total = len(items)
    started = time.monotonic()
    pending = list(items)
    running: dict[Future[Outcome], RunItem] = {}

    def report(o: Outcome) -> None:
        outcomes.append(o)
        if progress is not None:
            elapsed = time.monotonic() - started
            eta = elapsed / len(outcomes) * (total - len(outcomes))
            tail = f" — {o.reason[:120]}" if o.reason else ""
            progress.write(f"[{len(outcomes)}/{total}] {o.status:10} {o.item.label} ({o.seconds:.1f}s, eta {eta:.0f}s){tail}\n")
            progress.flush()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        try:
            while pending or running:
                while pending and len(running) < max(1, jobs):
                    item = pending.pop(0)
                    running[pool.submit(worker, item)] = item
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    item = running.pop(fut)
                    try:
                        report(fut.result())
                    except SkillEvalError as exc:
                        report(Outcome(item, "error", str(exc), 0.0, None))
                    except Exception as exc:  # noqa: BLE001 - one broken run must not stop the suite
                        report(Outcome(item, "error", f"{type(exc).__name__}: {exc}", 0.0, None))
        except KeyboardInterrupt:
            isolation.kill_all()  # in-flight agents (and their subjects) must not outlive the run
            for fut in running:
                fut.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return outcomes
