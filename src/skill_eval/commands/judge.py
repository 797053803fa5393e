"""`skill-eval judge`: record stamped judgments for dimensions 4 and 5 (off-CI; needs a judge model).

Judges each behavioural bundle given (default: every bundle under evidence/ without a judgment
for the current rubric version) through any OpenAI-style endpoint (`--base-url`, `--model`,
key from `--api-key-env`) or a scripted model server (`--model-server scripted:PATH`). The
judge is blinded: it sees the scenario and final.md, never the arm, agent or model. Entries are
appended to the bundle's judgments.json; a failed request or a malformed verdict writes nothing
(exit 1) — never a zero. `pr` and `release` only replay what this command wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

from skill_eval.content import config
from skill_eval.core import strict
from skill_eval.core.errors import ConfigError, SkillEvalError, message_of
from skill_eval.core.output import emit
from skill_eval.grading import evidence
from skill_eval.grading import judge as judge_mod
from skill_eval.grading.graders import Catalog, judged

NAME = "judge"
HELP = "judge dimensions 4/5 of behavioural bundles with a (blinded) judge model; appends to judgments.json"
DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="*", type=Path, help="bundle directories (default: unjudged bundles under evidence/)")
    p.add_argument("--dimension", type=int, action="append", choices=judge_mod.JUDGED, default=None, help="default: 4 and 5")
    p.add_argument("--base-url", default=None, help="OpenAI-style endpoint including /v1")
    p.add_argument("--model", default=None, help="judge model id (sent and stamped)")
    p.add_argument("--api-key-env", default=None, metavar="VAR", help="environment variable holding the endpoint's key")
    p.add_argument("--model-server", default=None, metavar="scripted:PATH", help="a scripted judge (tests; never counts as judged for release)")
    p.add_argument("--rejudge", action="store_true", help="also judge bundles that already have a current judgment")


def _targets(cfg: config.Config, args: argparse.Namespace, catalog: Catalog, dims: list[int]) -> list[Path]:
    if args.bundles:
        return list(args.bundles)
    found, _ = evidence.scan(cfg)
    out = []
    for f in found:
        if f.meta is None or f.meta.get("kind") != "behavioral":
            continue
        doc = None
        if (f.path / "judgments.json").is_file():
            with contextlib.suppress(SkillEvalError):
                doc = strict.load_json(f.path / "judgments.json")
        version = catalog.rubric.version if catalog.rubric else None
        if args.rejudge or any(judged.replay(doc, version, d)[0] == "not_judged" for d in dims):
            out.append(f.path)
    return out


@contextlib.contextmanager
def _endpoint(args: argparse.Namespace) -> Iterator[judge_mod.Endpoint]:
    if args.model_server:
        if not args.model_server.startswith("scripted:"):
            raise ConfigError(f"--model-server {args.model_server!r}: only scripted:PATH is supported")
        from skill_eval.harness.modelserver import load_script, start_server

        script = load_script(Path(args.model_server.split(":", 1)[1]))
        with start_server("openai-responses", script) as handle:
            yield judge_mod.Endpoint(handle.url + "/v1", script.model_id, transport="scripted openai-chat")
        return
    if not args.base_url or not args.model:
        raise ConfigError("the judge needs --base-url and --model (or --model-server scripted:PATH)")
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and not key:
        raise ConfigError(f"{args.api_key_env} is not set", field="--api-key-env")
    yield judge_mod.Endpoint(args.base_url, args.model, key)


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.root)
    catalog = Catalog(cfg)
    if catalog.rubric is None:
        raise ConfigError("no rubric.yaml: nothing defines what dimensions 4 and 5 mean", source=cfg.evals_dir / "rubric.yaml")
    dims = sorted(set(args.dimension or judge_mod.JUDGED))
    targets = _targets(cfg, args, catalog, dims)
    lines, results, failed = [], [], 0
    with _endpoint(args) as ep:
        for bundle in targets:
            try:
                meta = strict.load_json(bundle / "meta.json")
                scenario = catalog.scenarios.get(meta.get("scenario", "")) or catalog.golden.get(meta.get("scenario", ""))
                if meta.get("kind") != "behavioral" or scenario is None:
                    raise judge_mod.JudgeError(f"not a behavioural bundle of a known scenario ({meta.get('scenario')!r})")
                truth = catalog.truth.get(scenario.fixture)
                truth_rec = dataclasses.asdict(truth) if dataclasses.is_dataclass(truth) else None
                final_md = strict.read_text(bundle / "final.md", max_bytes=cfg.max_bundle_file_bytes)
            except SkillEvalError as exc:
                failed += 1
                lines.append(f"FAIL {bundle}: {message_of(exc)}")
                continue
            entries = []
            for d in dims:
                try:
                    entries.append(judge_mod.judge_one(ep, catalog.rubric, d, scenario, truth_rec, final_md))
                except judge_mod.JudgeError as exc:
                    failed += 1
                    lines.append(f"FAIL {bundle} dimension {d}: {message_of(exc)}; no score written")
            if entries:
                judge_mod.append(bundle, entries)
            for e in entries:
                lines.append(f"{'pass' if e['passed'] else 'fail'} {bundle} dimension {e['dimension']} (score {e['score']})")
            results.append({"bundle": str(bundle), "judgments": entries})
    lines.append(f"judge: {sum(len(r['judgments']) for r in results)} judgment(s) written, {failed} failure(s)")
    emit(args, lines, {"written": results, "failures": failed})
    return 1 if failed else 0
