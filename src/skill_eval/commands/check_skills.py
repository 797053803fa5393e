"""`skill-eval check-skills`: the L0 structural check (pre-commit and `pr`)."""

from __future__ import annotations

import argparse

from skill_eval.checks import hygiene, security, structure, suppress
from skill_eval.commands._ci_output import emit_findings, result_of
from skill_eval.commands._common import load_config, plural
from skill_eval.core import ci_formats
from skill_eval.core.output import emit

FORMATS = ci_formats.FORMATS  # text, json, sarif, junit (--format)
FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
DESCRIPTION = (
    "Check every skill of every source: Agent Skills frontmatter rules, body size, that every "
    "relative link and every path a skill points the agent at resolves inside the published skill "
    "(a prose example is never a finding; a link into a sibling skill is a warning for a plugin, an "
    "error with [checks] publish = \"standalone\"), that every subject command and flag named in a "
    "code block exists in the committed CLI reference, and that the published copies are byte-identical "
    "to what `skill-eval generate` produces. Each finding prints a stable id in [brackets]: accept it with "
    "a reason inline (<!-- skill-eval: ignore[RULE] why -->) or in [[checks.ignore]], or accept all "
    "current ones as known debt with --write-baseline. Exit 1 on any other error."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-flags", action="store_true", help="skip the subject command/flag check")
    p.add_argument("--write-baseline", action="store_true",
                   help="accept every current error and warning as known debt: write their ids to the baseline file "
                        "([checks] baseline, default <evals root>/check-skills-baseline.json); later runs fail only on new findings")
    p.add_argument("--no-baseline", action="store_true", help="ignore the baseline file (show every finding)")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    # The command/flag check needs a subject CLI reference; a host without a [subject] has none.
    use_flags = not args.no_flags and cfg.has_subject and bool(cfg.subject.cli_reference)
    reference = None
    if use_flags:
        from skill_eval.checks import surface  # only a host with a subject CLI reference pays for its import

        reference = surface.load_reference(cfg)
    findings, skills = structure.check_all(cfg, reference)
    findings += hygiene.check(skills)  # the named rules (`skill-eval explain rules`)
    findings += security.check(cfg, skills)
    if getattr(args, "write_baseline", False):
        accepted = suppress.apply(cfg, findings, baseline=False)
        rel = suppress.write_baseline(cfg, accepted.kept)
        known = [f for f in accepted.kept if f.level in ("error", "warning")]
        emit(args, [f"check-skills: wrote {rel} — {plural(len(known), 'finding')} accepted as known debt; commit it, "
                    "and fix them over time (a fixed finding drops out with the next --write-baseline)"],
             {"ok": True, "baseline": rel, "findings": [f.id for f in known]})
        return 0
    accepted = suppress.apply(cfg, findings, baseline=not getattr(args, "no_baseline", False))
    errors = [f for f in accepted.kept if f.level == "error"]
    warnings = [f for f in accepted.kept if f.level == "warning"]
    notes = [f for f in accepted.kept if f.level == "note"]
    lines = [str(f) for f in errors + warnings + notes]
    lines += [f"suppressed: {f} (reason: {why})" for f, why in accepted.suppressed]
    status = "FAIL" if errors else "ok"
    extra = ""
    if accepted.suppressed:
        extra += f", {len(accepted.suppressed)} suppressed"
    if accepted.baselined:
        extra += f", {len(accepted.baselined)} in the baseline"
    if accepted.stale:
        extra += f" ({plural(len(accepted.stale), 'baseline entry')} fixed: run --write-baseline to drop them)"
    lines.append(f"check-skills: {status} — {plural(len(skills), 'skill')}, {plural(len(errors), 'error')}, {plural(len(warnings), 'warning')}"
                 + (f", {plural(len(notes), 'folder')} skipped" if notes else "") + extra)
    payload = {
        "ok": not errors,
        "skills": sorted(skills),
        "errors": [f.as_dict() for f in errors],
        "warnings": [f.as_dict() for f in warnings],
        "skipped": [f.as_dict() for f in notes],
        "suppressed": [{**f.as_dict(), "reason": why} for f, why in accepted.suppressed],
        "baselined": [f.as_dict() for f in accepted.baselined],
        "stale_baseline": accepted.stale,
    }
    results = [result_of(f.as_dict()) for f in errors + warnings]
    emit_findings(args, "skill-eval check-skills", results, lines, payload,
                  checks=[ci_formats.CiCheck(f"skill {name}", True) for name in sorted(skills)])
    return 1 if errors else 0
