"""The claim envelope (DESIGN §9.1): the one typed statement a grader checks.

A verdict in prose ("ABI-compatible but source-breaking") cannot be graded without a
regex that both misses false greens and rejects right answers, so the agent must end
with exactly one fenced block tagged `skill-eval-claim` holding strict JSON. Anything
else — no block, two blocks, bad JSON, an unknown key, a verdict outside the subject's
vocabulary — is an explicit non-claim (absent / ambiguous / invalid), which fails
dimension 6 closed. A quoted report (a ```json block, a block inside another fence or
inside a block quote) is not an envelope: only a top-level fence whose info string is
exactly `skill-eval-claim` counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skill_eval.content.config import SubjectProfile
from skill_eval.core import schemas, strict
from skill_eval.core.errors import SkillEvalError, message_of
from skill_eval.core.vocab import ClaimStatus, TargetState

TAG = "skill-eval-claim"
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Target:
    """One target's line of a claim envelope: its state, its verdict and the calls cited as evidence."""

    name: str
    state: TargetState
    verdict: str | None
    evidence: tuple[int, ...]


@dataclass(frozen=True)
class Claim:
    """The claim envelope the agent's final message carries, as parsed."""

    verdict: str | None
    confident: bool
    kind: str | None
    unresolved: tuple[str, ...]
    evidence: tuple[int, ...]
    consumer_verdict: str | None
    has_consumer_verdict: bool
    targets: tuple[Target, ...] | None
    raw: dict[str, Any]

    def all_cited(self) -> tuple[int, ...]:
        """Every call number the claim cites, top level and per matrix target."""
        ids = list(self.evidence)
        for t in self.targets or ():
            ids.extend(t.evidence)
        return tuple(sorted(set(ids)))


@dataclass(frozen=True)
class ClaimResult:
    """What extracting the claim from a final message found: a status, the claim (if any) and why."""

    status: ClaimStatus
    claim: Claim | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_file(self) -> dict[str, Any]:
        """The claim.json a runner writes for this result."""
        if self.claim is not None:
            return {"status": "ok", "claim": self.claim.raw}
        return {"status": self.status, "reason": self.reason}


def find_envelopes(text: str) -> tuple[list[str], list[str]]:
    """Bodies of top-level `skill-eval-claim` fences, and problems (unterminated fences)."""
    bodies: list[str] = []
    problems: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(2), m.group(3).strip()
        if fence[0] == "`" and "`" in info:
            i += 1  # not a fence opener (CommonMark: backtick info strings may not contain backticks)
            continue
        closer = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        j = i + 1
        while j < len(lines) and not closer.match(lines[j]):
            j += 1
        is_envelope = info.split()[0] == TAG if info else False
        if is_envelope:
            if j >= len(lines):
                problems.append(f"the {TAG} block opened on line {i + 1} is never closed")
            else:
                bodies.append("\n".join(lines[i + 1 : j]))
        i = j + 1
    return bodies, problems


def extract(text: str | None, subject: SubjectProfile) -> ClaimResult:
    """Parse final.md into a claim or an explicit non-claim. Never raises."""
    if text is None:
        return ClaimResult("absent", None, "final.md is missing or unreadable")
    try:
        bodies, problems = find_envelopes(text)
    except RecursionError:  # pragma: no cover - defensive
        return ClaimResult("invalid", None, "final.md could not be scanned")
    if problems:
        return ClaimResult("invalid", None, problems[0])
    if not bodies:
        return ClaimResult("absent", None, f"final.md has no ```{TAG} block")
    if len(bodies) > 1:
        return ClaimResult("ambiguous", None, f"final.md has {len(bodies)} ```{TAG} blocks; exactly one is allowed")
    return parse_body(bodies[0], subject)


def parse_body(body: str, subject: SubjectProfile) -> ClaimResult:
    try:
        value = strict.loads_json(body, "claim envelope")
    except SkillEvalError as exc:
        return ClaimResult("invalid", None, message_of(exc))
    return from_value(value, subject)


def from_value(value: Any, subject: SubjectProfile) -> ClaimResult:
    """Validate a parsed envelope against schemas/claim.schema.json and the subject vocabulary."""
    errs = schemas.errors(value, "claim")
    if errs:
        return ClaimResult("invalid", None, f"envelope does not match schemas/claim.schema.json: {errs[0]}")
    vocab = set(subject.verdicts)
    checks = [("verdict", value["verdict"]), ("consumer_verdict", value.get("consumer_verdict"))]
    for t in (value.get("matrix") or {}).get("targets", []):
        checks.append((f"matrix target {t['name']!r} verdict", t["verdict"]))
    for where, v in checks:
        if v is not None and v not in vocab:
            return ClaimResult("invalid", None, f"{where} {v!r} is not in the subject vocabulary ({', '.join(subject.verdicts)})")
    names = [t["name"] for t in (value.get("matrix") or {}).get("targets", [])]
    if len(names) != len(set(names)):
        return ClaimResult("invalid", None, "matrix names a target twice")
    unc = value.get("uncertainty")
    targets = None
    if "matrix" in value:
        targets = tuple(Target(t["name"], t["state"], t["verdict"], tuple(t["evidence"])) for t in value["matrix"]["targets"])
    claim = Claim(
        verdict=value["verdict"],
        confident=value["confident"],
        kind=unc["kind"] if unc else None,
        unresolved=tuple(unc["unresolved"]) if unc else (),
        evidence=tuple(value["evidence"]),
        consumer_verdict=value.get("consumer_verdict"),
        has_consumer_verdict="consumer_verdict" in value,
        targets=targets,
        raw=value,
    )
    return ClaimResult("ok", claim, "")


def check_claim_file(claim_file: dict[str, Any] | None, parsed: ClaimResult) -> str | None:
    """Why claim.json disagrees with the re-parse of final.md, or None when they agree."""
    if claim_file is None:
        return "claim.json is missing or unreadable"
    if claim_file.get("status") != parsed.status:
        return f"claim.json says status {claim_file.get('status')!r} but final.md parses as {parsed.status!r}"
    if parsed.ok and claim_file.get("claim") != parsed.claim.raw:  # type: ignore[union-attr]  # parsed.ok: claim is set
        return "claim.json's claim differs from the envelope in final.md"
    return None
