"""`skill-eval release stage|resume|verify`: the release evaluation (DESIGN §10), human in the loop.

  stage   run the credential-free gates, freeze every input by digest, grade the evidence and
          write a sealed stage.json plus worksheet.yaml into <out>/<session>/, then stop.
          Evidence comes from the committed evidence tree (default: offline, no model), or with
          --run from fresh runs of every required arm (skill-agent, baseline, released:<ref>),
          exactly once, into the session's raw/ (--from-session: a session recorded earlier).
          With --judge-base-url/--judge-model (or --judge-model-server) the session's runs are
          judged (dimensions 4/5, blinded) *before* the stage is sealed: the stage freezes the
          judgments as their own layer, so resume accepts them and refuses any later change.
  resume  STAGE --worksheet W [--waiver F]: recheck the seal and every frozen input against the
          checkout, then write report.json (canonical) and report.md. Exit 0 for pass/waived,
          1 for fail/incomplete (both block a release).
  verify  FILE... --allowed-signers F: check SSH signatures (and a stage's seal).

Scripted-model evidence never completes a release arm: a repository whose evidence is
scripted stages and reports `incomplete`, honestly.
"""

from __future__ import annotations

import argparse
import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from skill_eval.commands._common import bounded_int
from skill_eval.commands._options import add_agent_arguments, add_judge_arguments, add_verbs, flag_or_config
from skill_eval.content import config
from skill_eval.content.config import JOBS_MAX
from skill_eval.core.errors import ConfigError, InputError
from skill_eval.core.output import emit

if TYPE_CHECKING:
    from skill_eval.grading.judge import Endpoint

DESCRIPTION = __doc__
DEFAULT_OUT = "build/release"


def add_arguments(p: argparse.ArgumentParser) -> None:
    verbs = add_verbs(p)
    _stage_arguments(verbs.add_parser("stage", help="run the credential-free gates, freeze every input, grade, seal "
                                                    "stage.json + worksheet.yaml, then stop for a human"))
    resume = verbs.add_parser("resume", help="recheck the seal and every frozen input, then write report.json / report.md")
    resume.add_argument("targets", nargs=1, type=Path, metavar="STAGE", help="the stage.json `release stage` wrote")
    resume.add_argument("--worksheet", type=Path, required=True, help="the filled worksheet")
    resume.add_argument("--waiver", type=Path, default=None, help="a waiver covering exactly the incomplete cases")
    resume.add_argument("--out", type=Path, default=None, help="where the report goes (default: beside the stage)")
    resume.add_argument("--sign", type=Path, default=None, metavar="KEY", help="sign the report with this SSH private key")
    resume.add_argument("--allowed-signers", type=Path, default=None,
                        help="OpenSSH allowed-signers file: also verify the stage's signature")
    verify = verbs.add_parser("verify", help="check the SSH signatures (and a stage's seal) of stage.json / report.json files")
    verify.add_argument("targets", nargs="+", type=Path, metavar="FILE", help="stage.json / report.json files")
    verify.add_argument("--allowed-signers", type=Path, required=True, help="OpenSSH allowed-signers file")


def _stage_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", default=None, help="session id (default: r<UTC timestamp>)")
    p.add_argument("--out", type=Path, default=None, help=f"parent of the session directory (default: {DEFAULT_OUT})")
    p.add_argument("--released", default=None, metavar="REF", help="git ref of the prior release (released:<REF> arm)")
    p.add_argument("--skip", action="append", default=[], metavar="GATE",
                   help="do not run this credential-free gate (recorded as skipped: the release stays incomplete)")
    p.add_argument("--force", action="store_true", help="replace an existing stage of the same session")
    p.add_argument("--allow-dirty-candidate", default=None, metavar="REASON",
                   help="accept a candidate that is not a clean tested HEAD (tracked changes, untracked files not "
                        "ignored, a detached HEAD that is no tag and not CI's ref); REASON is recorded and shown in the report")
    p.add_argument("--sign", type=Path, default=None, metavar="KEY", help="sign the stage with this SSH private key")
    p.add_argument("--run", action="store_true", help="record every required arm once into the session's raw/ first")
    p.add_argument("--from-session", action="store_true",
                   help="stage the runs already recorded in <out>/<session>/raw/ (after --run; with --force to replace a stage)")
    add_agent_arguments(p, "agent", "model", "model-server", "base-url", "agent-binary", note="--run: ",
                        help={"model-server": "scripted model turns (yields incomplete)"})
    p.add_argument("-j", "--jobs", type=bounded_int(1, JOBS_MAX), default=1, help=f"--run: parallel runs, 1..{JOBS_MAX}")
    p.add_argument("--judge", action="store_true",
                   help="(session runs) judge 4/5 before sealing with the panel of skill-eval.toml's [judge] table")
    add_judge_arguments(p, prefix="judge-", note="(session runs) judge 4/5 before sealing: ")


def _stage(args: argparse.Namespace) -> int:
    from skill_eval.commands import pr
    from skill_eval.reporting.release import candidate as candidate_mod
    from skill_eval.reporting.release import flow

    cfg = config.load(args.root)
    session = args.session or datetime.now(UTC).strftime("r%Y%m%dt%H%M%Sz")
    out = flag_or_config(args.out, cfg.root / DEFAULT_OUT)
    source = "session" if args.run or args.from_session else "evidence"
    if args.run and args.from_session:
        raise InputError("--run records a new session; --from-session stages one recorded earlier", fix="pass one of them")
    judging = bool(args.judge or args.judge_base_url or args.judge_model or args.judge_model_server)
    if judging and source != "session":
        raise InputError("--judge-* judges a release session's runs (with --run or --from-session)",
                         fix="judge the committed evidence with `skill-eval judge`, then stage it")
    if judging:
        from skill_eval.core import seal

        if seal.signing_key(repo=cfg.root) is None:  # unsigned judgments would count for nothing (grading/judgments.py)
            raise ConfigError(f"--judge-* signs the judgments it writes, and {seal.KEY_ENV} is not set",
                              field=seal.KEY_ENV, fix="set it to your evidence signing key (docs/SIGNING.md)")
    judged: list[str] = []
    with contextlib.ExitStack() as stack:  # the judge's settings are checked before anything is recorded
        from skill_eval.commands.judge import panel, settings

        ps = settings(cfg, args.judge_base_url, args.judge_model, args.judge_api_key_env, args.judge_model_server,
                      args.judge_kappa_floor)
        if args.judge and not (ps.models or ps.model_servers):
            raise ConfigError("--judge judges with the [judge] panel, and skill-eval.toml has no [judge] models",
                              field="judge.models", fix='add [judge] models = ["judge-a", "judge-b"] (and base_urls), or pass --judge-model')
        ep = stack.enter_context(panel(ps.base_urls, ps.models, ps.api_key_env, ps.model_servers,
                                       flag="--judge-")) if judging else None
        if ep is not None and len(ep) < 2:
            raise ConfigError("a release is judged by a panel of at least 2 judge models", field="--judge-model",
                              fix="repeat --judge-model (or --judge-model-server) for each judge")
        # the candidate: a dirty or unnamed HEAD is refused before anything is recorded or judged
        cand = candidate_mod.settle(candidate_mod.inspect(cfg.root), args.allow_dirty_candidate)
        if args.run:
            from skill_eval.reporting.release import record

            record.record_session(cfg, out_dir=out, session=session, released_ref=args.released, args=args)
        if ep is not None:
            judged = _judge(cfg, ep, out / session / "raw", ps.kappa_floor)
    checks = pr.credential_free_checks(cfg, tuple(args.skip))
    st = flow.stage(cfg, out_dir=out, session=session, source=source, released_ref=args.released, checks=checks,
                    sign_key=args.sign, force=args.force or args.run, candidate=cand)
    cases = st.record["snapshot"]["cases"]
    counts: dict[str, int] = {}
    for c in cases.values():
        counts[c["state"]] = counts.get(c["state"], 0) + 1
    failed = [c["gate"] for c in checks if c["status"] == "fail"]
    lines = [f"release stage {session}: {len(cases)} case(s) ({', '.join(f'{v} {k}' for k, v in sorted(counts.items())) or 'none'}), "
             f"seal {st.record['seal'][:16]}", f"  stage:     {st.stage_path}", f"  worksheet: {st.worksheet_path}"]
    if st.signature:
        lines.append(f"  signature: {st.signature}")
    lines.append(f"  candidate: {candidate_mod.describe(cand)}")
    binding = st.record["snapshot"]["bindings"]["cells"]
    if binding["configured_by"] != "none":
        lines.append(f"  cells ({binding['configured_by']}): {', '.join(binding['required'])}"
                     + (f"; recorded, not required: {', '.join(binding['other'])}" if binding["other"] else ""))
    for skill, controls in sorted(st.record["snapshot"]["lift"]["skills"].items()):
        lines += [f"  lift gate {skill} over {r['control']}: {r['gate']} ({r['reason']})" for r in controls.values() if r["control"]]
    lines += [f"  {x}" for x in judged]
    lines += [f"  FAIL credential-free gate {g}" for g in failed]
    lines.append("stopped for human review: fill the worksheet, then "
                 f"`skill-eval release resume {st.stage_path} --worksheet {st.worksheet_path}`")
    emit(args, lines, {"session": session, "stage": str(st.stage_path), "worksheet": str(st.worksheet_path),
                       "seal": st.record["seal"], "checks": checks, "cases": counts, "lift": st.record["snapshot"]["lift"],
                       "judge": judged})
    return 1 if failed or any(x.startswith("FAIL") for x in judged) else 0


def _judge(cfg: config.Config, ep: list[Endpoint], raw: Path, floor: float) -> list[str]:
    """Judge the session's runs before the stage is sealed; a judge failure leaves those runs unjudged (incomplete)."""
    from skill_eval.commands.judge import report_lines
    from skill_eval.reporting.release import judging

    if not raw.is_dir():
        raise InputError("the session has no raw evidence to judge", source=raw, fix="record it first (--run)")
    lines, _ = report_lines(*judging.judge_session(cfg, raw, ep, floor=floor))
    return [x for x in lines if x.startswith(("FAIL", "judge:", "agreement", "needs human review"))]


def _resume(args: argparse.Namespace) -> int:
    from skill_eval.reporting.release import flow

    if len(args.targets) != 1 or args.worksheet is None:
        raise InputError("resume needs exactly one STAGE and --worksheet", fix="skill-eval release resume STAGE --worksheet W")
    cfg = config.load(args.root)
    r = flow.resume(cfg, args.targets[0], args.worksheet, waiver_path=args.waiver, out_dir=args.out, sign_key=args.sign,
                    allowed_signers=args.allowed_signers)
    rec = r.record
    lines = [f"release report {rec['session']}: {rec['outcome'].upper()}", *(f"  {x}" for x in rec["reasons"][:20]),
             f"  report: {r.json_path}", f"  markdown: {r.md_path}"]
    if r.signature:
        lines.append(f"  signature: {r.signature}")
    emit(args, lines, {"outcome": rec["outcome"], "reasons": rec["reasons"], "report": str(r.json_path), "markdown": str(r.md_path)})
    return 0 if rec["outcome"] in ("pass", "waived") else 1


def _verify(args: argparse.Namespace) -> int:
    from skill_eval.core import strict
    from skill_eval.reporting.release import report as report_mod
    from skill_eval.reporting.release import sign as sign_mod
    from skill_eval.reporting.release import stage as stage_mod

    if not args.targets or args.allowed_signers is None:
        raise InputError("verify needs FILE... and --allowed-signers", fix="skill-eval release verify stage.json --allowed-signers F")
    lines, results = [], []
    for path in args.targets:
        principal = sign_mod.verify(path, args.allowed_signers)
        rec = strict.load_json(path)
        if isinstance(rec, dict) and "seal" in rec:
            stage_mod.decode(path)
        else:
            report_mod.decode(path)
        lines.append(f"ok {path}: signed by {principal}")
        results.append({"file": str(path), "principal": principal})
    emit(args, lines, {"verified": results})
    return 0


def run(args: argparse.Namespace) -> int:
    return {"stage": _stage, "resume": _resume, "verify": _verify}[args.action](args)
