"""What each recorded call's own artifacts say, read generically through the subject profile.

Graders never trust a call's argv or the agent's account: the verdict of call N is read
from call N's *snapshot* (the per-call copy the recorder kept, digest-checked), cross-checked
against its exit code through `subject.exit_codes`, and the sides it compared are read
from the report's side digests AND the runner's input digests (call record v2 `inputs`).
Nothing here imports or runs the subject tool.

A call carries evidence only if every rule in CALL_RULES passes (looked up at call time, so
a test can disable one and prove the golden corpus notices):
* `call_finished`: status `complete` — a provisional, spawn_failed or record_failed record
  (the recorder could not finish: an infrastructure error) has no trustworthy result;
* `call_not_signalled`: no `signal` — a killed subject may have left a partial report whose
  verdict means nothing, whatever its exit code says;
* `call_inputs_recorded`: `inputs` is not null — a v1 record (upgraded on read with
  `inputs: null`) was written inside the sandbox, where the agent could forge it;
* `call_inputs_stable`: every input has `stable: true` — a file that changed while the
  subject read it was not the file whose digest was recorded, and a file outside the
  sandbox (recorded unstable, undigested) is one the runner cannot vouch for.
Over a pair (`pair_mismatch`), the sides must be the fixture's bytes twice over: the
report's side digests (when it states them) equal the fixture's, and the runner's input
digests show the subject read exactly those bytes; a report without sides (not comparable)
is matched by the operands' paths AND the runner's digests of those paths — so a fixture
file swapped before the call (an unrecorded `cp`) is never "the fixture's pair".
"""

from __future__ import annotations

import functools
import os
import posixpath
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.config import SubjectProfile
from skill_eval.core import hashing, strict
from skill_eval.core.errors import SkillEvalError, message_of
from skill_eval.grading.bundle import Bundle, Call

# Flags that make an invocation print help or plan instead of comparing anything.
NON_EXECUTING = ("--help", "-h", "--help-all", "--version", "--dry-run")


def dotted(value: Any, path: str) -> Any:
    """Read a dotted path ('a.b.c') from nested dicts; None when any step is missing."""
    cur = value
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def has_flag(argv: tuple[str, ...], flag: str) -> bool:
    """Exact flag or `flag=value` (long), or attached value for a short flag (`-Sx`)."""
    for tok in argv[1:]:
        if tok == "--":
            return False
        if tok == flag or tok.startswith(flag + "="):
            return True
        if len(flag) == 2 and flag[0] == "-" and flag[1] != "-" and tok.startswith(flag) and not tok.startswith("--"):
            return True
    return False


class FlagSet:
    """`has_flag(argv, flag)` for many flags of one argv, from one pass over its tokens (read_artifact
    asks ~18 flags per call). A flag holding "=" (none of a profile's) is answered by has_flag itself."""

    __slots__ = ("_argv", "_exact", "_before_eq", "_heads")

    def __init__(self, argv: tuple[str, ...]):
        self._argv = argv
        toks = []
        for tok in argv[1:]:
            if tok == "--":
                break
            toks.append(tok)
        self._exact = frozenset(toks)
        self._before_eq = frozenset(t[:t.index("=")] for t in toks if "=" in t)  # tok.startswith(flag + "=")
        self._heads = frozenset(t[:2] for t in toks)  # a short flag's attached value (`-Sx`)

    def has(self, flag: str) -> bool:
        if "=" in flag:
            return has_flag(self._argv, flag)
        if flag in self._exact or flag in self._before_eq:
            return True
        return len(flag) == 2 and flag[0] == "-" and flag[1] != "-" and flag in self._heads


def non_executing(flags: FlagSet) -> bool:
    """A call that only prints help or a version, or dry-runs: it executed nothing."""
    return any(flags.has(f) for f in NON_EXECUTING)


def flag_values(argv: tuple[str, ...], flag: str) -> list[str]:
    """Every value given to `flag` (`--f v` or `--f=v`)."""
    out = []
    toks = list(argv[1:])
    for i, tok in enumerate(toks):
        if tok == "--":
            break
        if tok == flag and i + 1 < len(toks):
            out.append(toks[i + 1])
        elif tok.startswith(flag + "="):
            out.append(tok[len(flag) + 1 :])
    return out


def subcommand(argv: tuple[str, ...]) -> str | None:
    for tok in argv[1:]:
        if not tok.startswith("-"):
            return tok
    return None


@functools.lru_cache(maxsize=4096)  # a pure function of two strings; the same few paths recur in every bundle
def norm(cwd: str, value: str) -> str:
    """A sandbox-relative normalized path for a value given relative to the call's cwd.

    `@FILE` (a list file) keeps its `@` and normalizes the path behind it.
    """
    if value.startswith("@"):
        return "@" + norm(cwd, value[1:])
    if value.startswith("/"):
        return posixpath.normpath(value)
    return posixpath.normpath(posixpath.join(cwd or ".", value))


@dataclass
class Artifact:
    """What one call produced, as far as the bundle can prove it."""

    call: Call
    is_evidence_command: bool
    executed: bool  # completed and exited with a code the profile says ran the comparison
    outcome: str | None  # a verdict, or not_comparable/tool_error/usage_error/gate/green/unknown
    verdict: str | None  # the verdict the artifact states (None when not comparable or unreadable)
    report: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    tiers: tuple[str, ...] | None = None
    sides: tuple[str, str] | None = None
    consumer_verdicts: tuple[str, ...] = ()
    coverage_failures: list[Any] | None = None
    suppression_flags: tuple[str, ...] = ()
    diagnostic_flags: tuple[str, ...] = ()  # forced comparison of inputs the tool calls not comparable
    scoping: dict[str, tuple[str, ...]] = field(default_factory=dict)  # flag -> raw values as given
    is_subject_call: bool = False  # argv[0] names the subject (a verdict-free subject's workflow is any such call)

    @property
    def number(self) -> int:
        return self.call.call

    @property
    def not_comparable(self) -> bool:
        return self.outcome == "not_comparable"

    @property
    def has_verdict(self) -> bool:
        return self.verdict is not None


OUTSIDE_SANDBOX = "<outside-sandbox>"  # an input path the recorder could not place (and so not digest)
CALL_RULES = ("call_finished", "call_not_signalled", "call_inputs_recorded", "call_inputs_stable")


def call_finished(call: Call) -> list[str]:
    if call.status == "complete":
        return []
    if call.status == "record_failed":
        return [f"call {call.call} is record_failed: the recorder could not finish its record (an infrastructure error)"]
    return [f"call {call.call} is {call.status}: no result was recorded"]


def call_not_signalled(call: Call) -> list[str]:
    if call.signal is None:
        return []
    return [f"call {call.call} was killed by signal {call.signal}: a killed call carries no evidence, whatever it left behind"]


def call_inputs_recorded(call: Call) -> list[str]:
    if call.inputs is not None:
        return []
    return [f"call {call.call} has no input digests (inputs: null, a v1 record written inside the sandbox): "
            f"it carries no evidence"]


def call_inputs_stable(call: Call) -> list[str]:
    unstable = [i for i in call.inputs or () if not i.stable]
    outside = sorted({i.arg for i in unstable if i.path == OUTSIDE_SANDBOX})
    moved = sorted({i.path for i in unstable if i.path != OUTSIDE_SANDBOX})
    reasons = []
    if moved:
        reasons.append(f"call {call.call}: input(s) {moved} changed while the subject ran (stable: false): "
                       f"it carries no evidence")
    if outside:
        reasons.append(f"call {call.call}: argument(s) {outside} name files outside the sandbox, which the runner "
                       f"cannot vouch for: it carries no evidence")
    return reasons


def call_problems(call: Call) -> list[str]:
    """Why `call` cannot carry evidence at all (empty: it may), by the rules in CALL_RULES."""
    module = sys.modules[__name__]
    return [reason for name in CALL_RULES for reason in getattr(module, name)(call)]


def _exit_outcome(subject: SubjectProfile, code: int | None) -> str | None:
    if code is None:
        return None
    return subject.exit_codes.get(code, "unknown")


def _report_bytes(bundle: Bundle, call: Call, subject: SubjectProfile) -> tuple[list[bytes], list[str]]:
    """The report(s) of `call`: outputs in subject.report_format, read from the per-call snapshot."""
    datas: list[bytes] = []
    problems: list[str] = []
    for out in call.outputs:
        if out.format != subject.report_format:
            continue
        try:
            if out.kind == "stdout":
                if call.stdout is None:
                    problems.append(f"call {call.call}: report goes to stdout but no stdout was captured")
                    continue
                datas.append(bundle.read_captured(call.stdout.path, call.stdout.sha256))
            elif out.kind == "file":
                if out.snapshot is None:
                    problems.append(f"call {call.call}: no snapshot of {out.requested} (the call produced no report)")
                    continue
                datas.append(bundle.read_captured(out.snapshot, out.sha256))
            else:  # dir: every file of the snapshot directory is a report
                if out.snapshot is None or not out.files:
                    problems.append(f"call {call.call}: no snapshot of directory {out.requested}")
                    continue
                for rel, digest in sorted(out.files.items()):
                    datas.append(bundle.read_captured(f"{out.snapshot.rstrip('/')}/{rel}", digest))
        except SkillEvalError as exc:
            problems.append(f"call {call.call}: {message_of(exc)}")
    return datas, problems


def read_artifact(bundle: Bundle, call: Call, subject: SubjectProfile, coverage_path: str | None = None) -> Artifact:
    """Derive everything the graders may believe about one call. Never raises."""
    argv = call.argv
    name_ok = bool(argv) and posixpath.basename(argv[0]) == subject.name
    sub = subcommand(argv) if name_ok else None
    flags = FlagSet(argv)
    is_cmd = name_ok and sub in subject.evidence_commands and not non_executing(flags)
    art = Artifact(call=call, is_evidence_command=is_cmd, executed=False, outcome=None, verdict=None,
                   is_subject_call=name_ok)
    art.suppression_flags = tuple(f for f in subject.suppression_flags if flags.has(f))
    art.diagnostic_flags = tuple(f for f in subject.diagnostic_flags if flags.has(f))
    art.scoping = {f: tuple(flag_values(argv, f)) for f in subject.scoping_flags if flags.has(f)}
    if not is_cmd:
        return art
    unusable = call_problems(call)
    if unusable:
        art.outcome = "unknown"
        art.problems.extend(unusable)
        return art
    outcome = _exit_outcome(subject, call.exit_code)
    art.outcome = outcome
    if outcome in (None, "unknown", "tool_error", "usage_error", "gate"):
        art.problems.append(f"call {call.call} exited {call.exit_code} ({outcome}): it did not produce a verdict")
        return art
    art.executed = True
    datas, problems = _report_bytes(bundle, call, subject)
    art.problems.extend(problems)
    reports = []
    for data in datas:
        try:
            value = strict.loads_json(strict.decode_utf8(data, f"call {call.call} report"), f"call {call.call} report")
        except SkillEvalError as exc:
            art.problems.append(message_of(exc))
            continue
        if isinstance(value, dict):
            reports.append(value)
        else:
            art.problems.append(f"call {call.call}: report is not a JSON object")
    if reports and any(r != reports[0] for r in reports[1:]) and not any(o.kind == "dir" for o in call.outputs):
        art.problems.append(f"call {call.call}: its {subject.report_format} outputs disagree")
        reports = []
    report = reports[0] if len(reports) == 1 else None
    if len(reports) > 1:  # a directory of per-library reports: the most severe verdict stands
        verdicts = [dotted(r, subject.verdict_path) for r in reports]
        known = [v for v in verdicts if v in subject.verdicts]
        art.verdict = max(known, key=subject.severity) if known else None
    art.report = report
    if report is not None:
        stated = dotted(report, subject.verdict_path)
        if stated is not None and stated not in subject.verdicts:
            art.problems.append(f"call {call.call}: report verdict {stated!r} is not in the subject vocabulary")
            stated = None
        art.verdict = stated
        _read_report_fields(art, report, subject, coverage_path)
    # Cross-check the artifact against the exit code: evidence is checked, never trusted.
    if outcome == "not_comparable":
        if art.verdict is not None:
            art.problems.append(f"call {call.call}: exit {call.exit_code} means not comparable but the report states {art.verdict}")
            art.executed = False
        art.verdict = None
    elif outcome in subject.verdicts:
        if art.verdict is None and report is None and len(reports) <= 1:
            art.verdict = outcome  # the exit code alone names the verdict
        elif art.verdict != outcome:
            art.problems.append(f"call {call.call}: exit {call.exit_code} means {outcome} but the report states {art.verdict}")
            art.verdict = None
    elif outcome == "green":
        if art.verdict is None:
            art.problems.append(f"call {call.call}: exit {call.exit_code} is green but no readable report says which verdict")
        elif art.verdict not in _green_exit_verdicts(subject):
            art.problems.append(f"call {call.call}: exit {call.exit_code} is green but the report states {art.verdict}")
            art.verdict = None
    return art


def _green_exit_verdicts(subject: SubjectProfile) -> set[str]:
    """Verdicts an exit code mapped to 'green' may carry: all but those with their own exit code."""
    own = {v for v in subject.exit_codes.values() if v in subject.verdicts}
    return {v for v in subject.verdicts if v not in own}


def _read_report_fields(art: Artifact, report: dict[str, Any], subject: SubjectProfile, coverage_path: str | None) -> None:
    if subject.evidence_path:
        tiers = dotted(report, subject.evidence_path)
        if isinstance(tiers, list) and all(isinstance(t, str) for t in tiers):
            art.tiers = tuple(tiers)
        elif isinstance(tiers, str):
            art.tiers = (tiers,)
    if len(subject.side_digest_paths) == 2:
        old, new = (dotted(report, p) for p in subject.side_digest_paths)
        if isinstance(old, str) and isinstance(new, str):
            art.sides = (old, new)
    consumer = []
    for path in subject.consumer_verdict_paths:
        v = dotted(report, path)
        if isinstance(v, str) and v in subject.verdicts:
            consumer.append(v)
    art.consumer_verdicts = tuple(consumer)
    if coverage_path:
        cov = dotted(report, coverage_path)
        art.coverage_failures = cov if isinstance(cov, list) else None


def file_sha256(fixture_dir: Path | None, rel: str | None, cache: dict[Any, str | None] | None = None) -> str | None:
    """sha256 of a fixture file, or None when it is not a plain file inside the fixture.

    `cache` (the Catalog's, one per check): each answer by (fixture_dir, rel), so a fixture file (host
    content, which nothing writes during a check) is looked at and hashed once per check, not once per
    bundle."""
    if fixture_dir is None or not rel:
        return None
    joined = (fixture_dir, rel)
    if cache is not None and joined in cache:
        return cache[joined]
    answer = _plain_file_sha256(str(fixture_dir / rel))
    if cache is not None and len(cache) < 8192:  # bounded: input paths come from bundle content
        cache[joined] = answer
    return answer


def _plain_file_sha256(where: str) -> str | None:
    try:
        st = os.lstat(where)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        return hashing.sha256_bytes(strict.read_bytes(Path(where)))
    except SkillEvalError:
        return None


def pair_mismatch(art: Artifact, old_sha: str | None, new_sha: str | None, old_rel: str | None,
                  new_rel: str | None) -> str | None:
    """Why this call did not compare exactly this old/new pair; None when it did.

    The report's side digests decide what was compared when the report states them (a
    self-comparison or an unrelated pair cannot pass), and the runner's input digests must
    show the subject read those very bytes. A report that states no sides (e.g. not
    comparable) is matched by the operands naming both fixture paths, and the runner's
    digests of those paths must be the fixture's — a replaced input is never the pair.
    """
    n = art.number
    if not old_sha or not new_sha or not old_rel or not new_rel:
        return "the fixture's pair cannot be read"
    inputs = art.call.inputs
    if inputs is None:
        return f"call {n} has no input digests"
    if art.sides is not None:
        if art.sides != (old_sha, new_sha):
            return f"call {n} compared sides {art.sides[0][:12]}…/{art.sides[1][:12]}…, not the fixture's pair"
        read = {i.sha256 for i in inputs if i.kind == "file"}
        missing = [side for side, digest in (("old", old_sha), ("new", new_sha)) if digest not in read]
        if missing:
            return f"call {n}: the runner's input digests do not show the fixture's {'/'.join(missing)} bytes being read"
        return _direction(art, [i.sha256 for i in sorted(inputs, key=lambda i: i.arg) if i.kind == "file"], old_sha, new_sha)
    named = [norm(art.call.cwd, tok) for tok in art.call.argv[1:] if not tok.startswith("-")]
    if posixpath.normpath(old_rel) not in named or posixpath.normpath(new_rel) not in named:
        return f"call {n} does not name the fixture's pair"
    if named.index(posixpath.normpath(new_rel)) < named.index(posixpath.normpath(old_rel)):
        return f"call {n} names the fixture's new side before its old side: it compared the pair the other way round"
    for rel, want in ((old_rel, old_sha), (new_rel, new_sha)):
        got = [i for i in inputs if posixpath.normpath(i.path) == posixpath.normpath(rel)]
        if not got:
            return f"call {n}: the runner recorded no input digest for {rel}"
        bad = next((i for i in got if i.kind != "file" or i.sha256 != want), None)
        if bad is not None:
            return (f"call {n} read {rel} as {bad.kind} {str(bad.sha256)[:12]}…, not the fixture's {want[:12]}… "
                    f"(the input was replaced before the call)")
    return None


def _direction(art: Artifact, read: list[str | None], old_sha: str, new_sha: str) -> str | None:
    """The call's operands in the report's order: the old side's bytes are read (argv order) before the new
    side's. A call whose operands are exchanged while its report still states old/new contradicts itself
    (issue 34: a re-signed record with its operands swapped passed)."""
    if old_sha == new_sha or read.index(old_sha) < read.index(new_sha):
        return None
    return (f"call {art.number} read the fixture's new side before its old side (argv order), but its report states "
            "them the other way round: the record contradicts itself")


