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
import os
from collections.abc import Iterator
from pathlib import Path

from skill_eval.content import config
from skill_eval.core.errors import ConfigError
from skill_eval.core.output import emit
from skill_eval.grading import evidence
from skill_eval.grading import judge as judge_mod
from skill_eval.grading.graders import Catalog

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
    version = catalog.rubric.version if catalog.rubric else None
    found, _ = evidence.scan(cfg)
    return [f.path for f in found if f.meta is not None and f.meta.get("kind") == "behavioral"
            and (args.rejudge or judge_mod.needs_judging(f.path, version, dims))]


@contextlib.contextmanager
def endpoint(base_url: str | None, model: str | None, api_key_env: str | None,
             model_server: str | None, flag: str = "--") -> Iterator[judge_mod.Endpoint]:
    """The judge's endpoint (also used by `release stage`, whose flags carry a `--judge-` prefix)."""
    if model_server:
        if not model_server.startswith("scripted:"):
            raise ConfigError(f"{flag}model-server {model_server!r}: only scripted:PATH is supported")
        from skill_eval.harness.modelserver import load_script, start_server

        script = load_script(Path(model_server.split(":", 1)[1]))
        with start_server("openai-responses", script) as handle:
            yield judge_mod.Endpoint(handle.url + "/v1", script.model_id, transport="scripted openai-chat")
        return
    if not base_url or not model:
        raise ConfigError(f"the judge needs {flag}base-url and {flag}model (or {flag}model-server scripted:PATH)")
    key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not key:
        raise ConfigError(f"{api_key_env} is not set", field=f"{flag}api-key-env")
    yield judge_mod.Endpoint(base_url, model, key)


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.root)
    catalog = Catalog(cfg)
    if catalog.rubric is None:
        raise ConfigError("no rubric.yaml: nothing defines what dimensions 4 and 5 mean", source=cfg.evals_dir / "rubric.yaml")
    dims = sorted(set(args.dimension or judge_mod.JUDGED))
    targets = _targets(cfg, args, catalog, dims)
    with endpoint(args.base_url, args.model, args.api_key_env, args.model_server) as ep:
        results = [judge_mod.judge_bundle(cfg, catalog, ep, bundle, dims) for bundle in targets]
    lines, failed = report_lines(results)
    emit(args, lines, {"written": [{"bundle": str(r.bundle), "judgments": r.entries} for r in results if r.entries or not r.failures],
                       "failures": failed})
    return 1 if failed else 0


def report_lines(results: list[judge_mod.Judged]) -> tuple[list[str], int]:
    lines: list[str] = []
    for r in results:
        lines += r.failures
        lines += [f"{'pass' if e['passed'] else 'fail'} {r.bundle} dimension {e['dimension']} (score {e['score']})" for e in r.entries]
    failed = sum(len(r.failures) for r in results)
    lines.append(f"judge: {sum(len(r.entries) for r in results)} judgment(s) written, {failed} failure(s)")
    return lines, failed
