"""skill-creator's evals (`evals/evals.json` + a trigger-eval set) mapped onto our content.

What maps, and how:
- the trigger-eval set (`[{"query", "should_trigger"}]`, or `{"evals": [{"prompt"|"query",
  "should_trigger"}]}`) becomes trigger-corpus prompts: should_trigger true -> expected_skill
  <skill>; false -> expected_skill null (our corpus means "no skill claims it": relabel a
  near-miss that belongs to another skill);
- each eval of evals.json becomes a *draft* scenario record staged in
  `<evals>/imported-scenarios.yaml` (prompt, its input files copied into
  `fixtures/<scenario>/`, its expectations as human review questions), keeping the original
  eval verbatim under `imported` so nothing is lost and `to_evals_json` gives it back.

OpenAI's skills (openai/skills) keep one evaluation per file in `<skill>/evaluations/*.json`:
`{"name", "skills", "query", "context"?, "expected_behavior": [...], "success_criteria": [...]}`.
Each `query` becomes a trigger-corpus positive for the skill and a draft scenario (the query,
with its context, as the prompt; expected_behavior and success_criteria as human review
questions), the file kept verbatim under `imported` (format `openai-evaluation`).

What does not map, reported per eval: `expected_output` and `expectations` are judged
free text, not deterministic oracles; a scenario also needs a ground-truth case and an
invocation class (or a command oracle) before it can move into scenarios.yaml and run.
Both spellings of the assertion list (`expectations`, agentskills.io's `assertions`) are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.core import strict
from skill_eval.core.errors import InputError

STAGED = "imported-scenarios.yaml"
_ID_RE = re.compile(r"[^a-z0-9]+")


@dataclass
class Report:
    mapped: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)


def slug(text: str, limit: int = 64) -> str:
    s = _ID_RE.sub("-", str(text).lower()).strip("-")
    return (s or "x")[:limit].rstrip("-")


def load_evals(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """(skill_name, evals) from an evals.json, strictly."""
    doc = strict.load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("evals"), list):
        raise InputError("is not a skill-creator evals.json (an object with an `evals` list)", source=path)
    skill = doc.get("skill_name")
    if not isinstance(skill, str) or not skill:
        raise InputError("has no `skill_name`", source=path, fix="add \"skill_name\": \"<skill>\" or pass --skill")
    for i, ev in enumerate(doc["evals"]):
        if not isinstance(ev, dict) or not isinstance(ev.get("prompt"), str) or not ev["prompt"].strip():
            raise InputError(f"evals[{i}] has no non-empty `prompt`", source=path)
        if "id" not in ev:
            raise InputError(f"evals[{i}] has no `id`", source=path)
    return skill, doc["evals"]


def is_trigger_set(doc: Any) -> bool:
    items = doc.get("evals") if isinstance(doc, dict) else doc
    return isinstance(items, list) and bool(items) and all(isinstance(i, dict) and "should_trigger" in i for i in items)


def load_trigger_set(path: Path) -> list[tuple[str, bool]]:
    """(query, should_trigger) pairs from either documented trigger-eval format."""
    doc = strict.load_json(path)
    if not is_trigger_set(doc):
        raise InputError("is not a trigger-eval set ([{\"query\", \"should_trigger\"}] or {\"evals\": [...]})", source=path)
    out = []
    for i, item in enumerate(doc["evals"] if isinstance(doc, dict) else doc):
        query = item.get("query", item.get("prompt"))
        if not isinstance(query, str) or not query.strip() or not isinstance(item["should_trigger"], bool):
            raise InputError(f"item {i} needs a non-empty `query` (or `prompt`) and a boolean `should_trigger`", source=path)
        out.append((query, item["should_trigger"]))
    return out


def trigger_prompts(skill: str, pairs: list[tuple[str, bool]], report: Report) -> list[dict[str, Any]]:
    out = []
    for n, (query, should) in enumerate(pairs, 1):
        pid = slug(f"{skill}-trigger-{n}")
        out.append({"id": pid, "prompt": query, "expected_skill": skill if should else None})
        report.mapped.append(f"trigger {n}: {pid} (expected_skill: {skill if should else 'null'})")
    if any(not s for _, s in pairs):
        report.unmapped.append("should_trigger: false became expected_skill: null (no skill claims it); "
                               "relabel any that belong to another of your skills")
    return out


def scenario_records(skill: str, evals: list[dict[str, Any]], skill_dir: Path | None, fixtures: Path,
                     report: Report) -> tuple[list[dict[str, Any]], dict[str, list[tuple[Path, str]]]]:
    """Draft scenario records and, per scenario, the input files to copy into its fixture."""
    records, copies = [], {}
    for ev in evals:
        sid = slug(f"{skill}-eval-{ev['id']}")
        assertions = ev.get("expectations", ev.get("assertions", []))
        rec: dict[str, Any] = {"id": sid, "skill": skill, "status": "draft", "prompt": ev["prompt"]}
        if assertions:
            rec["human_review_questions"] = [str(a) for a in assertions]
        files = [str(f) for f in ev.get("files", [])]
        if files:
            rec["fixture"] = sid
            todo = []
            for f in files:
                src = (skill_dir / f) if skill_dir is not None else Path(f)
                if src.is_file() and not src.is_symlink():
                    todo.append((src, Path(f).name))
                else:
                    report.unmapped.append(f"eval {ev['id']}: input file {f} not found (fixture {fixtures.name}/{sid}/ lacks it)")
            copies[sid] = todo
        rec["imported"] = {"format": "evals-json", "eval": ev}
        records.append(rec)
        report.mapped.append(f"eval {ev['id']}: draft scenario {sid}" + (f" with fixture {sid}/" if files else ""))
        why = []
        if ev.get("expected_output"):
            why.append("expected_output is judged prose (kept under `imported`)")
        if assertions:
            why.append(f"{len(assertions)} expectation(s) are judged free text, kept as human review questions, "
                       "not deterministic oracles")
        why.append("needs a ground-truth case and invocation class, or actions + a command oracle, to run")
        report.unmapped.append(f"eval {ev['id']} ({sid}): " + "; ".join(why))
    return records, copies


def to_evals_json(skill: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The skill-creator evals.json these staged records came from (the round trip)."""
    evals = [r["imported"]["eval"] for r in records
             if r.get("skill") == skill and r.get("imported", {}).get("format") == "evals-json"]
    return {"skill_name": skill, "evals": evals}


OPENAI_DIR = "evaluations"


def is_openai_evaluation(doc: Any) -> bool:
    """An OpenAI skills evaluation: an object with a `query` and an `expected_behavior` list."""
    return isinstance(doc, dict) and isinstance(doc.get("query"), str) and isinstance(doc.get("expected_behavior"), list)


def openai_evaluation_files(path: Path) -> list[Path]:
    """The OpenAI evaluation files PATH names: a skill folder's evaluations/*.json, that folder, or one file."""
    if path.is_dir():
        folder = path if path.name == OPENAI_DIR else path / OPENAI_DIR
        return sorted(p for p in folder.glob("*.json") if p.is_file() and not p.is_symlink()) if folder.is_dir() else []
    if path.suffix == ".json" and path.is_file() and path.name != "evals.json":
        return [path] if is_openai_evaluation(strict.load_json(path)) else []
    return []


def openai_skill_dir(files: list[Path]) -> Path:
    """The skill folder of evaluation files (<skill>/evaluations/x.json)."""
    parent = files[0].parent
    return parent.parent if parent.name == OPENAI_DIR else parent


def load_openai_evaluations(skill: str, files: list[Path], report: Report) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(trigger prompts, draft scenario records) from OpenAI evaluation files, strictly."""
    prompts: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for path in files:
        doc = strict.load_json(path)
        if not is_openai_evaluation(doc) or not doc["query"].strip():
            raise InputError("is not an OpenAI skills evaluation (an object with a non-empty `query` and an "
                             "`expected_behavior` list)", source=path,
                             fix="pass a skill folder with evaluations/*.json, or one such file")
        checks = [str(x) for x in doc["expected_behavior"]] + [str(x) for x in doc.get("success_criteria") or []]
        sid = slug(f"{skill}-eval-{doc.get('name') or path.stem}")
        prompt = doc["query"] + (f"\n\nContext: {doc['context']}" if isinstance(doc.get("context"), str) and doc["context"] else "")
        rec: dict[str, Any] = {"id": sid, "skill": skill, "status": "draft", "prompt": prompt}
        if checks:
            rec["human_review_questions"] = checks
        rec["imported"] = {"format": "openai-evaluation", "file": path.name, "eval": doc}
        records.append(rec)
        pid = slug(f"{skill}-query-{doc.get('name') or path.stem}")
        prompts.append({"id": pid, "prompt": doc["query"], "expected_skill": skill})
        report.mapped.append(f"{path.name}: trigger prompt {pid} (expected_skill: {skill}) and draft scenario {sid}")
        report.unmapped.append(f"{path.name} ({sid}): expected_behavior and success_criteria are judged free text, kept as "
                               "human review questions, not deterministic oracles; needs a ground-truth case and invocation "
                               "class, or actions + a command oracle, to run")
    return prompts, records
