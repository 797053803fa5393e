"""`skill-eval export harbor OUT` / `export evals-json OUT`: this host's content in other tools' formats.

harbor: one Harbor task folder per scenario that can be expressed (docs/HARBOR.md): task.toml,
instruction.md, environment/ (Dockerfile: the subject CLI pinned, the fixture as the working
tree with its seed recipe replayed, the skill's published tree for `skills_dir`), tests/
(test.sh runs verify.py over spec.json: the command oracle, or the claim checked against the
ground truth; reward.json gets `reward` and one key per check). Scenarios that cannot be
expressed are named with the reason.
evals-json: skill-creator's evals.json for one skill, from the draft scenarios that
`skill-eval import evals-json` staged (the round trip).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_verbs
from skill_eval.content import evals, pack
from skill_eval.content.generate import skill_tree
from skill_eval.content.skills import discover
from skill_eval.core import strict
from skill_eval.core.errors import ConfigError
from skill_eval.core.hashing import MODE_EXEC, walk_tree
from skill_eval.core.output import emit
from skill_eval.interop import evals_json, harbor

DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    formats = add_verbs(p, dest="format", metavar="FORMAT")
    harbor_p = formats.add_parser("harbor", help="one Harbor task folder per scenario that can be expressed (docs/HARBOR.md)")
    harbor_p.add_argument("out", type=Path, help="output folder (one task per scenario)")
    harbor_p.add_argument("--scenario", action="append", default=[], metavar="ID", help="only these scenario ids")
    harbor_p.add_argument("--force", action="store_true", help="replace task folders that already exist")
    ej = formats.add_parser("evals-json", help="skill-creator's evals.json for one skill, from the drafts "
                                               "`skill-eval import evals-json` staged")
    ej.add_argument("out", type=Path, help="the evals.json path to write")
    ej.add_argument("--skill", required=True, help="the skill to export")
    ej.add_argument("--force", action="store_true", help="replace the file if it exists")


def _write_tree(dest: Path, task: harbor.Task, force: bool) -> None:
    """Build the task beside its destination, then rename it into place (atomic per task)."""
    if dest.exists() and not force:
        raise ConfigError(f"{dest} already exists", fix="pass --force to replace it, or choose another OUT")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        for rel, data in sorted(task.files.items()):
            f = tmp / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
            f.chmod(0o755 if rel in task.executable else 0o644)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _harbor(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if not evals.present(cfg, evals.SCENARIOS):
        raise ConfigError(f"no {cfg.evals_root}/{evals.SCENARIOS}: nothing to export",
                          fix="add scenarios (or `skill-eval import evals-json`, then complete the drafts)")
    skills = discover(cfg)
    truth = evals.load_ground_truth(cfg)
    scenarios = evals.load_scenarios(cfg, skills=set(skills), truth=truth)
    wanted = set(args.scenario)
    unknown = sorted(wanted - {s.id for s in scenarios})
    if unknown:
        raise ConfigError(f"unknown scenario id(s): {', '.join(unknown)}", fix="use ids from scenarios.yaml")
    entries = pack.compute(cfg, skills)
    prof = cfg.subject if getattr(cfg, "has_subject", True) else None
    subject = harbor.Subject(getattr(prof, "name", None) or None, getattr(prof, "package", None),
                             getattr(prof, "version", None), tuple(getattr(prof, "verdicts", ()) or ()))
    template_path = cfg.evals_dir / "prompts" / "behavioral.md"
    template = strict.read_text(template_path) if template_path.is_file() else None
    tasks, skipped = [], {}
    for sc in scenarios:
        if wanted and sc.id not in wanted:
            continue
        why = harbor.why_not(sc, subject)
        if why:
            skipped[sc.id] = why
            continue
        fixture_root = cfg.evals_dir / evals.FIXTURES / sc.fixture
        fixture = {e.path: (e.data, e.mode == MODE_EXEC) for e in walk_tree(fixture_root)} if fixture_root.is_dir() else {}
        tree = {e.path: (e.data, e.mode == MODE_EXEC) for e in skill_tree(cfg, skills[sc.skill])}
        digests = {kind: e.digest for kind, key in (("scenario", sc.id), ("skill", sc.skill))
                   if (e := entries.get(f"{kind}:{key}")) is not None}
        tasks.append(harbor.build_task(sc, fixture, tree, cfg.agent.timeout_seconds, digests,
                                       subject=subject, template=template, truth=truth.get(sc.fixture)))
    for t in tasks:
        _write_tree(args.out / t.id, t, args.force)
    lines = [f"  task {args.out / t.id}" for t in tasks] + [f"  not expressible: {k}: {v}" for k, v in sorted(skipped.items())]
    lines.append(f"export harbor: {len(tasks)} task(s) written, {len(skipped)} scenario(s) not expressible")
    emit(args, lines, {"ok": True, "out": str(args.out), **harbor.summary(tasks, skipped)})
    return 0


def _evals_json(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if not args.skill:
        raise ConfigError("export evals-json needs --skill NAME")
    staged = cfg.evals_dir / evals_json.STAGED
    if not staged.exists():
        raise ConfigError(f"no {cfg.evals_root}/{evals_json.STAGED}", fix="run `skill-eval import evals-json` first")
    doc = evals_json.to_evals_json(args.skill, strict.load_yaml(staged).get("scenarios") or [])
    if not doc["evals"]:
        raise ConfigError(f"no staged evals for skill {args.skill!r}", source=staged)
    if args.out.exists() and not args.force:
        raise ConfigError(f"{args.out} already exists", fix="pass --force to replace it")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{args.out.name}.", dir=args.out.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(strict.dumps_json(doc))
    os.replace(tmp, args.out)
    emit(args, [f"export evals-json: wrote {args.out} ({len(doc['evals'])} eval(s))"], {"ok": True, "out": str(args.out)})
    return 0


def run(args: argparse.Namespace) -> int:
    return _harbor(args) if args.format == "harbor" else _evals_json(args)
