"""The inputs a grader may read, gathered once per bundle.

`Context` is the scenario side (subject profile, rubric, scenario, ground truth, the
fixture files); `Run` is the bundle side (every call's artifact, the re-parsed claim).
Graders are pure functions of a Run, so the same bundle always grades the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.claim import Claim, ClaimResult, check_claim_file, extract
from skill_eval.content.config import SubjectProfile
from skill_eval.content.evals import Rubric, Scenario, TriggerPrompt, TruthCase
from skill_eval.grading.bundle import Bundle
from skill_eval.grading.graders.artifacts import (
    OUTSIDE_SANDBOX,
    Artifact,
    file_sha256,
    norm,
    pair_mismatch,
    read_artifact,
)

KIND_PRIORITY = ("not_comparable", "matrix_target_unrun", "contract_coverage_incomplete", "evidence_too_shallow")
RUNNABLE_DEFAULT = True  # a ground-truth matrix target without `runnable` can run on this platform


@dataclass(frozen=True)
class Pair:
    """One old/new pair from ground truth: the fixture paths and their sha256."""

    name: str  # "" for the case's own pair, else the matrix target name
    old: str
    new: str
    old_sha: str | None
    new_sha: str | None
    runnable: bool = RUNNABLE_DEFAULT


@dataclass(frozen=True)
class Context:
    """What grading a bundle needs besides the bundle: the subject, rubric, scenario, truth and fixture."""

    subject: SubjectProfile
    rubric: Rubric | None = None
    scenario: Scenario | None = None
    truth: TruthCase | None = None
    prompt: TriggerPrompt | None = None
    fixture_dir: Path | None = None
    coverage_path: str | None = None
    problems: tuple[str, ...] = ()  # why the scenario side could not be resolved
    digests: dict[Any, str | None] | None = None  # fixture file digests shared by one Catalog's bundles (artifacts.file_sha256)


@dataclass
class Run:
    """One bundle prepared for the rules: its calls' artifacts, its claim and the fixture pair."""

    bundle: Bundle
    ctx: Context
    artifacts: dict[int, Artifact] = field(default_factory=dict)
    claim: ClaimResult | None = None
    claim_file_problem: str | None = None
    pair: Pair | None = None
    targets: dict[str, Pair] = field(default_factory=dict)
    # Answers of pure queries, kept once `build_run` has finished the Run (the rules never change it;
    # several rules ask the same question of it): exhibited(), and pair_of() per artifact.
    _exhibited: frozenset[str] | None = field(default=None, repr=False, compare=False)
    _pair_of: dict[int, tuple[Artifact, Pair | None]] | None = field(default=None, repr=False, compare=False)

    # -- claim helpers ---------------------------------------------------------------
    @property
    def c(self) -> Claim | None:
        return self.claim.claim if self.claim is not None else None

    def cited(self, ids: tuple[int, ...] | None = None) -> list[Artifact]:
        c = self.c
        if c is None:
            return []
        ids = c.all_cited() if ids is None else ids
        return [self.artifacts[i] for i in ids if i in self.artifacts]

    # -- pairs -----------------------------------------------------------------------
    def pairs(self) -> list[Pair]:
        out = [self.pair] if self.pair is not None else []
        out.extend(self.targets.values())
        return out

    def on_pair(self, art: Artifact, pair: Pair) -> bool:
        return self.why_not_on(art, pair) is None

    def why_not_on(self, art: Artifact, pair: Pair) -> str | None:
        """Why `art` is not a comparison of exactly `pair` (None: it is); see artifacts.pair_mismatch."""
        return pair_mismatch(art, pair.old_sha, pair.new_sha, pair.old, pair.new)

    def why_off_pairs(self, art: Artifact) -> str:
        """Why `art` compared none of the case's pairs, told against the case's own pair first."""
        pairs = self.pairs()
        if not pairs:
            return f"call {art.number}: ground truth names no pair"
        return self.why_not_on(art, pairs[0]) or f"call {art.number} compared a different pair than the scenario's"

    def pair_of(self, art: Artifact) -> Pair | None:
        memo = self._pair_of
        if memo is not None:
            hit = memo.get(id(art))
            if hit is not None and hit[0] is art:
                return hit[1]
        found = self._find_pair(art)
        if memo is not None:
            memo[id(art)] = (art, found)  # holding art keeps its id unique while the Run lives
        return found

    def _find_pair(self, art: Artifact) -> Pair | None:
        for p in self.pairs():
            if self.on_pair(art, p):
                return p
        return None

    def finish(self) -> Run:
        """Mark the Run complete (build_run's last step): from here on its pure queries are answered once."""
        self._pair_of = {}
        return self

    def executed(self) -> list[Artifact]:
        return [a for a in self.artifacts.values() if a.executed]

    def required_targets(self) -> list[str]:
        sc = self.ctx.scenario
        matrix = (sc.expected or {}).get("matrix") if sc else None
        if matrix:
            return list(matrix["required"])
        return sorted(self.targets)

    # -- facts the runner recorded about the whole run -------------------------------
    def run_errors(self) -> list[str]:
        """`run_error` reasons in events.jsonl: the agent did not finish its run."""
        return [str(e.get("reason", "")) for e in self.bundle.events if e.get("type") == "run_error"]

    def touched_inputs(self) -> list[str]:
        """Fixture side files the run changed (meta.json sandbox.changed, computed by the runner)."""
        changed = ((self.bundle.meta or {}).get("sandbox") or {}).get("changed") or []
        sides = {norm(".", p) for pair in self.pairs() for p in (pair.old, pair.new)}
        return sorted(sides & {norm(".", str(c)) for c in changed})

    # -- what the recorded run exhibits (DESIGN §9.2 dimension 2) --------------------
    def missing_tiers(self, art: Artifact) -> list[str]:
        need = self.ctx.truth.min_evidence if self.ctx.truth else ()
        have = set(art.tiers or ())
        return [t for t in need if t not in have]

    def exhibited(self) -> set[str]:
        if self._exhibited is not None:
            return set(self._exhibited)
        kinds = self._exhibits()
        if self._pair_of is not None:  # finished: keep the answer
            self._exhibited = frozenset(kinds)
        return kinds

    def _exhibits(self) -> set[str]:
        kinds: set[str] = set()
        on_pair = [a for a in self.executed() if not a.problems and self.pair_of(a) is not None]
        if any(a.not_comparable for a in on_pair):
            kinds.add("not_comparable")
        cited_ids = set(self.c.all_cited()) if self.c else set()
        with_verdict = [a for a in on_pair if a.has_verdict]
        basis = [a for a in with_verdict if a.number in cited_ids] or with_verdict
        if self.ctx.truth and self.ctx.truth.min_evidence and basis and all(self.missing_tiers(a) for a in basis):
            kinds.add("evidence_too_shallow")
        if self.unrun_targets():
            kinds.add("matrix_target_unrun")
        if self.ctx.coverage_path:
            if any(a.coverage_failures for a in basis):
                kinds.add("contract_coverage_incomplete")
        elif self.ctx.scenario is not None and self.ctx.scenario.uncertainty == "contract_coverage_incomplete":
            # The profile names no coverage field, so the scenario's declaration is the only source.
            kinds.add("contract_coverage_incomplete")
        return kinds

    def unrun_targets(self) -> list[str]:
        out = []
        for name in self.required_targets():
            pair = self.targets.get(name)
            if pair is None or not any(self.on_pair(a, pair) for a in self.executed() if not a.problems):
                out.append(name)
        return out

    def primary_kind(self) -> str | None:
        """The uncertainty a correct claim must carry: the scenario's, else what the run exhibits."""
        sc = self.ctx.scenario
        if sc is not None and sc.uncertainty:
            return sc.uncertainty
        ex = self.exhibited()
        return next((k for k in KIND_PRIORITY if k in ex), None)


def expected_verdict(ctx: Context) -> str | None:
    if ctx.scenario is not None and ctx.truth is not None:
        return ctx.scenario.expected_verdict(ctx.truth)
    return ctx.truth.expected if ctx.truth else None


def expected_consumer(ctx: Context) -> str | None:
    sc = ctx.scenario
    if sc is not None and sc.expected and sc.expected.get("consumer_verdict") is not None:
        verdict: str = sc.expected["consumer_verdict"]
        return verdict
    return ctx.truth.consumer_expected if ctx.truth else None


def declared_scope(ctx: Context) -> set[tuple[str, str]]:
    """(flag, value) scoping pairs ground truth was measured with (values relative to the fixture root)."""
    if ctx.truth is None:
        return set()
    args = list(ctx.truth.record.get("args", ()))
    out = set()
    for flag in ctx.subject.scoping_flags:
        for i, tok in enumerate(args):
            if tok == flag and i + 1 < len(args):
                out.add((flag, args[i + 1]))
            elif tok.startswith(flag + "="):
                out.add((flag, tok[len(flag) + 1 :]))
    return out


def call_scope(art: Artifact) -> set[tuple[str, str]]:
    """(flag, value) scoping pairs exactly as the call gave them."""
    return {(flag, v) for flag, values in art.scoping.items() for v in values}


def scope_matches(art: Artifact, declared: set[tuple[str, str]]) -> bool:
    """The call is scoped exactly as declared: same flags, each value naming the same thing.

    A value matches when it is the declared string or the same sandbox path once resolved
    against the call's cwd — never by substring or basename, so `--used-by daemon` does not
    satisfy a declared `analytics-daemon` and `--used-by app` does not satisfy `app/app`.
    """
    given = call_scope(art)
    if {f for f, _ in given} != {f for f, _ in declared} or len(given) != len(declared):
        return False
    for flag, value in given:
        forms = {value, norm(art.call.cwd, value)}
        if not any(f == flag and (d in forms or norm(".", d) in forms) for f, d in declared):
            return False
    return True


def fixture_inputs_intact(art: Artifact, fixture_sha: Callable[[str], str | None]) -> list[str]:
    """Every fixture file an evidence call read must be the fixture's bytes.

    The pair rule covers the two sides; this covers the rest (a scoping list such as
    `@host/required-symbols.txt`, a consumer binary, a shipped suppression file): an edited
    copy makes the call answer a question nobody asked. Files the fixture does not have (the
    agent's own, e.g. a report or suppression file it wrote) are not checked here.
    """
    out = []
    for i in art.call.inputs or ():
        if i.kind != "file" or i.path == OUTSIDE_SANDBOX or norm(".", i.path).startswith(("../", "/")):
            continue
        want = fixture_sha(i.path)
        if want is not None and i.sha256 != want:
            out.append(f"call {art.number} read fixture file {i.path} as {str(i.sha256)[:12]}…, not the fixture's "
                       f"{want[:12]}… (edited before the call): it carries no evidence")
    return out


def build_run(bundle: Bundle, ctx: Context) -> Run:
    run = Run(bundle=bundle, ctx=ctx)
    for call in bundle.calls:
        run.artifacts[call.call] = read_artifact(bundle, call, ctx.subject, ctx.coverage_path)
    if ctx.fixture_dir is not None:
        digests: dict[str, str | None] = {}

        def fixture_sha(rel: str) -> str | None:
            if rel not in digests:
                digests[rel] = file_sha256(ctx.fixture_dir, norm(".", rel), ctx.digests)
            return digests[rel]

        for art in run.artifacts.values():
            if art.is_evidence_command and not art.problems:
                drift = fixture_inputs_intact(art, fixture_sha)
                if drift:
                    art.problems.extend(drift)
                    art.executed = False
    if bundle.kind != "trigger":
        run.claim = extract(bundle.final_text, ctx.subject)
        if "claim.json" in bundle.present:
            run.claim_file_problem = check_claim_file(bundle.claim_file, run.claim)
    truth = ctx.truth
    if truth is not None:
        rec = truth.record
        sha = ctx.digests
        run.pair = Pair("", rec["old"], rec["new"], file_sha256(ctx.fixture_dir, rec["old"], sha),
                        file_sha256(ctx.fixture_dir, rec["new"], sha))
        for name, t in sorted(rec.get("targets", {}).items()):
            run.targets[name] = Pair(
                name, t["old"], t["new"], file_sha256(ctx.fixture_dir, t["old"], sha), file_sha256(ctx.fixture_dir, t["new"], sha),
                t.get("runnable", RUNNABLE_DEFAULT),
            )
    return run.finish()
