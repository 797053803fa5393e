"""Every fact the recorder writes, and which check reads it — or why it is informational (issue 34 item 7).

The graders must read what the recorder records: a recorded fact no check reads is a fact an adversary can
change behind a valid seal for free. This table is the one place that says, for every event kind and field
(`events.jsonl`, schemas/event.schema.json), every meta field (schemas/meta.schema.json, and the keys of
`extra` the runner and `import harbor` write), every call-record field (schemas/call.schema.json), every
usage field and every field of the runner's facts.json receipt, which check reads it. `tests/grading/test_recorded_facts.py` enumerates what the recorder writes
(the schemas, and the harness's event and meta writers by their source) and fails when a kind or field
appears without an entry here, or an entry names a fact nothing writes.

**Registering a new fact** (e.g. a `policy_violation` event): add `event:<kind>` and `event:<kind>.<field>`
entries below — `read(<checks>, why=...)` naming the checks that read it, or `info(why)` saying why no
check needs to — together with the schema change and the grader that reads it. `grading.mutants` mutates the
facts that are read, one at a time, and a mutant that still passes is a meaningful pass.

Check names: a grade's checks (`1`, `2`, `3`, `6`, `oracle`, `activation`, `bundle`) and the evidence gate's
(`isolation` — contamination of a control arm, `freshness`, `place` — path against meta, `cell` — the matrix
cell, pass^k grouping and baselines, `seal` — the sealed identity) and the release stage's (`release`);
`scorecard` for what only the scorecard reads (lift, incomplete runs).
"""

from __future__ import annotations

from dataclasses import dataclass

CHECKS = frozenset({"1", "2", "3", "6", "oracle", "activation", "bundle", "isolation", "freshness", "place", "cell",
                    "seal", "release", "scorecard"})


@dataclass(frozen=True)
class Reader:
    """Who reads one recorded fact: the checks (empty: informational) and what it decides, or why not."""

    checks: tuple[str, ...]
    why: str

    @property
    def informational(self) -> bool:
        return not self.checks


def read(*checks: str, why: str) -> Reader:
    return Reader(tuple(checks), why)


def info(why: str) -> Reader:
    return Reader((), why)


_NARRATION = "the agent's own narration: graders read the recorder's calls and the claim in final.md, never what the agent says it did"

EVENTS: dict[str, Reader] = {
    "event:skill_activated": read("activation", "1", "isolation", "bundle",
                                  why="a trigger positive needs it, a negative fails on it; dimension 1 under a tier-1 "
                                      "adapter; any activation in a control arm is contamination; a skill the run did "
                                      "not install fails the bundle (graders.recorded)"),
    "event:skill_activated.skill": read("activation", "1", "isolation", "bundle", why="which skill was activated"),
    "event:skill_activated.tier": read("activation", "1", why="tier 1 (chosen) vs 2 (a SKILL.md read) under a tier-1 adapter"),
    "event:skill_file_read": read("isolation", "bundle", why="a control arm that read a skill file is contaminated; a "
                                                             "skill the run did not install fails the bundle"),
    "event:skill_file_read.skill": read("isolation", "bundle", why="whose file was read"),
    "event:skill_file_read.path": info("which file of the skill: isolation fails on the skill, whatever the file"),
    "event:tool_call": info(_NARRATION + " (subject calls are calls.jsonl, written by the recorder)"),
    "event:tool_call.id": info(_NARRATION),
    "event:tool_call.tool": info(_NARRATION),
    "event:tool_call.input": read("isolation", why="a control arm's tool call naming <skill>/SKILL.md is contamination"),
    "event:tool_result": info(_NARRATION),
    "event:tool_result.id": info(_NARRATION),
    "event:tool_result.is_error": info(_NARRATION),
    "event:tool_result.output": info(_NARRATION + " (the subject's real output is captured/, digested in calls.jsonl)"),
    "event:message": info(_NARRATION + " (the answer graded is final.md)"),
    "event:message.role": info(_NARRATION),
    "event:message.text": info(_NARRATION),
    "event:run_error": read("2", "6", "bundle", why="the agent did not finish: dimensions 2 and 6 fail, and a bundle "
                                                    "sealed complete is incomplete (graders.recorded), trigger bundles too"),
    "event:run_error.reason": read("bundle", why="its kind: only the runner's own stop after an observed activation "
                                                 "(incomplete_stream/agent_error) is excused in a trigger bundle"),
}

_SHOWN = "shown in reports and the release snapshot; decides no verdict"

META: dict[str, Reader] = {
    "meta:schema_version": read("bundle", why="the format version every reader upgrades from (core.formats)"),
    "meta:kind": read("bundle", "place", "seal", why="dispatches the rule set (behavioural or trigger); the slot"),
    "meta:arm": read("isolation", "place", "cell", "seal", why="control arms are checked for contamination; the slot"),
    "meta:run_id": read("place", "seal", why="the bundle's place (path) and the A/A suffix"),
    "meta:k": read("place", "seal", why="the slot's repeat index"),
    "meta:skill": read("1", "isolation", "place", "seal", why="must be the scenario's skill (null in trigger bundles)"),
    "meta:scenario": read("1", "2", "3", "6", "oracle", "place", "seal", why="the scenario graded against"),
    "meta:prompt_id": read("activation", "place", "seal", why="the corpus prompt a trigger bundle is graded against"),
    "meta:agent": read("cell", why="the matrix cell (agent name)"),
    "meta:agent.name": read("cell", "seal", why="the matrix cell; pass^k and baselines group by it"),
    "meta:agent.version": info(_SHOWN),
    "meta:agent.binary_sha256": info(_SHOWN + " (the release snapshot lists the agents)"),
    "meta:model": read("cell", "release", "seal", why="the matrix cell; a release's model sources"),
    "meta:adapter_tier": read("1", "activation", why="tier 1 demands a tier-1 activation; manual fails closed"),
    "meta:runner_version": info(_SHOWN),
    "meta:digests": read("freshness", "isolation", why="stale against the current pack; a control arm carrying "
                                                       "skill:<name> is contaminated"),
    "meta:observed_inputs": read("isolation", "freshness", why="a control arm whose runner read the skill's files is "
                                                              "contaminated; routes extra freshness keys"),
    "meta:observed_inputs.path": read("isolation", why="inside <published>/<skill>/ in a control arm: contamination"),
    "meta:observed_inputs.sha256": info("the digest of an input the runner read; freshness compares meta.digests"),
    "meta:sandbox": read("3", "6", why="the runner's before/after of the work tree"),
    "meta:sandbox.changed": read("3", "6", why="a changed fixture side fails d3/d6_inputs_untouched"),
    "meta:sandbox.before": info("the work tree's digest before the run: facts.json's receipts chain their own"),
    "meta:sandbox.after": info("the work tree's digest after the run: facts.json's receipts chain their own"),
    "meta:started_at": info(_SHOWN),
    "meta:finished_at": info(_SHOWN),
    "meta:seed": info("the sampling seed asked of a real model: " + _SHOWN),
    "meta:temperature": info("the sampling temperature asked of a real model: " + _SHOWN),
    "meta:status": read("bundle", why="anything but complete is incomplete evidence"),
    "meta:status_reason": info("why a bundle is not complete: quoted in the bundle check's reason"),
    "meta:isolation": read("release", why="a release counts only bwrap-isolated runs"),
    "meta:outcome": read("2", "bundle", "scorecard", why="a run not completed has no claim (dimension 2); it must "
                                                          "agree with status; infra_error runs are not scored"),
    "meta:scripted": read("cell", "release", why="scripted turns form their own cell and never count for a release"),
    "meta:arm_isolation": read("isolation", why="the runner's attestation; a control arm without it fails closed"),
    "meta:arm_isolation.discoverable": read("isolation", why="the skill under test discoverable in a control arm"),
    "meta:arm_isolation.read": read("isolation", why="the skill under test read in a control arm"),
    "meta:extra": read("isolation", why="holds installed_skills and the labels below"),
    "meta:extra.installed_skills": read("isolation", "bundle", why="a control arm installs none; an activation of a "
                                                                   "skill not installed fails (graders.recorded)"),
    "meta:extra.stopped_on_activation": read("bundle", why="with usage stop_reason, excuses the runner's own stop"),
    "meta:extra.aa": read("scorecard", why="an A/A run, kept out of the lift (the gate knows A/A runs by the "
                                           "path-checked -aa run id suffix, never by this flag)"),
    "meta:extra.released_skill_digest": read("freshness", why="a released:<ref> arm's skill digest"),
    "meta:extra.model_source": read("release", "cell", why="scripted / local-endpoint / remote:<host>"),
    "meta:extra.origin": read("1", "2", "3", "6", "oracle", "bundle", why="an imported (Harbor) trial is graded by "
                                                                          "its verifier's verdict; never a trigger bundle"),
    "meta:extra.exit_code": info("the agent CLI's exit status: its run_error (agent_error) is what graders read"),
    "meta:extra.timed_out": info("a timeout already makes status incomplete, which the bundle check reads"),
    "meta:extra.run_errors": info("the parser's errors: the same run_error events events.jsonl holds, which are read"),
    "meta:extra.stop_reason": info("the parser's stop reason: status and usage.stop_reason carry what is read"),
    "meta:extra.model_script": info("the scripted model's script path: the model id (meta.model) carries its digest"),
    "meta:extra.model_script_id": info("the script's model id: meta.model carries it"),
    "meta:extra.path_placeholders": info("counts of machine-local paths replaced by placeholders: bookkeeping"),
    "meta:extra.reported_model": info("the model id the stream reported: " + _SHOWN),
    "meta:extra.credentials": info("proxied / none / unknown: " + _SHOWN),
    "meta:extra.proxy": info("the credential proxy's counts and refusals: " + _SHOWN),
    "meta:extra.package": info("the agent CLI's package pin: " + _SHOWN),
    "meta:extra.signed": info("an imported trial says it is not signed by a recorder: its seal state is what counts"),
    "meta:extra.harbor": info("an imported trial's job/trial/reward: the verifier verdict is read from final.md/claim"),
}

CALLS: dict[str, Reader] = {
    "call:schema_version": read("bundle", why="v1 records upgrade with inputs null: no input evidence"),
    "call:call": read("bundle", "6", why="numbers are exactly 1..N (a gap poisons the log); claims cite them"),
    "call:status": read("1", "2", "3", "6", why="only a complete call carries evidence (CALL_RULES)"),
    "call:argv": read("1", "2", "3", "6", "bundle", why="operands (inputs name them), scoping, suppression and "
                                                        "diagnostic flags; output requests"),
    "call:cwd": read("bundle", "3", "6", why="operands resolve against it (inputs path must be the operand)"),
    "call:started_at": info("timing: " + _SHOWN),
    "call:finished_at": info("timing: " + _SHOWN),
    "call:duration_ms": info("timing: " + _SHOWN),
    "call:exit_code": read("2", "6", why="cross-checked against the report's verdict (a contradiction voids it); severity"),
    "call:signal": read("1", "2", "3", "6", why="a signal death carries no evidence (CALL_RULES)"),
    "call:stdout": read("bundle", "2", "6", why="the stream's digest is re-checked; a stdout report is read from it"),
    "call:stdout.path": read("bundle", why="must be captured/N.out (no borrowing another call's file)"),
    "call:stdout.sha256": read("bundle", why="checked against the captured stream for every call (graders.recorded)"),
    "call:stdout.bytes": info("the stream's size: its digest is what is checked"),
    "call:stderr": read("bundle", why="the stream's digest is re-checked"),
    "call:stderr.path": read("bundle", why="must be captured/N.err"),
    "call:stderr.sha256": read("bundle", why="checked against the captured stream for every call (graders.recorded)"),
    "call:stderr.bytes": info("the stream's size: its digest is what is checked"),
    "call:outputs": read("2", "3", "6", "bundle", why="where the report a grader reads lies"),
    "call:outputs.option": read("bundle", why="one entry per (option, requested); must be what argv requests"),
    "call:outputs.requested": read("bundle", why="the snapshot's name; must be what argv requests"),
    "call:outputs.format": read("2", "3", "6", why="the report read is the output of the profile's format"),
    "call:outputs.kind": read("bundle", "2", "6", why="file/dir/stdout: where the report's bytes are"),
    "call:outputs.snapshot": read("bundle", "2", "6", why="captured/N.out.d/<i>[/<name>]: the report's bytes"),
    "call:outputs.sha256": read("2", "6", why="the report's digest, re-checked on read"),
    "call:outputs.files": read("2", "6", why="a directory output's file digests, re-checked on read"),
    "call:substitutions": info("how many sandbox paths the recorder mapped back in the streams: bookkeeping"),
    "call:substitutions.stdout": info("a count: bookkeeping"),
    "call:substitutions.stderr": info("a count: bookkeeping"),
    "call:inputs": read("1", "2", "3", "6", why="null: no input evidence; the runner's digests of what was read"),
    "call:inputs.arg": read("bundle", why="the argv operand the entry belongs to"),
    "call:inputs.path": read("bundle", "2", "6", why="the operand resolved against cwd; the pair compared"),
    "call:inputs.kind": read("bundle", why="file/dir/missing against the digest it may carry"),
    "call:inputs.sha256": read("2", "3", "6", why="the bytes the subject read, matched against the fixture's"),
    "call:inputs.stable": read("1", "2", "3", "6", why="an input changed during the call carries no evidence"),
}

USAGE: dict[str, Reader] = {
    "usage:stop_reason": read("bundle", why="activation_observed (with extra.stopped_on_activation) excuses the "
                                            "runner's own stop of a trigger run"),
    "usage:turns": info("cost accounting: the scorecard reports it"),
    "usage:tool_calls": info("cost accounting: the scorecard reports it"),
    "usage:tokens_in": info("cost accounting: the scorecard reports it"),
    "usage:tokens_out": info("cost accounting: the scorecard reports it"),
    "usage:cost_usd": info("cost accounting: the scorecard reports it; a budget already makes the run incomplete"),
    "usage:wall_clock_s": info("cost accounting: the scorecard reports it"),
    "usage:retries": info("cost accounting: the scorecard reports it"),
}

_RECEIPT = "the runner's receipt of the scenario's actions and seed (oracles.receipt_problems): "
RECEIPTS: dict[str, Reader] = {
    "facts:schema_version": read("oracle", why=_RECEIPT + "the format version"),
    "facts:case": read("oracle", why=_RECEIPT + "the receipt of this scenario, not another"),
    "facts:seed": read("oracle", why=_RECEIPT + "the fixture's seed recipe, one-to-one"),
    "facts:seed.commands": read("oracle", why=_RECEIPT + "the seed commands seed.json declares"),
    "facts:seed.commands.index": read("oracle", why=_RECEIPT + "one per declared seed command"),
    "facts:seed.commands.argv": read("oracle", why=_RECEIPT + "the declared argv"),
    "facts:seed.commands.exit_code": read("oracle", why=_RECEIPT + "the seed ran as declared"),
    "facts:seed.commands.stdout_sha256": read("oracle", why=_RECEIPT + "a well-formed digest (stored nowhere else)"),
    "facts:seed.commands.stderr_sha256": read("oracle", why=_RECEIPT + "a well-formed digest (stored nowhere else)"),
    "facts:seed.files": read("oracle", why=_RECEIPT + "the listed files' bytes"),
    "facts:seed.tree_after": read("oracle", why=_RECEIPT + "a well-formed digest of the seeded tree"),
    "facts:seed.head": read("oracle", why=_RECEIPT + "a well-formed commit id"),
    "facts:actions": read("oracle", why=_RECEIPT + "exactly one fact per declared action"),
    "facts:actions.index": read("oracle", why=_RECEIPT + "the declared action it receipts"),
    "facts:actions.argv": read("oracle", why=_RECEIPT + "the declared argv"),
    "facts:actions.exit_code": read("oracle", why="exit-code assertions; a rev-parse's stream is re-derived from it"),
    "facts:actions.stdout_sha256": read("oracle", why=_RECEIPT + "re-derived for rev-parse and diff --quiet, else form"),
    "facts:actions.stderr_sha256": read("oracle", why=_RECEIPT + "a well-formed digest"),
    "facts:actions.tree_before": read("oracle", why=_RECEIPT + "chains from the previous action's tree_after"),
    "facts:actions.tree_after": read("oracle", why=_RECEIPT + "chains into the next action; one tree, one content"),
    "facts:actions.git_before": read("oracle", why=_RECEIPT + "chains from the previous action's git_after"),
    "facts:actions.git_after": read("oracle", why=_RECEIPT + "chains into the next action"),
    "facts:actions.changed_paths": read("oracle", why="changed-path assertions; one tree means one set of paths"),
    "facts:actions.validation": read("oracle", why="validation assertions; parsed from a non-empty stdout"),
    "facts:actions.validation.passed": read("oracle", why="validation assertions"),
    "facts:actions.files": read("oracle", why="file-contains assertions read the blob each digest names"),
    "facts:actions.head": read("oracle", why=_RECEIPT + "HEAD cannot move across an action that left git unchanged"),
}

FACTS: dict[str, Reader] = {**EVENTS, **META, **CALLS, **USAGE, **RECEIPTS}
