"""Re-signed mutants of the committed bundles (issue 34 item 7, grading/mutants.py): one recorded fact changed at
a time, re-sealed with a throwaway key, judged as the evidence gate judges a bundle. The bounded run below (a
sample across kinds and arms, every class) must end with 0 meaningful passes: no mutant of a graded fact passes.
`scripts/mutate_bundles.py` runs the same over every bundle (docs/ARCHITECTURE.md gives its figures)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from skill_eval.content import config
from skill_eval.grading import evidence, mutants, readers
from skill_eval.grading.graders import recorded

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "towncrier-notes"
SAMPLE = 12  # bundles: trigger, skill-agent and baseline of both agent cells (~450 mutants), + 2 of the example host


@pytest.fixture(scope="module")
def cfg():
    return config.load(REPO)


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    """A throwaway key and an allowed_signers naming only it (as the tests sign: conftest's test_signing_key)."""
    key = tmp_path_factory.mktemp("mutant-key") / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "mutants", "-f", str(key)], check=True)
    return key, mutants.signers_for(" ".join(key.with_suffix(".pub").read_text().split()[:2]))


def test_every_class_names_a_recorded_fact_and_graded_classes_change_read_facts():
    names = [c.name for c in mutants.CLASSES]
    assert len(names) == len(set(names))
    for c in mutants.CLASSES:
        assert c.fact in readers.FACTS, c.name
        if c.graded:
            assert not readers.FACTS[c.fact].informational, f"{c.name} changes {c.fact}, which readers.py calls informational"
        else:
            assert len(c.why) > 15, c.name


def example_bundles() -> list[tuple[Path, str]]:
    """The example host's bundles the sample adds: a behavioural one with a facts.json receipt (oracle scenarios;
    this repository has none) and a trigger one."""
    found = mutants.sample(evidence.evidence_dir(config.load(EXAMPLE)), None)
    with_facts = [b for b in found if (b[0] / "facts.json").is_file()]
    triggers = [b for b in found if b[1].startswith("trigger/")]
    return [with_facts[0], triggers[0]]


def test_a_bounded_mutant_run_has_no_meaningful_pass(cfg, key, tmp_path):
    bundles = mutants.sample(evidence.evidence_dir(cfg), SAMPLE)
    arms = {rel.split("/")[1] for _, rel in bundles}
    assert {"skill-agent", "baseline"} <= arms and any(rel.startswith("trigger/") for _, rel in bundles)
    started = time.process_time()
    tallies = [mutants.run(cfg, bundles, tmp_path / "repo", key),
               mutants.run(config.load(EXAMPLE), example_bundles(), tmp_path / "example", key)]
    made = {c.name: sum(t.mutants.get(c.name, 0) for t in tallies) for c in mutants.CLASSES}
    caught = {c.name: sum(t.caught.get(c.name, 0) for t in tallies) for c in mutants.CLASSES}
    missed = {k: v for t in tallies for k, v in t.missed.items() if mutants.BY_NAME[k].graded}
    print(f"\nmutants: {sum(made.values())} over {sum(t.bundles for t in tallies)} bundles, meaningful passes "
          f"{sum(t.meaningful() for t in tallies)}, {time.process_time() - started:.1f} s CPU in this process")
    assert [t.bundles for t in tallies] == [SAMPLE, 2] and not any(t.skipped for t in tallies)
    assert not missed, f"graded facts the graders missed (class: bundles): {missed}"
    for c in mutants.CLASSES:  # the sample exercises every class, and every graded class is caught every time
        assert made[c.name] > 0, f"class {c.name} made no mutant in the sample (widen SAMPLE or example_bundles)"
        if c.graded:
            assert caught[c.name] == made[c.name], c.name


def test_the_run_reports_a_grader_that_stops_reading_a_fact(cfg, key, tmp_path, monkeypatch):
    """The generator itself: with the run_error rule switched off, a complete trigger bundle holding a recorded
    run_error passes again, and the run counts those mutants as meaningful passes."""
    monkeypatch.setattr(recorded, "run_error_problems", lambda meta, usage, events: [])
    triggers = [b for b in mutants.sample(evidence.evidence_dir(cfg), 60) if b[1].startswith("trigger/")][:2]
    assert triggers
    tally = mutants.run(cfg, triggers, tmp_path, key, classes=[mutants.BY_NAME["event:+run_error"]])
    assert tally.meaningful() == len(triggers) and tally.missed["event:+run_error"] == [rel for _, rel in triggers]
