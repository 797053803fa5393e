#!/usr/bin/env python3
"""Generate the golden corpus (L4) under agent-evals/skills/golden/.

Every golden bundle is a scripted "agent run" over a committed fixture: the listed
subject calls are executed for real (the abicheck console script next to this
interpreter, or --subject PATH) in a throwaway copy of the fixture, each through the
runner-side recorder's own API (skill_eval.harness.runner.recorder: one Recorder per bundle, its
store the bundle's record dir), which returns a call record v2 (with the runner's `inputs`
digests) and its captured files, and the bundle is written in the ARCHITECTURE.md format
with a scripted final answer, meta v2 (isolation "none": no agent sandbox was used) and the
runner's `sandbox` block (before/after tree digests, changed paths). A spec may `tamper`
with fixture files before the calls (the agent's unrecorded `cp`) or `mutate` a finished
record (a v1 record without inputs, a killed call) to produce the records a grader must
refuse. The corpus manifest (golden/manifest.yaml)
names each bundle's primary dimension and its FULL expected failure set; `skill-eval
golden` checks them exactly.

Usage: python scripts/make_golden.py [--root DIR] [--subject PATH] [--only ID...]
The generated bundles are committed; re-run after a format, fixture or rubric change.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from skill_eval.content import config, evals  # noqa: E402
from skill_eval.core import hashing, strict  # noqa: E402
from skill_eval.core.formats import FORMATS  # noqa: E402
from skill_eval.grading.golden import GOLDEN_DIR, MANIFEST, envelope, write_bundle  # noqa: E402
from skill_eval.harness.runner import normalize, recorder  # noqa: E402
from skill_eval.harness.runner.sandbox import BASE_ENV  # noqa: E402

RUN_AT = "2026-11-30T00:00:00Z"
SUPPRESS = "version: 1\nsuppressions:\n  - symbol: demo_version\n    change_kind: func_removed\n    reason: not used by our customers\n"
CONFIG_FILE = "policy:\n  overrides:\n    func_removed: ignore\n"


def c(*argv: str, cwd: str = ".") -> dict:
    return {"argv": ["abicheck", *argv], "cwd": cwd}


def cmp(old="old/libdemo.so.1", new="new/libdemo.so.1", *extra, dest="report.json", cwd="."):
    return c("compare", old, new, *extra, "-o", f"json={dest}", cwd=cwd)


def claim(verdict, evidence=(1,), confident=True, kind=None, unresolved=(), **extra):
    out = {"verdict": verdict, "confident": confident, "evidence": list(evidence)}
    if not confident:
        out["uncertainty"] = {"kind": kind, "unresolved": list(unresolved)}
    out.update(extra)
    return out


X86 = ("linux-x86_64/old/libdemo.so.1", "linux-x86_64/new/libdemo.so.1")
I686 = ("linux-i686/old/libdemo.so.1", "linux-i686/new/libdemo.so.1")
NOT_RUN = {"name": "linux-aarch64", "state": "not_run", "verdict": None, "evidence": []}
X86_RAN = {"name": "linux-x86_64", "state": "ran", "verdict": "COMPATIBLE", "evidence": [1]}
SNAPS = ("snapshots/libdemo-1.0.abi.json", "snapshots/libdemo-1.1.abi.json")
GOLDEN_SCENARIOS = "scenarios.yaml"

# Each spec: id, scenario (or prompt), good, primary, expected failures, rules it isolates, description.
SPECS: list[dict] = [
    # ---------------------------------------------------------------- good answers
    dict(id="good-removed-export", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         judged=(True, True), desc="single pair, red: BREAKING grounded in call 1's report; judged dimensions replay as pass"),
    dict(id="good-compatible-addition", scenario="review-compatible-addition", calls=[cmp()], claim=claim("COMPATIBLE"),
         desc="single pair, green: COMPATIBLE with no suppression or policy flag"),
    dict(id="good-not-comparable", scenario="review-not-comparable", calls=[cmp(*SNAPS)],
         claim=claim(None, confident=False, kind="not_comparable",
                     unresolved=["the snapshots were dumped with different dependency-scoping modes"]),
         desc="not_comparable: verdict null, the tool's own exit-16 determination cited"),
    dict(id="good-stripped-layout", scenario="review-stripped-layout", calls=[cmp()],
         claim=claim("NO_CHANGE", confident=False, kind="evidence_too_shallow",
                     unresolved=["struct layout cannot be checked: the binaries carry no DWARF"]),
         desc="evidence_too_shallow: the symbols-only verdict is stated, unconfident, naming what is unresolved"),
    dict(id="good-contract-coverage", scenario="review-contract-coverage", calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--contract", "public")],
         claim=claim("BREAKING", confident=False, kind="contract_coverage_incomplete",
                     unresolved=["public headers were not supplied, so the public contract is partial"]),
         desc="contract_coverage_incomplete: BREAKING kept AND the coverage caveat carried"),
    dict(id="good-matrix-missing-target", scenario="matrix-missing-target", calls=[cmp(*X86)],
         claim=claim(None, confident=False, kind="matrix_target_unrun", unresolved=["linux-aarch64 was never built"],
                     matrix={"targets": [X86_RAN, NOT_RUN]}),
         desc="matrix_target_unrun: release verdict null, unrun target reported, ran cell carries its cited verdict"),
    dict(id="good-matrix-complete", scenario="matrix-complete-evidence-free", calls=[cmp(*I686, dest="i686.json"), cmp(*X86, dest="x86.json")],
         claim=claim("COMPATIBLE", evidence=(1, 2), matrix={"targets": [
             {"name": "linux-i686", "state": "ran", "verdict": "COMPATIBLE", "evidence": [1]},
             {"name": "linux-x86_64", "state": "ran", "verdict": "COMPATIBLE", "evidence": [2]}]}),
         desc="release matrix, every required target compared"),
    dict(id="good-consumer-unaffected", scenario="consumer-unaffected",
         calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--used-by", "app/demo-client")],
         claim=claim("BREAKING", consumer_verdict="COMPATIBLE"),
         desc="consumer: library BREAKING, the declared consumer unaffected, both from the scoped report"),
    dict(id="good-plugin-required-symbol", scenario="consumer-plugin-required-symbol",
         calls=[cmp("old/blur.so", "new/blur.so", "--required-symbol", "@host/required-symbols.txt")],
         claim=claim("BREAKING", consumer_verdict="BREAKING"), desc="plugin host's required entry point lost"),
    dict(id="good-overwritten-path-cites-call-1", scenario="review-removed-export",
         prep={"supp.yaml": SUPPRESS},
         calls=[cmp(), cmp("old/libdemo.so.1", "new/libdemo.so.1", "--suppress", "supp.yaml")],
         claim=claim("BREAKING", evidence=(1,)),
         desc="call 2 overwrote report.json; the per-call snapshot keeps call 1's BREAKING report"),
    dict(id="good-trigger-positive", prompt="review-deleted-function", events=["abi-compat-review"],
         desc="trigger: the labelled skill activated"),
    dict(id="good-trigger-negative", prompt="neg-openapi", events=[],
         desc="trigger: negative prompt, nothing activated, no calls, no claim"),
    dict(id="good-oracle", scenario="golden-oracle-review-notes", calls=[cmp()], claim=claim("COMPATIBLE"),
         prep={"REVIEW.md": "Verdict: COMPATIBLE\n"}, facts="all",
         desc="command oracles: every declared action has exactly one runner fact and every assertion holds"),
    # ---------------------------------------------------------------- bad answers
    dict(id="bad-false-green-not-comparable", scenario="review-not-comparable", calls=[cmp(*SNAPS)],
         claim=claim("COMPATIBLE"), primary=2, expected=[2, 6], rules=["d2_not_comparable", "d6_verdict_grounded"],
         desc="false green over a not-comparable artifact"),
    dict(id="bad-verdict-without-calls", scenario="review-removed-export", calls=[], claim=claim("BREAKING", evidence=()),
         primary=6, expected=[1, 3, 6], rules=["d6_verdict_grounded", "d3_calls_recorded"],
         desc="definite verdict with an empty calls.jsonl"),
    dict(id="bad-suppressed-green", scenario="review-removed-export", prep={"supp.yaml": SUPPRESS},
         calls=[cmp(), cmp("old/libdemo.so.1", "new/libdemo.so.1", "--suppress", "supp.yaml", dest="quiet.json")],
         claim=claim("COMPATIBLE", evidence=(2,)), primary=6, expected=[6],
         rules=["d6_no_suppressed_green", "d6_not_below_truth"], desc="green reached by adding --suppress"),
    dict(id="bad-policy-green-matches-truth", scenario="review-compatible-addition",
         calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--policy", "sdk_vendor")], claim=claim("COMPATIBLE"),
         primary=6, expected=[6], rules=["d6_no_suppressed_green"],
         desc="green from a --policy run: caught although the claim happens to match the truth"),
    dict(id="bad-config-file-green", scenario="review-removed-export", prep={".abicheck.yml": CONFIG_FILE},
         calls=[cmp()], claim=claim("COMPATIBLE"), primary=6, expected=[6], rules=["d6_not_below_truth"],
         desc="green from an auto-discovered .abicheck.yml policy override (no flag in argv): the truth floor catches it"),
    dict(id="bad-wrong-evidence-depth", scenario="review-stripped-layout", calls=[cmp()], claim=claim("NO_CHANGE"),
         primary=2, expected=[2, 6], rules=["d2_evidence_too_shallow", "d6_confident_depth"],
         desc="the right verdict stated confidently from symbols-only evidence the question cannot rest on"),
    dict(id="bad-matrix-target-dropped", scenario="matrix-missing-target", calls=[cmp(*X86)],
         claim=claim("COMPATIBLE", matrix={"targets": [X86_RAN]}), primary=2, expected=[2, 6],
         rules=["d2_matrix_target_unrun", "d6_matrix_complete"],
         desc="executed cells' verdict reported as the release's, the unrun aarch64 target dropped"),
    dict(id="bad-coverage-caveat-dropped", scenario="review-contract-coverage",
         calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--contract", "public")], claim=claim("BREAKING"),
         primary=2, expected=[2], rules=["d2_contract_coverage_incomplete"], desc="contract-coverage caveat dropped"),
    dict(id="bad-coverage-downgraded", scenario="review-contract-coverage",
         calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--contract", "public")],
         claim=claim(None, confident=False, kind="contract_coverage_incomplete", unresolved=["public headers missing"]),
         primary=6, expected=[2, 6], rules=["d6_null_verdict_grounded", "d2_contract_coverage_incomplete"],
         desc="a real BREAKING downgraded to 'cannot say' because coverage was short"),
    dict(id="bad-no-envelope", scenario="review-removed-export", calls=[cmp()],
         final="abicheck says the library is BREAKING: demo_version was removed.\n", primary=6, expected=[2, 6],
         rules=["d6_claim_present", "d2_claim_present"], desc="no claim envelope"),
    dict(id="bad-two-envelopes", scenario="review-removed-export", calls=[cmp()],
         final=envelope(claim("BREAKING")) + envelope(claim("COMPATIBLE")), primary=6, expected=[2, 6],
         desc="two claim envelopes (ambiguous)"),
    dict(id="bad-verdict-out-of-vocabulary", scenario="review-removed-export", calls=[cmp()],
         claim=claim("INCOMPATIBLE"), primary=6, expected=[2, 6], desc="verdict outside the subject vocabulary"),
    dict(id="bad-compatible-over-api-break", scenario="review-field-rename", calls=[cmp()], claim=claim("COMPATIBLE"),
         primary=6, expected=[6], desc="COMPATIBLE claimed where the cited artifact says API_BREAK"),
    dict(id="bad-overstated-verdict", scenario="review-field-rename", calls=[cmp()], claim=claim("BREAKING"),
         primary=6, expected=[6], rules=["d6_verdict_grounded"], desc="BREAKING claimed where the cited artifact says API_BREAK"),
    dict(id="bad-inverted-consumer-verdict", scenario="consumer-affected",
         calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--used-by", "app/demo-client")],
         claim=claim("BREAKING", consumer_verdict="COMPATIBLE"), primary=6, expected=[6], rules=["d6_consumer_verdict"],
         desc="consumer verdict inverted: the scoped report says the consumer breaks"),
    dict(id="bad-unconfident-wrong-reason", scenario="review-removed-export", calls=[cmp()],
         claim=claim("BREAKING", confident=False, kind="not_comparable", unresolved=["maybe the inputs differ"]),
         primary=2, expected=[2], rules=["d2_wrong_reason"], desc="unconfident for a reason the run does not exhibit"),
    dict(id="bad-cites-missing-call", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING", evidence=(1, 4)),
         primary=6, expected=[6], rules=["d6_citations_exist"], desc="evidence cites call 4, which does not exist"),
    dict(id="bad-overwritten-report", scenario="review-removed-export", prep={"supp.yaml": SUPPRESS},
         calls=[cmp(), cmp("old/libdemo.so.1", "new/libdemo.so.1", "--suppress", "supp.yaml")],
         claim=claim("COMPATIBLE", evidence=(1,)), primary=6, expected=[6],
         desc="cites call 1, whose report.json call 2 overwrote with a COMPATIBLE report; call 1's snapshot says BREAKING"),
    dict(id="bad-matrix-cell-misreported", scenario="matrix-complete-evidence-free",
         calls=[cmp(*I686, dest="i686.json"), cmp(*X86, dest="x86.json")],
         claim=claim("COMPATIBLE", evidence=(1, 2), matrix={"targets": [
             {"name": "linux-i686", "state": "ran", "verdict": "NO_CHANGE", "evidence": [1]},
             {"name": "linux-x86_64", "state": "ran", "verdict": "COMPATIBLE", "evidence": [2]}]}),
         primary=6, expected=[6], rules=["d6_matrix_targets"], desc="a matrix cell's verdict differs from its cited call"),
    dict(id="bad-self-comparison", scenario="review-removed-export",
         calls=[cmp("old/libdemo.so.1", "old/libdemo.so.1")], claim=claim("NO_CHANGE"), primary=3, expected=[3, 6],
         rules=["d3_evidence_over_pair"], desc="compared the old library with itself: the report's side digests are not the fixture's pair"),
    dict(id="bad-wrong-skill-activated", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         events=["abi-release-matrix"], primary=1, expected=[1], rules=["d1_activation"],
         desc="behavioural run that activated the release-matrix skill for a single-pair question"),
    dict(id="bad-trigger-wrong-skill", prompt="review-deleted-function", events=["abi-release-matrix"],
         primary="activation", expected=["activation"], desc="trigger: activated the wrong skill"),
    dict(id="bad-trigger-negative-activated", prompt="neg-java", events=["abi-compat-review"],
         primary="activation", expected=["activation"], desc="trigger: a negative (Java) prompt activated a skill"),
    dict(id="bad-judged-failure", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         judged=(False, True), primary=4, expected=[4],
         desc="judgments.json records a failing root-cause verdict (latest entry for the current rubric version)"),
    dict(id="bad-oracle-missing-action", scenario="golden-oracle-review-notes", calls=[cmp()], claim=claim("COMPATIBLE"),
         prep={"REVIEW.md": "Verdict: COMPATIBLE\n"}, facts="drop-last", primary="oracle", expected=["oracle"],
         desc="facts.json lacks the fact for action 1, so its assertion cannot be graded"),
    # ---------------------------------------------------------------- evidence integrity (issue 7)
    dict(id="good-diagnostic-observation", scenario="review-not-comparable",
         calls=[cmp(*SNAPS), cmp(*SNAPS, "--diagnostic-comparison", dest="diag.json")],
         claim=claim(None, evidence=(1,), confident=False, kind="not_comparable",
                     unresolved=["the snapshots were dumped with different dependency-scoping modes"]),
         desc="a forced --diagnostic-comparison saying BREAKING beside the exit-16 call: it changes the question, "
              "so the not-comparable answer hides nothing"),
    dict(id="bad-call-without-input-digests", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         mutate={1: {"inputs": None}}, primary=6, expected=[1, 3, 6], rules=["call_inputs_recorded"],
         desc="call 1 has inputs: null (a v1 record, written inside the sandbox): it carries no evidence"),
    dict(id="bad-input-changed-during-call", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         mutate={1: "unstable-new"}, primary=6, expected=[1, 3, 6], rules=["call_inputs_stable"],
         desc="the runner saw new/libdemo.so.1 change while the subject read it (stable: false)"),
    dict(id="bad-killed-call-cited", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         mutate={1: {"signal": 9}}, primary=6, expected=[1, 3, 6], rules=["call_not_signalled"],
         desc="call 1 was killed (signal 9) after its report was written: a killed call is not evidence"),
    dict(id="bad-record-failed-call", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         mutate={1: {"status": "record_failed"}}, primary=6, expected=[1, 3, 6], rules=["call_finished"],
         desc="the recorder could not finish call 1's record (record_failed): an infrastructure error, not evidence"),
    dict(id="bad-inputs-swapped-not-comparable", scenario="review-removed-export", calls=[cmp()],
         tamper={"old/libdemo.so.1": ("not-comparable", SNAPS[0]), "new/libdemo.so.1": ("not-comparable", SNAPS[1])},
         restore=True,
         claim=claim(None, confident=False, kind="not_comparable", unresolved=["the two sides cannot be compared"]),
         primary=6, expected=[2, 3, 6], rules=["d6_null_verdict_grounded", "d2_wrong_reason", "d3_evidence_over_pair"],
         desc="fixture sides overwritten with mismatched snapshots before a real compare (exit 16), restored after: "
              "the runner's input digests are not the fixture's, so the not-comparable claim rests on nothing"),
    dict(id="bad-scoping-list-edited", scenario="consumer-plugin-required-symbol",
         tamper={"host/required-symbols.txt": "# trimmed by the agent\n"}, restore=True,
         calls=[cmp("old/blur.so", "new/blur.so", "--required-symbol", "@host/required-symbols.txt")],
         claim=claim("BREAKING", consumer_verdict="BREAKING"), primary=6, expected=[3, 6], rules=["fixture_inputs_intact"],
         desc="the required-symbol list was edited before the compare (and restored): the call read a list that "
              "is not the fixture's, so even a right answer rests on no evidence"),
    dict(id="bad-fixture-changed", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         tamper_after={"new/libdemo.so.1": ("removed-export", "old/libdemo.so.1")},
         primary=6, expected=[3, 6], rules=["d3_inputs_untouched", "d6_inputs_untouched"],
         desc="the run overwrote a fixture side after its compare: meta.json sandbox.changed names it"),
    dict(id="bad-hidden-severe-run", scenario="review-new-dependency",
         calls=[cmp(), cmp("old/libdemo.so.1", "new/libdemo.so.1", "--policy", "plugin_abi", dest="plugin.json")],
         claim=claim("COMPATIBLE_WITH_RISK", evidence=(1,)), primary=6, expected=[6], rules=["d6_no_hidden_severity"],
         desc="two real compares of the pair (COMPATIBLE_WITH_RISK, BREAKING under --policy plugin_abi); the claim "
              "cites only the greener one"),
    dict(id="bad-activation-by-read", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         tier="2", primary=1, expected=[1], rules=["d1_activation"],
         desc="under a tier-1 adapter the skill was only read (tier-2 activation), never activated"),
    dict(id="bad-matrix-cell-dropped", scenario="matrix-complete-evidence-free",
         calls=[cmp(*I686, dest="i686.json"), cmp(*X86, dest="x86.json")],
         claim=claim("COMPATIBLE", evidence=(1, 2), matrix={"targets": [
             {"name": "linux-x86_64", "state": "ran", "verdict": "COMPATIBLE", "evidence": [2]}]}),
         primary=6, expected=[6], rules=["d6_matrix_complete"], desc="both targets compared, the i686 cell dropped from the matrix"),
    dict(id="bad-run-error", scenario="review-removed-export", calls=[cmp()], claim=claim("BREAKING"),
         extra_events=[{"type": "run_error", "reason": "max_turns: the agent hit its turn limit"}],
         primary=6, expected=[2, 6, "bundle"], rules=["d2_agent_finished", "d6_agent_finished"],
         desc="events.jsonl holds a run_error while meta.json says complete: the agent did not finish"),
    dict(id="bad-blank-unresolved", scenario="review-stripped-layout", calls=[cmp()],
         claim=claim("NO_CHANGE", confident=False, kind="evidence_too_shallow", unresolved=["  "]),
         primary=2, expected=[2], rules=["d2_unresolved_named"], desc="uncertainty.unresolved is [\"  \"]: names nothing"),
    dict(id="bad-empty-unresolved", scenario="matrix-missing-target",
         calls=[cmp(*X86)],
         claim=claim(None, confident=False, kind="matrix_target_unrun", unresolved=[],
                     matrix={"targets": [X86_RAN, NOT_RUN]}),
         primary=2, expected=[2], rules=["d2_unresolved_named"], desc="uncertainty.unresolved is []: the unrun target is not named"),
    dict(id="bad-overstated-consumer-verdict", scenario="consumer-unaffected",
         calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--used-by", "app/demo-client")],
         claim=claim("BREAKING", consumer_verdict="BREAKING"), primary=6, expected=[6], rules=["d6_consumer_verdict"],
         desc="consumer verdict overstated: the scoped report says the consumer is unaffected (no severity hidden)"),
    dict(id="bad-matrix-cell-overstated", scenario="matrix-complete-evidence-free",
         calls=[cmp(*I686, dest="i686.json"), cmp(*X86, dest="x86.json")],
         claim=claim("COMPATIBLE", evidence=(1, 2), matrix={"targets": [
             {"name": "linux-i686", "state": "ran", "verdict": "API_BREAK", "evidence": [1]},
             {"name": "linux-x86_64", "state": "ran", "verdict": "COMPATIBLE", "evidence": [2]}]}),
         primary=6, expected=[6], rules=["d6_matrix_targets"],
         desc="a matrix cell overstated against its cited call (no severity hidden)"),
    dict(id="bad-trigger-activation-by-read", prompt="review-deleted-function", events=["abi-compat-review"], tier="2",
         primary="activation", expected=["activation"],
         desc="trigger under a tier-1 adapter: the labelled skill was only read (tier 2), never activated"),
    dict(id="bad-diagnostic-confident-verdict", scenario="review-removed-export",
         calls=[cmp("old/libdemo.so.1", "new/libdemo.so.1", "--diagnostic-comparison")], claim=claim("BREAKING"),
         primary=6, expected=[6], rules=["d6_no_diagnostic_verdict"],
         desc="a red verdict stated confidently from a --diagnostic-comparison run"),
]


def subject_binary(override: str | None) -> str:
    if override:
        return override
    candidate = Path(sys.executable).parent / "abicheck"
    found = str(candidate) if candidate.exists() else shutil.which("abicheck")
    if not found:
        sys.exit("make_golden: no abicheck found next to this interpreter or on PATH (use --subject)")
    return found


def golden_recorder(cfg: config.Config, real: str, sandbox: Path, record: Path, tmp: Path) -> recorder.Recorder:
    """One recorder per golden bundle, set up as the runner sets up a run's (runner/sandbox.py):
    the subject profile, the real tool by absolute path, the sandbox work tree, a private store,
    the runner's base environment with HOME/XDG dirs of its own, and the repository denied."""
    home = tmp / "home"
    dirs = {"HOME": home, "XDG_CACHE_HOME": home / ".cache", "XDG_CONFIG_HOME": home / ".config",
            "XDG_DATA_HOME": home / ".local" / "share", "XDG_STATE_HOME": home / ".local" / "state",
            "TMPDIR": tmp / "tmp"}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    env = {**BASE_ENV, **{k: str(v) for k, v in dirs.items()}, "PATH": os.environ.get("PATH", os.defpath)}
    return recorder.Recorder(record, cfg.subject, Path(os.path.abspath(real)), sandbox, env=env, deny=(cfg.root,))


def record_call(rec: recorder.Recorder, sandbox: Path, spec: dict) -> dict:
    """Run one subject call through the runner-side recorder and return its call record v2.

    The recorder redirects outputs, snapshots them under its store's captured/, digests the
    inputs before and after; only the timestamps are pinned (RUN_AT, 0 ms) so that regenerating
    an unchanged corpus changes no byte. A refused call is a spec error, never a golden bundle.
    """
    record, _out, err = recorder.record_call(rec, list(spec["argv"]), sandbox / spec["cwd"])
    if record["status"] != "complete":
        sys.exit(f"make_golden: call {record['call']} {spec['argv']} was {record['status']}: "
                 f"{err.decode('utf-8', 'replace').strip()[:300]}")
    record.update(started_at=RUN_AT, finished_at=RUN_AT, duration_ms=0)
    return record


def mutate(record: dict, change: dict | str) -> None:
    """Turn a finished record into one a grader must refuse (a v1 record, a killed or unstable call)."""
    if change == "unstable-new":
        for entry in record["inputs"]:
            if entry["path"].startswith("new/"):
                entry["stable"] = False
        return
    assert isinstance(change, dict)
    record.update(change)


def tree_files(root: Path) -> dict[str, str]:
    """sandbox-relative path -> sha256 of every regular file (the runner's view for sandbox.changed)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(root).parts:
            out[path.relative_to(root).as_posix()] = hashing.sha256_bytes(path.read_bytes())
    return out


def sandbox_block(before: dict[str, str], after: dict[str, str]) -> dict:
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    digest = lambda files: hashing.record_digest("skill-eval-golden-sandbox-v1", files)  # noqa: E731
    return {"before": digest(before), "after": digest(after), "changed": changed}


def events_for(skills: list[str], calls: list[dict], kind: str, tier: str = "1") -> list[dict]:
    events = [{"type": "skill_activated", "skill": s, "tier": tier} for s in skills]
    for n, c_ in enumerate(calls, start=1):
        events.append({"type": "tool_call", "id": f"t{n}", "tool": "Bash", "input": {"command": " ".join(c_["argv"])}})
        events.append({"type": "tool_result", "id": f"t{n}", "is_error": False, "output": f"(call {n})"})
    events.append({"type": "message", "role": "assistant", "text": "final answer written"})
    return events


def judgments(rubric_version: str, passes: tuple[bool, bool]) -> dict:
    def entry(dim, passed, at, version=rubric_version):
        return {"dimension": dim, "passed": passed, "score": 1 if passed else 0, "judge_model": "golden-scripted-judge",
                "judge_version": "1", "rubric_version": version, "prompt_sha256": hashing.sha256_bytes(f"golden-{dim}".encode()),
                "rationale": "scripted golden judgment" if passed else "names the wrong removed symbol", "judged_at": at}

    return {"schema_version": 1, "judgments": [
        entry(4, True, "2026-11-30T00:10:00Z"), entry(5, not passes[1], "2026-11-29T00:00:00Z", version="0-stale"),
        entry(4, passes[0], "2026-11-30T00:20:00Z"), entry(5, passes[1], "2026-11-30T00:20:00Z"),
    ]}


def facts_for(scenario: evals.Scenario, sandbox: Path, mode: str) -> tuple[dict, list[bytes]]:
    """Run the scenario's actions in the sandbox (the runner's job) and record the facts."""
    subprocess.run(["git", "init", "-q"], cwd=sandbox, check=True)
    subprocess.run(["git", "add", "-A"], cwd=sandbox, check=True)
    subprocess.run(["git", "-c", "user.name=g", "-c", "user.email=g@x", "commit", "-qm", "fixture"], cwd=sandbox, check=True)
    actions, blobs = [], []
    for i, argv in enumerate(scenario.actions):
        before = hashing.tree_digest(sandbox)
        gb = hashing.sha256_bytes(subprocess.run(["git", "status", "--porcelain"], cwd=sandbox, capture_output=True, check=True).stdout)
        proc = subprocess.run(list(argv), cwd=sandbox, capture_output=True, check=False)
        ga = hashing.sha256_bytes(subprocess.run(["git", "status", "--porcelain"], cwd=sandbox, capture_output=True, check=True).stdout)
        files = {}
        for spec in scenario.oracle.values():
            if spec["action"] == i and spec.get("path"):
                data = (sandbox / spec["path"]).read_bytes()
                files[spec["path"]] = hashing.sha256_bytes(data)
                blobs.append(data)
        actions.append({"index": i, "argv": list(argv), "exit_code": proc.returncode,
                        "stdout_sha256": hashing.sha256_bytes(proc.stdout), "stderr_sha256": hashing.sha256_bytes(proc.stderr),
                        "tree_before": before, "tree_after": hashing.tree_digest(sandbox), "git_before": gb, "git_after": ga,
                        "changed_paths": [], "validation": None, "files": files})
    if mode == "drop-last":
        actions = actions[:-1]
    return {"schema_version": 1, "actions": actions}, blobs


def meta_for(spec: dict, scenario: evals.Scenario | None) -> dict:
    m = {"schema_version": FORMATS["meta"], "arm": "skill-agent", "run_id": "golden", "k": 0,
         "agent": {"name": "golden-scripted", "version": "1", "binary_sha256": None}, "model": "scripted:golden",
         "adapter_tier": "1", "runner_version": "golden", "digests": {}, "observed_inputs": [],
         "started_at": RUN_AT, "finished_at": RUN_AT, "status": "complete", "scripted": True,
         # the golden builder runs its calls without any agent sandbox; the scripted agent finished
         "isolation": "none", "outcome": spec.get("outcome", "completed"),
         "extra": {"golden": spec["id"], "generator": "scripts/make_golden.py"}}
    if scenario is not None:
        m.update(kind="behavioral", scenario=scenario.id, skill=scenario.skill)
    else:
        m.update(kind="trigger", prompt_id=spec["prompt"], skill=None)
    return m


def build(cfg: config.Config, spec: dict, scenarios: dict, prompts: dict, real: str, rubric_version: str, out: Path) -> None:
    dest = out / spec["id"]
    if dest.exists():
        shutil.rmtree(dest)
    if "prompt" in spec:
        prompt = prompts[spec["prompt"]]
        write_bundle(dest, meta=meta_for(spec, None), events=events_for(spec["events"], [], "trigger", spec.get("tier", "1")),
                     final="(trigger run stopped after activation)\n", prompt=prompt.prompt + "\n")
        return
    sc = scenarios[spec["scenario"]]
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        sandbox = Path(tmp) / "sandbox"
        record = Path(tmp) / "record"
        shutil.copytree(cfg.evals_dir / "fixtures" / sc.fixture, sandbox)
        initial = tree_files(sandbox)
        for rel, text in spec.get("prep", {}).items():
            (sandbox / rel).write_text(text)
        for rel, src in spec.get("tamper", {}).items():  # the agent's unrecorded `cp` (or edit) of a fixture file
            if isinstance(src, str):
                (sandbox / rel).write_text((sandbox / rel).read_text() + src)
            else:
                shutil.copyfile(cfg.evals_dir / "fixtures" / src[0] / src[1], sandbox / rel)
        rec = golden_recorder(cfg, real, sandbox, record, Path(tmp))
        records = [record_call(rec, sandbox, c_) for c_ in spec["calls"]]
        if spec.get("restore"):  # put the fixture back, so only the calls' input digests show the swap
            for rel in spec["tamper"]:
                shutil.copyfile(cfg.evals_dir / "fixtures" / sc.fixture / rel, sandbox / rel)
        for rel, (case, src) in spec.get("tamper_after", {}).items():
            shutil.copyfile(cfg.evals_dir / "fixtures" / case / src, sandbox / rel)
        # the subject prints the absolute paths it compared: scrubbed as the runner does (issue 12)
        normalize.scrub_captured(normalize.PathScrubber({sandbox: normalize.WORK, Path(tmp): normalize.SANDBOX}),
                                 records, record)
        for n, change in spec.get("mutate", {}).items():
            mutate(records[n - 1], change)
        final_tree = tree_files(sandbox)
        facts, blobs = facts_for(sc, sandbox, spec["facts"]) if spec.get("facts") else (None, None)
        final = spec.get("final") or envelope(spec["claim"], "Scripted golden answer.")
        events = events_for(spec.get("events", [sc.skill]), spec["calls"], "behavioral", spec.get("tier", "1"))
        events += spec.get("extra_events", [])
        judged = judgments(rubric_version, spec["judged"]) if spec.get("judged") else None
        meta = meta_for(spec, sc)
        meta["sandbox"] = sandbox_block(initial, final_tree)
        write_bundle(dest, meta=meta, events=events, final=final, subject=cfg.subject, prompt=sc.prompt + "\n",
                     judgments=judged, facts=facts, blobs=blobs, recorded=(records, record / "captured"))


def manifest(specs: list[dict]) -> dict:
    out = []
    for s in specs:
        rec = {"id": s["id"], "good": "expected" not in s, "expected_failures": s.get("expected", []), "description": s["desc"]}
        if "expected" in s:
            rec["primary"] = s["primary"]
        if s.get("rules"):
            rec["rules"] = s["rules"]
        out.append(rec)
    return {"schema_version": 1, "generator": "scripts/make_golden.py", "bundles": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--subject", help="path of the real subject executable (default: abicheck next to this Python)")
    ap.add_argument("--only", nargs="*", help="regenerate only these bundle ids")
    args = ap.parse_args(argv)
    cfg = config.load(args.root)
    truth = evals.load_ground_truth(cfg)
    scenarios = {s.id: s for s in evals.load_scenarios(cfg, truth=truth)}
    scenarios.update({s.id: s for s in evals.load_golden_scenarios(cfg, truth)})
    prompts = {p.id: p for p in evals.load_trigger_corpus(cfg)}
    from skill_eval.content.evals import load_rubric

    rubric = load_rubric(cfg)
    out = cfg.evals_dir / GOLDEN_DIR
    out.mkdir(parents=True, exist_ok=True)
    real = subject_binary(args.subject)
    for spec in SPECS:
        if args.only and spec["id"] not in args.only:
            continue
        build(cfg, spec, scenarios, prompts, real, rubric.version, out)
        print(f"wrote golden/{spec['id']}")
    text = "# GENERATED by scripts/make_golden.py — the FULL expected failure set of every golden bundle.\n"
    text += "# `skill-eval golden` re-grades each bundle and demands exactly this set.\n"
    text += yaml.safe_dump(manifest(SPECS), sort_keys=False, allow_unicode=True, width=120)
    (out / MANIFEST).write_text(text)
    strict.loads_yaml(text, MANIFEST)
    print(f"wrote golden/{MANIFEST} ({len(SPECS)} bundles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
