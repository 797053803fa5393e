"""The judge for dimensions 4 and 5 (off-CI): one blinded request per (bundle, dimension), stamped.

Why it looks like this:
- **Blinded.** The prompt is built from the scenario (request, ground truth, review questions),
  the bundle's final.md and the JSON reports its recorded calls produced (the captured
  artifacts, digest-checked against calls.jsonl, as the rubric promises) — never meta.json, the arm, the agent or the model — so a judge
  cannot favour the skill arm or a vendor. Its SHA-256 is stamped, so anyone can rebuild the
  prompt from the same files and check it.
- **Stamped.** Each entry records the judge model, skill-eval's version and transport, the
  rubric version and the digest of the rubric dimension, the prompt digest and the time;
  `pr` and `release` only replay entries (graders/judged.py), never re-judge.
- **No score on failure.** A transport error, a refusal or an answer that is not exactly
  `{"score": 0|0.5|1, "passed": bool, "rationale": str}` (passed iff score 1) writes nothing:
  an infrastructure failure must never become a 0 — or a 1.
- **A panel.** Several judges (each blinded, each sent the same prompt) grade every item; an item
  is a pass or a fail only when they all agree and the dimension's agreement over the invocation
  (grading/agreement.py: Cohen's κ for two, Fleiss' κ for more) is not below the floor. Otherwise
  its entry says `needs_human_review` and is replayed as not judged — never a pass. If any judge
  fails on an item, nothing is written for it.
Any OpenAI-style endpoint works (`--base-url`), and so does a scripted model server
(`--model-server scripted:PATH`, for tests); a scripted judge's entries say so in
`judge_model`, and the release flow never counts them as judged.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skill_eval import __version__
from skill_eval.content.config import Config
from skill_eval.content.evals import Rubric, Scenario
from skill_eval.core import formats, hashing, schemas, strict
from skill_eval.core.errors import InputError, SkillEvalError, message_of
from skill_eval.grading import agreement

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

    @property
    def source(self) -> str:
        """Where this judge's model is served (judgments v3 `judge_source`): scripted, local-endpoint or remote:<host>."""
        if self.transport.startswith("scripted"):
            return "scripted"
        import ipaddress
        import urllib.parse

        host = (urllib.parse.urlsplit(self.base_url).hostname or "").strip("[]")
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost" or host.endswith(".localhost")
        return "local-endpoint" if loopback else f"remote:{host or 'unknown'}"


SOURCE_ORDER = ("scripted", "local-endpoint", "unrecorded")  # weakest first: a panel is as trusted as its weakest judge


def weakest_source(sources: list[str]) -> str:
    for s in SOURCE_ORDER:
        if s in sources:
            return s
    return sources[0]


def rubric_dimension(rubric: Rubric, dim: int) -> dict[str, Any]:
    """The dimension as a plain record (its digest is stamped: a reworded prompt is a new rubric)."""
    import dataclasses

    for d in rubric.dimensions:
        if d.id == dim:
            return dataclasses.asdict(d)
    raise JudgeError(f"rubric.yaml has no dimension {dim}")


def recorded_reports(bundle: Path, max_bytes: int) -> list[tuple[str, str]]:
    """(label, text) of every JSON report the bundle's recorded calls produced, read from the captured
    artifacts and checked against the digests in calls.jsonl (a changed artifact is a JudgeError)."""
    from skill_eval.grading import bundle as bundle_mod

    b = bundle_mod.load(bundle, max_bytes=max_bytes)
    out: list[tuple[str, str]] = []
    try:
        for call in b.calls:
            for o in call.outputs:
                if o.snapshot is None or o.format != "json":
                    continue
                parts = ([(o.snapshot, o.sha256)] if o.kind != "dir" else
                         [(f"{o.snapshot}/{name}", sha) for name, sha in sorted(o.files.items()) if name.endswith(".json")])
                for rel, sha in parts:
                    data = b.read_captured(rel, sha)
                    out.append((f"call {call.call}, {o.option} {o.requested}", data.decode("utf-8", "replace")))
    except SkillEvalError as exc:
        raise JudgeError(f"cannot read a recorded report: {message_of(exc)}") from None
    return out


def build_prompt(dim_record: dict[str, Any], scenario: Scenario, truth: dict[str, Any] | None, final_md: str,
                 reports: list[tuple[str, str]] | None = None) -> str:
    """The blinded prompt: rubric text, the scenario, its ground truth, the recorded reports and the answer."""
    shown = "\n\n".join(f"### {label}\n{text.strip()}" for label, text in reports or []) or "(the agent's calls recorded no JSON report)"
    questions = "\n".join(f"- {q}" for q in scenario.record.get("human_review_questions") or []) or "- (none)"
    facts = json.dumps(truth, sort_keys=True, indent=2) if truth is not None else "(no ground truth for this scenario)"
    return (f"{dim_record.get('judge_prompt') or dim_record['description']}\n\n"
            f"## The user's request\n{scenario.prompt.strip()}\n\n"
            f"## Ground truth for the fixture\n{facts}\n\n"
            f"## Human review questions\n{questions}\n\n"
            f"## The JSON reports the agent's recorded calls produced\n{shown}\n\n"
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
              now: str | None = None, reports: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    d = rubric_dimension(rubric, dim)
    prompt = build_prompt(d, scenario, truth, final_md, reports)
    body = {"model": ep.model, "temperature": 0, "messages": [{"role": "user", "content": prompt}],
            "tools": [{"type": "function", "function": TOOL}]}
    verdict = parse_verdict(_post(ep, body))
    return {"dimension": dim, "passed": verdict["passed"], "score": verdict["score"], "judge_model": ep.model,
            "judge_version": f"skill-eval {__version__} ({ep.transport})", "judge_source": ep.source, "rubric_version": rubric.version,
            "rubric_sha256": hashing.record_digest(RUBRIC_DOMAIN, d), "prompt_sha256": hashing.sha256_bytes(prompt.encode()),
            "rationale": verdict["rationale"], "judged_at": now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def append(bundle: Path, entries: list[dict[str, Any]], key: Path | None = None) -> None:
    """Add entries to bundle/judgments.json (atomic; existing entries are kept — replay takes the latest),
    then re-sign the file with `key` (grading/judgments.py; None: unsigned, so no gate counts it)."""
    from skill_eval.grading import judgments

    path = bundle / judgments.JUDGMENTS
    found = judgments.read_judgments(bundle, (), fixture=True)  # the one parser; the writer extends what is there
    if found.state == "invalid":
        raise InputError(found.reason or "cannot be read", source=path, fix="move the broken file away, then judge again")
    doc = found.doc or {"schema_version": formats.FORMATS["judgments"], "judgments": []}
    doc["judgments"] = [*doc["judgments"], *entries]
    schemas.validate(doc, "judgments", path)
    tmp = path.with_name(f".judgments.json.{os.getpid()}")
    tmp.write_text(strict.dumps_json(doc))
    os.replace(tmp, path)
    judgments.sign(bundle, key)


@dataclass
class Judged:
    """What judging one bundle did: the entries appended (possibly none), one line per failure and
    one line per item the panel left for a human."""

    bundle: Path
    entries: list[dict[str, Any]]
    failures: list[str]
    review: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Agreement:
    """A dimension's panel agreement over one invocation."""

    dimension: int
    statistic: str  # cohen | fleiss
    kappa: float | None
    items: int
    floor: float

    @property
    def low(self) -> bool:
        return self.kappa is not None and self.kappa < self.floor

    def record(self) -> dict[str, Any]:
        return {"statistic": self.statistic, "kappa": self.kappa, "items": self.items, "floor": self.floor}


def needs_judging(bundle: Path, rubric_version: str | None, dims: list[int], signers: Any = ()) -> bool:
    """True when any of `dims` has no replayable judgment that counts for the current rubric (an unreadable,
    unsigned or foreign file too: grading/judgments.py)."""
    from skill_eval.grading import judgments
    from skill_eval.grading.graders import judged

    doc = judgments.read_judgments(bundle, signers).doc
    return any(judged.replay(doc, rubric_version, d)[0] == "not_judged" for d in dims)


def _inputs(cfg: Config, catalog: Any, bundle: Path) -> tuple[Scenario, dict[str, Any] | None, str, list[tuple[str, str]]]:
    import dataclasses

    meta = strict.load_json(bundle / "meta.json")
    scenario = catalog.scenarios.get(meta.get("scenario", "")) or catalog.golden.get(meta.get("scenario", ""))
    if meta.get("kind") != "behavioral" or scenario is None:
        raise JudgeError(f"not a behavioural bundle of a known scenario ({meta.get('scenario')!r})")
    truth = catalog.truth.get(scenario.fixture)
    truth_rec = dataclasses.asdict(truth) if dataclasses.is_dataclass(truth) and not isinstance(truth, type) else None
    final_md = strict.read_text(bundle / "final.md", max_bytes=cfg.max_bundle_file_bytes)
    return scenario, truth_rec, final_md, recorded_reports(bundle, cfg.max_bundle_file_bytes)


def panel_name(eps: list[Endpoint]) -> str:
    """The stamped judge_model of a panel entry; a panel with any scripted judge is itself scripted."""
    name = " + ".join(ep.model for ep in eps)
    return name if len(eps) == 1 or not any(ep.model.startswith("scripted:") for ep in eps) else "scripted:panel " + name


def judge_panel(cfg: Config, catalog: Any, eps: list[Endpoint], bundles: list[Path], dims: list[int],
                floor: float = 0.6) -> tuple[list[Judged], dict[int, Agreement]]:
    """Judge `dims` of each bundle with every judge of the panel, measure agreement per dimension,
    then append one entry per (bundle, dimension) that every judge answered.

    A failed request or a malformed verdict from any judge writes nothing for that item (a failure
    line); an infrastructure failure never becomes a score. With one judge the entry is that judge's
    verdict, as before; with more, an item the judges disagree on, or of a dimension whose κ is below
    `floor`, is written with `needs_human_review` (replayed as not judged, never a pass).
    """
    votes: dict[tuple[int, int], list[dict[str, Any]]] = {}
    results: list[Judged] = []
    for n, bundle in enumerate(bundles):
        result = Judged(bundle, [], [])
        results.append(result)
        try:
            scenario, truth, final_md, reports = _inputs(cfg, catalog, bundle)
        except SkillEvalError as exc:
            result.failures.append(f"FAIL {bundle}: {message_of(exc)}")
            continue
        for d in dims:
            try:
                votes[(n, d)] = [judge_one(ep, catalog.rubric, d, scenario, truth, final_md, reports=reports) for ep in eps]
            except JudgeError as exc:
                result.failures.append(f"FAIL {bundle} dimension {d}: {message_of(exc)}; no score written")
    agreements: dict[int, Agreement] = {}
    if len(eps) > 1:
        for d in dims:
            table = [[e["score"] for e in v] for (_, dim), v in sorted(votes.items()) if dim == d]
            stat, k = agreement.kappa(table)
            agreements[d] = Agreement(d, stat, k, len(table), floor)
    for (n, d), v in sorted(votes.items()):
        entry = v[0] if len(eps) == 1 else _panel_entry(eps, v, agreements[d])
        results[n].entries.append(entry)
        if "needs_human_review" in entry:
            results[n].review.append(f"needs human review {results[n].bundle} dimension {d}: {entry['needs_human_review']}")
    from skill_eval.core import seal

    key = seal.signing_key(repo=cfg.root)
    for r in results:
        if r.entries:
            append(r.bundle, r.entries, key)
    return results, agreements


def _panel_entry(eps: list[Endpoint], votes: list[dict[str, Any]], agree: Agreement) -> dict[str, Any]:
    scores = [e["score"] for e in votes]
    first = votes[0]
    entry = {k: first[k] for k in ("dimension", "judge_version", "rubric_version", "rubric_sha256", "prompt_sha256", "judged_at")}
    entry["judge_model"] = panel_name(eps)
    entry["judge_source"] = weakest_source([e["judge_source"] for e in votes])
    entry["panel"] = [{k: e[k] for k in ("judge_model", "judge_version", "score", "passed", "rationale", "prompt_sha256")} for e in votes]
    entry["agreement"] = agree.record()
    split = len(set(scores)) > 1
    reason = (f"the panel disagrees (scores {scores})" if split else
              f"{agree.statistic} kappa {agree.kappa:.3f} over {agree.items} item(s) is below the floor {agree.floor}" if agree.low else None)
    entry["score"] = min(scores)
    entry["passed"] = reason is None and all(e["passed"] for e in votes)
    entry["rationale"] = "\n".join(f"[{e['judge_model']}] {e['rationale']}" for e in votes)
    if reason is not None:
        entry["needs_human_review"] = reason
    return entry
