"""`skill-eval import evals-json PATH` / `import harbor JOB_DIR`: other tools' results into this host.

harbor: each trial of a Harbor job over tasks `skill-eval export harbor` wrote becomes a bundle in
the evidence tree (or --evidence DIR), marked as imported (meta.json extra.origin: harbor, adapter
tier manual, unsigned); harbor.json keeps the task verifier's verdict as the reward and marks the
dimensions that need recorded calls "not graded". Each bundle is written atomically (docs/HARBOR.md).

evals-json: bring skill-creator evals into this host's content.

PATH is a skill folder (its `evals/evals.json` is read) or an evals.json file; OpenAI's
evaluation files (`<skill>/evaluations/*.json`: query, expected_behavior, success_criteria) are
read the same way (each query a trigger positive and a draft scenario). A trigger-eval
set is read from --trigger-set, or found beside evals.json as `trigger*.json`. The trigger
prompts are merged into the trigger corpus (turning L1s on); each eval becomes a draft
scenario staged in `<evals>/imported-scenarios.yaml` with its input files copied into
`fixtures/<scenario>/`. The report lists what was mapped and what could not be (judged
expectations are not deterministic oracles). Re-running is idempotent; an id that already
exists with different content is an error, never overwritten.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_verbs, flag_or_config
from skill_eval.content import evals
from skill_eval.core import schemas, strict
from skill_eval.core.errors import ConfigError, InputError
from skill_eval.core.output import emit
from skill_eval.interop import evals_json

DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    formats = add_verbs(p, dest="format", metavar="FORMAT")
    ej = formats.add_parser("evals-json", help="skill-creator's evals.json (+ trigger-eval set), or OpenAI's "
                                               "evaluations/*.json (query + expected_behavior)")
    ej.add_argument("path", type=Path, help="a skill folder (reads evals/evals.json, else evaluations/*.json), an "
                                            "evals.json file or one OpenAI evaluation file")
    ej.add_argument("--trigger-set", type=Path, default=None, metavar="FILE",
                    help="skill-creator trigger-eval JSON ([{query, should_trigger}]); default: trigger*.json beside evals.json")
    ej.add_argument("--skill", default=None, help="skill name (default: evals.json's skill_name)")
    harbor = formats.add_parser("harbor", help="a Harbor job directory's trials, as labelled, unsigned bundles (docs/HARBOR.md)")
    harbor.add_argument("path", type=Path, help="the Harbor job directory")
    harbor.add_argument("--evidence", type=Path, default=None, metavar="DIR",
                        help="the evidence tree to write bundles into (default: the host's)")
    harbor.add_argument("--force", action="store_true", help="replace bundles that already exist")
    for verb in (ej, harbor):
        verb.add_argument("--dry-run", action="store_true", help="print the mapping report and write nothing")


def _locate(path: Path) -> tuple[Path | None, Path | None]:
    """(evals.json or None, the skill folder its `files` are relative to)."""
    if path.is_dir():
        cand = path / "evals" / "evals.json"
        return (cand if cand.is_file() else None), path
    if path.name == "evals.json" and path.parent.name == "evals":
        return path, path.parent.parent
    return path, path.parent


def _write_yaml(path: Path, header: str, doc: dict[str, Any], schema: str | None) -> None:
    """Render, re-read strictly (and schema-check), then replace atomically."""
    text = header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    reread = strict.loads_yaml(text, path)
    if schema:
        schemas.validate(reread, schema, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _merge(existing: list[dict[str, Any]], new: list[dict[str, Any]], what: str, source: Path) -> tuple[list[dict[str, Any]], int]:
    by_id = {r["id"]: r for r in existing}
    added = 0
    for rec in new:
        old = by_id.get(rec["id"])
        if old is None:
            existing.append(rec)
            by_id[rec["id"]] = rec
            added += 1
        elif old != rec:
            raise ConfigError(f"{what} id {rec['id']!r} already exists with different content", source=source,
                              fix="remove or rename the existing entry, then import again")
    return existing, added


def _harbor(args: argparse.Namespace) -> int:
    from skill_eval.interop import harbor_import

    cfg = load_config(args)
    trials = harbor_import.read_job(args.path)
    scenarios = {s.id: s for s in evals.load_scenarios(cfg, truth=evals.load_ground_truth(cfg))}
    subject = cfg.subject if cfg.has_subject else None
    tree = flag_or_config(args.evidence, cfg.root / cfg.evidence_rel)
    run_id = harbor_import.run_id_of(args.path)
    template = cfg.evals_dir / "prompts" / "behavioral.md"
    tmpl = strict.read_text(template) if template.is_file() else "{prompt}"
    planned: list[tuple[Path, dict[str, bytes], str]] = []
    skipped: dict[str, str] = {}
    ks: dict[str, int] = {}
    for t in trials:
        sid = t.scenario_id
        if sid is None or sid not in scenarios:
            skipped[t.trial_name] = (f"task {t.task_name!r} is not a scenario of this host" if sid else
                                     f"task {t.task_name!r} was not written by `skill-eval export harbor`")
            continue
        sc = scenarios[sid]
        k = ks[sid] = ks.get(sid, -1) + 1
        dest = tree / sc.skill / harbor_import.ARM / run_id / sid / str(k)
        prompt = tmpl.replace("{prompt}", sc.prompt.strip())
        planned.append((dest, harbor_import.bundle_files(t, sc, subject, args.path, run_id, k, prompt), t.trial_name))
    lines = []
    bundles = []
    for dest, files, trial in planned:
        verdict = strict.loads_json(files["harbor.json"].decode(), "harbor.json")
        if not args.dry_run:
            harbor_import.write_bundle(dest, files, args.force)
        bundles.append({"trial": trial, "bundle": str(dest), "reward": verdict["reward"]})
        lines.append(f"  {trial} -> {dest} (reward {verdict['reward']!r}; origin harbor, unsigned)")
    lines += [f"  skipped {k}: {v}" for k, v in sorted(skipped.items())]
    verb = "would write" if args.dry_run else "wrote"
    lines.append(f"import harbor: {verb} {len(planned)} bundle(s) from {len(trials)} trial(s); {len(skipped)} skipped. "
                 "Imported bundles are not signed runner evidence: the evidence gate and `grade` do not count them as such")
    emit(args, lines, {"ok": True, "dry_run": args.dry_run, "run_id": run_id, "bundles": bundles, "skipped": skipped})
    return 0


def run(args: argparse.Namespace) -> int:
    if args.format == "harbor":
        return _harbor(args)
    cfg = load_config(args)
    report = evals_json.Report()
    fixtures = cfg.evals_dir / evals.FIXTURES
    evals_path, skill_dir = _locate(args.path)
    openai = evals_json.openai_evaluation_files(args.path) if args.trigger_set is None else []
    copies: dict[str, list[tuple[Path, str]]] = {}
    if openai and (evals_path is None or not evals_path.is_file() or evals_path in openai):
        skill = args.skill or evals_json.openai_skill_dir(openai).name
        prompts, records = evals_json.load_openai_evaluations(skill, openai, report)
    else:
        trig = args.trigger_set
        if trig is None and evals_path is not None:
            found = sorted(p for p in evals_path.parent.glob("trigger*.json") if p.is_file())
            trig = found[0] if found else None
        if evals_path is None and trig is None:
            raise InputError("no evals/evals.json, no evaluations/*.json and no trigger-eval set found", source=args.path,
                             fix="pass an evals.json path, a skill folder with evals/evals.json (skill-creator) or "
                                 "evaluations/*.json (OpenAI: query + expected_behavior), or --trigger-set FILE")
        cases: list[dict[str, Any]]
        skill_name, cases = (evals_json.load_evals(evals_path) if evals_path is not None and evals_path.is_file() else (None, []))
        skill = args.skill or skill_name or (skill_dir.name if skill_dir is not None else None)
        if not skill:
            raise InputError("cannot tell which skill these evals are for", source=args.path, fix="pass --skill NAME")
        prompts = evals_json.trigger_prompts(skill, evals_json.load_trigger_set(trig), report) if trig else []
        records, copies = evals_json.scenario_records(skill, cases, skill_dir, fixtures, report)
    corpus_path = cfg.evals_dir / evals.TRIGGER_CORPUS
    staged_path = cfg.evals_dir / evals_json.STAGED
    lines = [f"  mapped: {m}" for m in report.mapped] + [f"  not mapped: {u}" for u in report.unmapped]
    payload: dict[str, Any] = {"ok": True, "skill": skill, "mapped": report.mapped, "unmapped": report.unmapped,
                               "dry_run": args.dry_run}
    if args.dry_run:
        lines.append(f"import: dry run — {len(prompts)} trigger prompt(s), {len(records)} draft scenario(s); nothing written")
        emit(args, lines, payload)
        return 0
    added_p = added_s = 0
    if prompts:
        doc: dict[str, Any] = strict.load_yaml(corpus_path) if corpus_path.exists() else {"schema_version": 1, "prompts": []}
        merged, added_p = _merge(list(doc.get("prompts") or []), prompts, "trigger prompt", corpus_path)
        _write_yaml(corpus_path, "# Labelled trigger prompts (negatives: expected_skill null).\n",
                    {"schema_version": 1, "prompts": merged}, "trigger_corpus")
        if not any(p["expected_skill"] is None for p in merged):
            lines.append(f"  note: {corpus_path.name} has no negative prompt yet; L1s needs some (expected_skill: null)")
    if records:
        doc = strict.load_yaml(staged_path) if staged_path.exists() else {"schema_version": 1, "scenarios": []}
        merged_s, added_s = _merge(list(doc.get("scenarios") or []), records, "staged scenario", staged_path)
        _write_yaml(staged_path, "# Draft scenarios imported by `skill-eval import` (not run by `pr`). Complete each one\n"
                                 "# (ground truth + invocation class, or actions + oracle), then move it to scenarios.yaml.\n",
                    {"schema_version": 1, "scenarios": merged_s}, None)
        for sid, files in copies.items():
            for src, name in files:
                dest = fixtures / sid / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                if not dest.exists():
                    shutil.copyfile(src, dest)
    lines.append(f"import: ok — {added_p} trigger prompt(s) added to {corpus_path.relative_to(cfg.root)}, "
                 f"{added_s} draft scenario(s) staged in {staged_path.relative_to(cfg.root)}; "
                 "run `skill-eval pack` and commit")
    payload.update(trigger_prompts_added=added_p, scenarios_staged=added_s)
    emit(args, lines, payload)
    return 0
