"""Bundles imported from another harness (`skill-eval import harbor`): their own verdict kept, the
dimensions nothing recorded for marked "not graded" — never a pass on evidence that is not there.

A Harbor trial records no subject calls, no event stream and no runner receipt (facts.json); its
task's verifier (interop/harbor_verifier.py, run inside Harbor) wrote a reward and per-check results,
which the import keeps in `harbor.json`. Grading such a bundle with the replay graders would fail every
call-based dimension for lack of calls — an infrastructure gap scored as a skill failure. Instead:
  - `harbor.json`'s `dimensions` names what the verifier graded (`oracle` or `claim`) and what it could
    not; the first becomes the `oracle` check (pass only on reward 1 with no verifier error; each failed
    verifier check is a reason), the rest are `not_applicable` with a note that starts "not graded";
  - the bundle passes only when that verifier check passes, and the release stage never counts it (it
    is unsigned and not runner evidence: `release_source_problem`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skill_eval.core import schemas, strict
from skill_eval.core.errors import SkillEvalError, message_of

if TYPE_CHECKING:
    from skill_eval.grading import bundle as bundle_mod
    from skill_eval.grading.graders import Check

ORIGINS = ("harbor",)
VERDICT_FILE = {"harbor": "harbor.json"}
GRADED_BY_VERIFIER = ("oracle", "claim")


def origin_of(meta: dict[str, Any] | None) -> str | None:
    """The foreign harness a bundle was imported from (meta.extra.origin), or None for a runner bundle."""
    origin = ((meta or {}).get("extra") or {}).get("origin")
    return origin if origin in ORIGINS else None


def grade(b: bundle_mod.Bundle, origin: str, make: type[Check]) -> dict[str, Check]:
    """The checks of an imported bundle, from its verdict file."""
    name = VERDICT_FILE[origin]
    try:
        verdict = schemas.validate(strict.loads_json(strict.decode_utf8(b.read_bytes(name), name), name), "import_verdict", name)
        if verdict["origin"] != origin:
            raise SkillEvalError(f"{name}: a verdict of origin {verdict['origin']!r} in a bundle imported from {origin!r}")
        if verdict["scenario"] != (b.meta or {}).get("scenario"):
            raise SkillEvalError(f"{name}: grades scenario {verdict['scenario']!r}, not the bundle's "
                                 f"{(b.meta or {}).get('scenario')!r}")
    except SkillEvalError as exc:
        return {"oracle": make("oracle", "fail", [f"imported from {origin}: {message_of(exc)}"])}
    checks: dict[str, Check] = {}
    reward, error = verdict.get("reward"), verdict.get("verifier_error")
    failed = [f"{origin} verifier check {k!r} failed: {v.get('reason', '')}".rstrip(": ")
              for k, v in sorted((verdict.get("checks") or {}).items()) if isinstance(v, dict) and v.get("passed") is not True]
    ok = isinstance(reward, (int, float)) and not isinstance(reward, bool) and reward >= 1.0 and not error and not failed
    reasons = [] if ok else (failed or [f"{origin} verifier reward {reward!r}" + (f" ({error})" if error else "")])
    checks["oracle"] = make("oracle", "pass" if ok else "fail", reasons)
    for dim, text in sorted(verdict["dimensions"].items()):
        if dim in GRADED_BY_VERIFIER or not isinstance(text, str):
            continue
        note = text if text.startswith("not graded") else f"not graded ({origin}): {text}"
        checks[dim] = make(dim, "not_applicable", [], note)
    return checks
