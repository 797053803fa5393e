"""The mutation classes of the re-signed mutants (issue 34 item 7; run and judged by `grading.mutants`).

Each class changes one recorded fact of a bundle's logical files — an event kind or field, a call's argv,
status or digest, a captured report's field (re-digested in calls.jsonl), a meta or usage field — and names the
`grading.readers` fact it changes. A graded class changes a fact some check reads, so its mutant must be caught;
an informational class changes what no check needs (with the reason), and is run to show that. A class returns
None for a bundle it does not apply to (a control-arm change on a skill-agent bundle, a report change on a
bundle without one). Pure: bytes in, bytes out.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import hashing, strict
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading import isolation, readers
from skill_eval.grading.graders import artifacts

Files = dict[str, bytes]


@dataclass
class Source:
    """One committed bundle, copied out plain: its logical files (seal removed) and what they parse to."""

    rel: str
    files: Files
    meta: dict[str, Any]
    events: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    cfg: Config

    def with_meta(self, meta: dict[str, Any]) -> Files:
        return {**self.files, "meta.json": strict.dumps_json(meta).encode()}

    def with_events(self, events: list[dict[str, Any]]) -> Files:
        return {**self.files, "events.jsonl": _jsonl(events)}

    def with_calls(self, calls: list[dict[str, Any]], extra: Files | None = None) -> Files:
        return {**self.files, **(extra or {}), "calls.jsonl": _jsonl(calls)}

    @property
    def control(self) -> bool:
        return isolation.is_control(self.meta.get("arm"))

    def installed(self) -> list[str] | None:
        got = (self.meta.get("extra") or {}).get("installed_skills")
        return got if isinstance(got, list) else None


def _jsonl(rows: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r, sort_keys=True).encode() + b"\n" for r in rows)


Mutate = Callable[[Source], "Files | None"]


@dataclass(frozen=True)
class MutationClass:
    """A kind of change to one recorded fact: graded (must be caught) or informational (with its reason)."""

    name: str
    fact: str  # the grading.readers key of the fact it changes
    graded: bool
    why: str
    make: Mutate


# ----------------------------------------------------------------------------- mutations

STRAY_SKILL = "a-skill-nobody-installed"


def _add_event(event: dict[str, Any]) -> Mutate:
    return lambda s: s.with_events([*s.events, event])


def _stop_kind_error(s: Source) -> Files | None:
    """The cut-off stream's run_error, in a run the runner did not stop (in one it stopped, the stop is sealed in
    meta and usage: a cut-off stream is then the recorded fact, not a change of it)."""
    if (s.meta.get("extra") or {}).get("stopped_on_activation") is True:
        return None
    return s.with_events([*s.events, {"type": "run_error", "reason": "incomplete_stream: no result event"}])


def _first_activation(s: Source) -> dict[str, Any] | None:
    return next((e for e in s.events if e.get("type") == "skill_activated"), None)


def _expects_activation(s: Source) -> str | None:
    """The skill whose activation this bundle's verdict depends on: the expected skill of a trigger positive, or
    a tier-1 adapter's skill-agent scenario skill; None when no check demands one."""
    if s.meta.get("kind") == "trigger":
        first = _first_activation(s)
        return str(first["skill"]) if first is not None and s.meta.get("prompt_id") else None
    if s.meta.get("adapter_tier") == "1" and s.meta.get("arm") == "skill-agent":
        return str(s.meta.get("skill"))
    return None


def _drop_activations(s: Source) -> Files | None:
    want = _expects_activation(s)
    if want is None or not any(e.get("type") == "skill_activated" and e.get("skill") == want for e in s.events):
        return None
    return s.with_events([e for e in s.events if not (e.get("type") == "skill_activated" and e.get("skill") == want)])


def _tier_two(s: Source) -> Files | None:
    want = _expects_activation(s)
    if want is None or s.meta.get("adapter_tier") != "1":
        return None
    hit = [e for e in s.events if e.get("type") == "skill_activated" and e.get("skill") == want and e.get("tier") == "1"]
    if not hit:
        return None
    return s.with_events([{**e, "tier": "2"} if e.get("type") == "skill_activated" else e for e in s.events])


def _activate_other_installed(s: Source) -> Files | None:
    """A trigger run activating a second installed skill besides the one it activated (or any, for a negative)."""
    if s.meta.get("kind") != "trigger":
        return None
    first = _first_activation(s)
    others = [k for k in s.installed() or () if first is None or k != first.get("skill")]
    return s.with_events([*s.events, {"type": "skill_activated", "skill": others[0], "tier": "1"}]) if others else None


def _control_activation(s: Source) -> Files | None:
    if not s.control:
        return None
    return s.with_events([*s.events, {"type": "skill_activated", "skill": s.meta.get("skill"), "tier": "1"}])


def _control_tool_call(s: Source) -> Files | None:
    if not s.control:
        return None
    call = {"type": "tool_call", "id": "mutant", "tool": "Bash", "input": {"command": f"cat {s.meta.get('skill')}/SKILL.md"}}
    return s.with_events([*s.events, call])


def _edit_events(kind: str, key: str, value: Any) -> Mutate:
    def make(s: Source) -> Files | None:
        if not any(e.get("type") == kind for e in s.events):
            return None
        return s.with_events([{**e, key: value} if e.get("type") == kind else e for e in s.events])
    return make


def _meta_edit(edit: Callable[[dict[str, Any]], bool]) -> Mutate:
    def make(s: Source) -> Files | None:
        meta = copy.deepcopy(s.meta)
        return s.with_meta(meta) if edit(meta) else None
    return make


def _set(path: str, value: Any, *, when: Callable[[dict[str, Any]], bool] = lambda m: True) -> Mutate:
    def edit(meta: dict[str, Any]) -> bool:
        *parents, last = path.split(".")
        cur = meta
        for p in parents:
            if not isinstance(cur.get(p), dict):
                return False
            cur = cur[p]
        if not when(meta) or cur.get(last) == value:
            return False
        cur[last] = value
        return True
    return _meta_edit(edit)


def _other_scenario(s: Source) -> Files | None:
    if s.meta.get("kind") != "behavioral":
        return None
    from skill_eval.content.evals import load_scenarios

    others = sorted(sc.id for sc in load_scenarios(s.cfg) if sc.id != s.meta.get("scenario") and sc.skill == s.meta.get("skill"))
    return s.with_meta({**s.meta, "scenario": others[0]}) if others else None


def _stale_digest(s: Source) -> Files | None:
    digests = dict(s.meta.get("digests") or {})
    if not digests:
        return None
    key = sorted(digests)[0]
    digests[key] = "0" * 64 if digests[key] != "0" * 64 else "1" * 64
    return s.with_meta({**s.meta, "digests": digests})


def _uninstall_tested(s: Source) -> Files | None:
    installed = s.installed()
    if installed is None or s.meta.get("skill") not in installed or _first_activation(s) is None:
        return None
    extra = {**s.meta["extra"], "installed_skills": [k for k in installed if k != s.meta.get("skill")]}
    return s.with_meta({**s.meta, "extra": extra})


def _control_attested(field_name: str) -> Mutate:
    def make(s: Source) -> Files | None:
        attested = s.meta.get("arm_isolation")
        if not s.control or not isinstance(attested, dict):
            return None
        bumped = {**attested, field_name: [*attested.get(field_name, []), f"{s.meta.get('skill')}/SKILL.md"]}
        return s.with_meta({**s.meta, "arm_isolation": bumped})
    return make


def _control_unattested(s: Source) -> Files | None:
    if not s.control or s.installed() is None:
        return None
    return s.with_meta({**s.meta, "extra": {k: v for k, v in s.meta["extra"].items() if k != "installed_skills"}})


def _changed_side(s: Source) -> Files | None:
    """The run changed a file the evidence call read (meta sandbox.changed names an input of a complete call)."""
    paths = [i["path"] for c in s.calls if c.get("status") == "complete" for i in c.get("inputs") or ()
             if i.get("kind") == "file" and not str(i.get("path", "")).startswith("<")]
    if not paths or not isinstance(s.meta.get("sandbox"), dict):
        return None
    sandbox = {**s.meta["sandbox"], "changed": sorted({*s.meta["sandbox"].get("changed", []), paths[0]})}
    return s.with_meta({**s.meta, "sandbox": sandbox})


# -- calls and reports


def _evidence_call(s: Source) -> int | None:
    """The index of the first complete call with inputs and a report output: the evidence a claim cites."""
    for i, c in enumerate(s.calls):
        if c.get("status") == "complete" and c.get("inputs") and any(o.get("snapshot") for o in c.get("outputs") or ()):
            return i
    return None


def _call_edit(edit: Callable[[dict[str, Any]], bool]) -> Mutate:
    def make(s: Source) -> Files | None:
        i = _evidence_call(s)
        if i is None:
            return None
        calls = copy.deepcopy(s.calls)
        return s.with_calls(calls) if edit(calls[i]) else None
    return make


def _flip_exit(c: dict[str, Any]) -> bool:
    c["exit_code"] = 0 if c.get("exit_code") != 0 else 4
    return True


def _inputs_digest(c: dict[str, Any]) -> bool:
    for i in c.get("inputs") or ():
        if bundle_mod.is_sha256(i.get("sha256")):
            i["sha256"] = "0" * 64 if i["sha256"] != "0" * 64 else "1" * 64
            return True
    return False


def _unstable(c: dict[str, Any]) -> bool:
    for i in c.get("inputs") or ():
        if i.get("stable") is True:
            i["stable"] = False
            return True
    return False


def _stream_digest(name: str) -> Callable[[dict[str, Any]], bool]:
    def edit(c: dict[str, Any]) -> bool:
        ref = c.get(name)
        if not isinstance(ref, dict) or not bundle_mod.is_sha256(ref.get("sha256")):
            return False
        ref["sha256"] = "0" * 64 if ref["sha256"] != "0" * 64 else "1" * 64
        return True
    return edit


def _argv0(c: dict[str, Any]) -> bool:
    c["argv"] = ["cat", *c["argv"][1:]]
    return True


def _drop_output_request(c: dict[str, Any]) -> bool:
    """argv no longer asks for the output the record says it captured (the report's request removed)."""
    out = next((o for o in c.get("outputs") or () if o.get("option")), None)
    argv = list(c["argv"])
    if out is None or out["option"] not in argv:
        return False
    j = argv.index(out["option"])
    if any(i.get("arg", -1) > j for i in c.get("inputs") or ()):
        return False  # removing the tokens would renumber operands: another class's change
    c["argv"] = argv[:j] + argv[j + 2:]
    return True


def _swap_operands(c: dict[str, Any]) -> bool:
    """The first two digested operands exchanged in argv, each input entry following its operand: the call
    now says it compared new against old, while its report still says old against new."""
    files = [i for i in c.get("inputs") or () if i.get("kind") == "file" and bundle_mod.is_sha256(i.get("sha256"))]
    if len(files) < 2:
        return False
    a, b = files[0]["arg"], files[1]["arg"]
    argv = list(c["argv"])
    argv[a], argv[b] = argv[b], argv[a]
    c["argv"] = argv
    files[0]["arg"], files[1]["arg"] = b, a
    c["inputs"] = sorted(c["inputs"], key=lambda i: i["arg"])
    return True


def _suppressed_green(s: Source) -> Files | None:
    """A suppression flag on the evidence call behind a green claimed verdict (suppression can hide a break)."""
    i = _evidence_call(s)
    try:
        claim = json.loads(s.files.get("claim.json", b"{}")).get("claim") or {}
    except (ValueError, AttributeError):
        return None
    flags = s.cfg.subject.suppression_flags
    if i is None or not flags or not s.cfg.subject.is_green(claim.get("verdict")) or \
            s.calls[i].get("call") not in (claim.get("evidence") or ()):
        return None
    calls = copy.deepcopy(s.calls)
    calls[i]["argv"] = [*calls[i]["argv"], f"{flags[0]}=mutant.txt"]
    return s.with_calls(calls)


def _report_edit(edit: Callable[[dict[str, Any], Source], bool]) -> Mutate:
    """Change the evidence call's captured report, and its digest in calls.jsonl (re-sealed): a report whose
    recorded field says something else."""
    def make(s: Source) -> Files | None:
        i = _evidence_call(s)
        if i is None:
            return None
        calls = copy.deepcopy(s.calls)
        out = next(o for o in calls[i]["outputs"] if o.get("snapshot"))
        if out.get("kind") != "file" or out["snapshot"] not in s.files:
            return None
        try:
            report = json.loads(s.files[out["snapshot"]])
        except ValueError:
            return None
        if not isinstance(report, dict) or not edit(report, s):
            return None
        data = json.dumps(report, indent=2).encode()
        out["sha256"] = hashing.sha256_bytes(data)
        return s.with_calls(calls, {out["snapshot"]: data})
    return make


def _report_verdict(report: dict[str, Any], s: Source) -> bool:
    """The report states a verdict its call's exit code contradicts (two verdicts one exit code allows are
    both the recorded fact: the exit code is what pins the verdict down)."""
    subject = s.cfg.subject
    call = s.calls[_evidence_call(s) or 0]
    outcome = subject.exit_codes.get(call.get("exit_code"), "unknown")  # type: ignore[arg-type]
    allowed = artifacts._green_exit_verdicts(subject) if outcome == "green" else {outcome}
    cur: Any = report
    *parents, last = subject.verdict_path.split(".")
    for p in parents:
        cur = cur.get(p) if isinstance(cur, dict) else None
    if not isinstance(cur, dict) or cur.get(last) not in subject.verdicts:
        return False
    other = [v for v in subject.verdicts if v not in allowed]
    if not other:
        return False
    cur[last] = other[0]
    return True


def _report_sides(report: dict[str, Any], s: Source) -> bool:
    for path in s.cfg.subject.side_digest_paths:
        *parents, last = path.split(".")
        cur: Any = report
        for p in parents:
            cur = cur.get(p) if isinstance(cur, dict) else None
        if isinstance(cur, dict) and isinstance(cur.get(last), str):
            cur[last] = "0" * 64 if cur[last] != "0" * 64 else "1" * 64
            return True
    return False


def _report_tiers(report: dict[str, Any], s: Source) -> bool:
    """The report's evidence tiers emptied behind a confident claim (every case's truth needs at least one tier)."""
    path = s.cfg.subject.evidence_path
    if not path:
        return False
    try:
        claim = json.loads(s.files.get("claim.json", b"{}")).get("claim") or {}
    except (ValueError, AttributeError):
        return False
    tiers = report.get(path)
    if not isinstance(tiers, list) or not tiers or claim.get("confident") is not True:
        return False
    report[path] = []
    return True


def _report_note(report: dict[str, Any], s: Source) -> bool:
    report["x_mutant_note"] = "a field no profile path names"
    return True


def _usage(key: str, value: Any) -> Mutate:
    def make(s: Source) -> Files | None:
        usage = json.loads(s.files["usage.json"]) if "usage.json" in s.files else None
        if not isinstance(usage, dict) or usage.get(key) == value:
            return None
        return {**s.files, "usage.json": strict.dumps_json({**usage, key: value}).encode()}
    return make


def _facts_edit(edit: Callable[[dict[str, Any]], bool]) -> Mutate:
    """Change the runner's facts.json receipt of the scenario's actions (its first action)."""
    def make(s: Source) -> Files | None:
        try:
            facts = json.loads(s.files["facts.json"]) if "facts.json" in s.files else None
        except ValueError:
            return None
        if not isinstance(facts, dict) or not facts.get("actions"):
            return None
        if not edit(facts["actions"][0]):
            return None
        return {**s.files, "facts.json": strict.dumps_json(facts).encode()}
    return make


def _other_digest(key: str) -> Callable[[dict[str, Any]], bool]:
    def edit(action: dict[str, Any]) -> bool:
        if not bundle_mod.is_sha256(action.get(key)):
            return False
        action[key] = "0" * 64 if action[key] != "0" * 64 else "1" * 64
        return True
    return edit


def _watched_file(action: dict[str, Any]) -> bool:
    files = action.get("files")
    if not isinstance(files, dict) or not files:
        return False
    name = sorted(files)[0]
    files[name] = "0" * 64 if files[name] != "0" * 64 else "1" * 64
    return True


def _g(name: str, fact: str, make: Mutate, why: str = "") -> MutationClass:
    return MutationClass(name, fact, True, why or readers.FACTS[fact].why, make)


def _i(name: str, fact: str, make: Mutate, why: str) -> MutationClass:
    return MutationClass(name, fact, False, why, make)


CLASSES: tuple[MutationClass, ...] = (
    _g("event:+run_error", "event:run_error", _add_event({"type": "run_error", "reason": "max_turns: stopped after 40 turns"})),
    _g("event:+run_error(stop kind)", "event:run_error.reason", _stop_kind_error),
    _g("event:+activation(not installed)", "event:skill_activated.skill",
       _add_event({"type": "skill_activated", "skill": STRAY_SKILL, "tier": "1"})),
    _g("event:+file_read(not installed)", "event:skill_file_read.skill",
       _add_event({"type": "skill_file_read", "skill": STRAY_SKILL, "path": "SKILL.md"})),
    _g("event:+activation(control arm)", "event:skill_activated", _control_activation),
    _g("event:+activation(another installed skill, trigger)", "event:skill_activated", _activate_other_installed),
    _g("event:-activation(required)", "event:skill_activated", _drop_activations),
    _g("event:tier 1->2(required)", "event:skill_activated.tier", _tier_two),
    _g("event:+tool_call naming SKILL.md(control arm)", "event:tool_call.input", _control_tool_call),
    _i("event:message.text", "event:message.text", _edit_events("message", "text", "(mutated narration)"),
       readers.FACTS["event:message.text"].why),
    _i("event:tool_result.output", "event:tool_result.output", _edit_events("tool_result", "output", "(mutated)"),
       readers.FACTS["event:tool_result.output"].why),
    _i("event:tool_result.is_error", "event:tool_result.is_error", _edit_events("tool_result", "is_error", True),
       readers.FACTS["event:tool_result.is_error"].why),
    _g("meta:status", "meta:status", _set("status", "incomplete")),
    _g("meta:arm", "meta:arm", _set("arm", "baseline", when=lambda m: m.get("arm") != "baseline")),
    _g("meta:skill", "meta:skill", _set("skill", STRAY_SKILL, when=lambda m: m.get("kind") == "behavioral")),
    _g("meta:scenario", "meta:scenario", _other_scenario),
    _g("meta:prompt_id", "meta:prompt_id", _set("prompt_id", "a-prompt-nobody-wrote", when=lambda m: m.get("kind") == "trigger")),
    _g("meta:adapter_tier(manual, trigger)", "meta:adapter_tier",
       _set("adapter_tier", "manual", when=lambda m: m.get("kind") == "trigger" and m.get("prompt_id") is not None)),
    _g("meta:k", "meta:k", _meta_edit(lambda m: bool(m.update(k=int(m["k"]) + 7)) or True)),
    _g("meta:run_id", "meta:run_id", _meta_edit(lambda m: bool(m.update(run_id=f"{m['run_id']}-x")) or True)),
    _g("meta:agent.name", "meta:agent.name", _set("agent.name", "an-unlisted-agent")),
    _g("meta:model(unscripted)", "meta:model", _meta_edit(lambda m: bool(m.update(model="gpt-unlisted", scripted=False)) or True)),
    _g("meta:digests", "meta:digests", _stale_digest),
    _g("meta:extra.installed_skills(-tested)", "meta:extra.installed_skills", _uninstall_tested),
    _g("meta:extra.installed_skills(control, removed)", "meta:extra.installed_skills", _control_unattested),
    _g("meta:arm_isolation.read(control)", "meta:arm_isolation.read", _control_attested("read")),
    _g("meta:arm_isolation.discoverable(control)", "meta:arm_isolation.discoverable", _control_attested("discoverable")),
    _g("meta:sandbox.changed(an input)", "meta:sandbox.changed", _changed_side),
    _g("meta:extra.origin", "meta:extra.origin", _set("extra.origin", "harbor")),
    _i("meta:isolation", "meta:isolation", _set("isolation", "none"), "read by the release stage only (a release counts "
       "bwrap runs); this pass judges the merge stage"),
    _g("meta:outcome", "meta:outcome", _set("outcome", "budget_stop")),
    _i("meta:started_at", "meta:started_at", _set("started_at", "2020-01-01T00:00:00Z"), readers.FACTS["meta:started_at"].why),
    _i("meta:extra.aa", "meta:extra.aa", _set("extra.aa", True), readers.FACTS["meta:extra.aa"].why),
    _g("call:exit_code", "call:exit_code", _call_edit(_flip_exit)),
    _g("call:status", "call:status", _call_edit(lambda c: bool(c.update(status="provisional")) or True)),
    _g("call:signal", "call:signal", _call_edit(lambda c: bool(c.update(signal=9, exit_code=137)) or True)),
    _g("call:inputs(null)", "call:inputs", _call_edit(lambda c: bool(c.update(inputs=None)) or True)),
    _g("call:inputs.stable", "call:inputs.stable", _call_edit(_unstable)),
    _g("call:inputs.sha256", "call:inputs.sha256", _call_edit(_inputs_digest)),
    _g("call:cwd", "call:cwd", _call_edit(lambda c: bool(c.update(cwd="elsewhere")) or True)),
    _g("call:argv[0]", "call:argv", _call_edit(_argv0)),
    _g("call:call(renumbered)", "call:call", _call_edit(lambda c: bool(c.update(call=c["call"] + 1)) or True)),
    _g("call:stdout.sha256", "call:stdout.sha256", _call_edit(_stream_digest("stdout"))),
    _g("call:stderr.sha256", "call:stderr.sha256", _call_edit(_stream_digest("stderr"))),
    _g("call:argv(operands swapped)", "call:argv", _call_edit(_swap_operands)),
    _g("call:argv(+suppression flag, green claim)", "call:argv", _suppressed_green),
    _g("call:argv(output request removed)", "call:outputs.requested", _call_edit(_drop_output_request)),
    _g("call:outputs.format", "call:outputs.format",
       _call_edit(lambda c: any(o.update(format=None) or True for o in c["outputs"] if o.get("format")))),
    _i("call:duration_ms", "call:duration_ms", _call_edit(lambda c: bool(c.update(duration_ms=1)) or True),
       readers.FACTS["call:duration_ms"].why),
    _g("report:verdict", "call:outputs.sha256", _report_edit(_report_verdict), "the report's verdict field (re-digested)"),
    _g("report:side digests", "call:outputs.sha256", _report_edit(_report_sides), "the report's side digests (re-digested)"),
    _g("report:evidence tiers(confident claim)", "call:outputs.sha256", _report_edit(_report_tiers),
       "the report's evidence tiers (re-digested) behind a confident claim"),
    _i("report:+unread field", "call:outputs.sha256", _report_edit(_report_note),
       "a report field no profile path names: the graders read the profile's paths only"),
    _g("facts:actions.argv", "facts:actions.argv", _facts_edit(lambda a: bool(a.update(argv=[*a["argv"], "--mutant"])) or True)),
    _g("facts:actions.index", "facts:actions.index", _facts_edit(lambda a: bool(a.update(index=int(a["index"]) + 5)) or True)),
    _g("facts:actions.tree_before", "facts:actions.tree_before", _facts_edit(_other_digest("tree_before"))),
    _g("facts:actions.tree_after", "facts:actions.tree_after", _facts_edit(_other_digest("tree_after"))),
    _g("facts:actions.files", "facts:actions.files", _facts_edit(_watched_file)),
    _g("facts:actions.exit_code", "facts:actions.exit_code",
       _facts_edit(lambda a: bool(a.update(exit_code=0 if a.get("exit_code") else 1)) or True)),
    _i("usage:tokens_out", "usage:tokens_out", _usage("tokens_out", 1), readers.FACTS["usage:tokens_out"].why),
)


BY_NAME = {c.name: c for c in CLASSES}
