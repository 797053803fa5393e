"""The judge for dimensions 4 and 5 (off-CI): one blinded request per (bundle, dimension), stamped.

Why it looks like this:
- **Blinded.** The prompt is built from the scenario (request, ground truth, review questions)
  and the bundle's final.md only — never meta.json, the arm, the agent or the model — so a judge
  cannot favour the skill arm or a vendor. Its SHA-256 is stamped, so anyone can rebuild the
  prompt from the same files and check it.
- **Stamped.** Each entry records the judge model, skill-eval's version and transport, the
  rubric version and the digest of the rubric dimension, the prompt digest and the time;
  `pr` and `release` only replay entries (graders/judged.py), never re-judge.
- **No score on failure.** A transport error, a refusal or an answer that is not exactly
  `{"score": 0|0.5|1, "passed": bool, "rationale": str}` (passed iff score 1) writes nothing:
  an infrastructure failure must never become a 0 — or a 1.
Any OpenAI-style endpoint works (`--base-url`), and so does a scripted model server
(`--model-server scripted:PATH`, for tests); a scripted judge's entries say so in
`judge_model`, and the release flow never counts them as judged.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skill_eval import __version__
from skill_eval.content.config import Config
from skill_eval.content.evals import Rubric, Scenario
from skill_eval.core import formats, hashing, schemas, strict
from skill_eval.core.errors import SkillEvalError, message_of

JUDGED = (4, 5)
RUBRIC_DOMAIN = "skill-eval-rubric-dimension-v1"
TOOL = {"name": "submit_judgment", "description": "Submit the grade for this dimension.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["score", "passed", "rationale"],
                       "properties": {"score": {"enum": [0, 0.5, 1]}, "passed": {"type": "boolean"},
                                      "rationale": {"type": "string"}}}}


class JudgeError(SkillEvalError):
    """The judge could not produce a valid verdict: nothing is written."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str  # what is stamped as judge_model
    api_key: str | None = None
    timeout: float = 300.0
    transport: str = "openai-chat"


def rubric_dimension(rubric: Rubric, dim: int) -> dict[str, Any]:
    """The dimension as a plain record (its digest is stamped: a reworded prompt is a new rubric)."""
    import dataclasses

    for d in rubric.dimensions:
        if d.id == dim:
            return dataclasses.asdict(d)
    raise JudgeError(f"rubric.yaml has no dimension {dim}")


def build_prompt(dim_record: dict[str, Any], scenario: Scenario, truth: dict[str, Any] | None, final_md: str) -> str:
    """The blinded prompt: rubric text, the scenario, its ground truth and the answer. Nothing else."""
    questions = "\n".join(f"- {q}" for q in scenario.record.get("human_review_questions") or []) or "- (none)"
    facts = json.dumps(truth, sort_keys=True, indent=2) if truth is not None else "(no ground truth for this scenario)"
    return (f"{dim_record.get('judge_prompt') or dim_record['description']}\n\n"
            f"## The user's request\n{scenario.prompt.strip()}\n\n"
            f"## Ground truth for the fixture\n{facts}\n\n"
            f"## Human review questions\n{questions}\n\n"
            f"## The agent's final answer\n{final_md.strip()}\n\n"
            "Call submit_judgment, or answer with only the JSON object.")


def _post(ep: Endpoint, body: dict[str, Any]) -> Any:
    headers = {"Content-Type": "application/json"}
    if ep.api_key:
        headers["Authorization"] = f"Bearer {ep.api_key}"
    req = urllib.request.Request(ep.base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),  # noqa: S310
                                 headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=ep.timeout) as resp:  # noqa: S310 - the configured judge endpoint
            payload = resp.read()
    except urllib.error.HTTPError as exc:
        raise JudgeError(f"judge endpoint answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise JudgeError(f"cannot reach the judge endpoint ({exc})") from None
    try:
        return json.loads(payload)
    except ValueError:
        raise JudgeError("judge endpoint answered non-JSON") from None


def parse_verdict(data: Any) -> dict[str, Any]:
    """The judge's answer from a tool call or the message text; anything else is a JudgeError."""
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise JudgeError("judge reply has no choices[0].message") from None
    raw: Any = None
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        if fn.get("name") == TOOL["name"]:
            raw = fn.get("arguments")
    if raw is None:
        raw = (message.get("content") or "").strip()
        if raw.startswith("```"):
            raw = raw.strip("`").split("\n", 1)[-1]
    try:
        value = strict.loads_json(raw, "judge reply") if isinstance(raw, str) else raw
    except SkillEvalError:
        raise JudgeError("judge reply is not a JSON verdict") from None
    if not (isinstance(value, dict) and set(value) == {"score", "passed", "rationale"}):
        raise JudgeError("judge reply must be exactly {score, passed, rationale}")
    score, passed = value["score"], value["passed"]
    if isinstance(score, bool) or score not in (0, 0.5, 1) or not isinstance(passed, bool) or passed != (score == 1):
        raise JudgeError(f"judge reply is inconsistent (score {score!r}, passed {passed!r}; passed means score 1)")
    if not isinstance(value["rationale"], str):
        raise JudgeError("judge rationale is not text")
    return value


def judge_one(ep: Endpoint, rubric: Rubric, dim: int, scenario: Scenario, truth: dict[str, Any] | None, final_md: str,
              now: str | None = None) -> dict[str, Any]:
    d = rubric_dimension(rubric, dim)
    prompt = build_prompt(d, scenario, truth, final_md)
    body = {"model": ep.model, "temperature": 0, "messages": [{"role": "user", "content": prompt}],
            "tools": [{"type": "function", "function": TOOL}]}
    verdict = parse_verdict(_post(ep, body))
    return {"dimension": dim, "passed": verdict["passed"], "score": verdict["score"], "judge_model": ep.model,
            "judge_version": f"skill-eval {__version__} ({ep.transport})", "rubric_version": rubric.version,
            "rubric_sha256": hashing.record_digest(RUBRIC_DOMAIN, d), "prompt_sha256": hashing.sha256_bytes(prompt.encode()),
            "rationale": verdict["rationale"], "judged_at": now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def append(bundle: Path, entries: list[dict[str, Any]]) -> None:
    """Add entries to bundle/judgments.json (atomic; existing entries are kept — replay takes the latest)."""
    path = bundle / "judgments.json"
    if path.exists():
        doc = formats.upgrade(strict.load_json(path), "judgments", path)
        schemas.validate(doc, "judgments", path)
    else:
        doc = {"schema_version": formats.FORMATS["judgments"], "judgments": []}
    doc["judgments"] = [*doc["judgments"], *entries]
    schemas.validate(doc, "judgments", path)
    tmp = path.with_name(f".judgments.json.{os.getpid()}")
    tmp.write_text(strict.dumps_json(doc))
    os.replace(tmp, path)


@dataclass
class Judged:
    """What judging one bundle did: the entries appended (possibly none) and one line per failure."""

    bundle: Path
    entries: list[dict[str, Any]]
    failures: list[str]


def needs_judging(bundle: Path, rubric_version: str | None, dims: list[int]) -> bool:
    """True when any of `dims` has no replayable judgment for the current rubric (an unreadable file too)."""
    from skill_eval.grading.graders import judged

    doc = None
    if (bundle / "judgments.json").is_file():
        try:
            doc = strict.load_json(bundle / "judgments.json")
        except SkillEvalError:
            return True
    return any(judged.replay(doc, rubric_version, d)[0] == "not_judged" for d in dims)


def judge_bundle(cfg: Config, catalog: Any, ep: Endpoint, bundle: Path, dims: list[int]) -> Judged:
    """Judge `dims` of one behavioural bundle (blinded) and append what the judge answered.

    A failed request or a malformed verdict writes nothing for that dimension and is reported as a
    failure line; an infrastructure failure never becomes a score. `catalog` is a graders.Catalog.
    """
    import dataclasses

    try:
        meta = strict.load_json(bundle / "meta.json")
        scenario = catalog.scenarios.get(meta.get("scenario", "")) or catalog.golden.get(meta.get("scenario", ""))
        if meta.get("kind") != "behavioral" or scenario is None:
            raise JudgeError(f"not a behavioural bundle of a known scenario ({meta.get('scenario')!r})")
        truth = catalog.truth.get(scenario.fixture)
        truth_rec = dataclasses.asdict(truth) if dataclasses.is_dataclass(truth) and not isinstance(truth, type) else None
        final_md = strict.read_text(bundle / "final.md", max_bytes=cfg.max_bundle_file_bytes)
    except SkillEvalError as exc:
        return Judged(bundle, [], [f"FAIL {bundle}: {message_of(exc)}"])
    entries, failures = [], []
    for d in dims:
        try:
            entries.append(judge_one(ep, catalog.rubric, d, scenario, truth_rec, final_md))
        except JudgeError as exc:
            failures.append(f"FAIL {bundle} dimension {d}: {message_of(exc)}; no score written")
    if entries:
        append(bundle, entries)
    return Judged(bundle, entries, failures)
