"""`skill-eval judge`: record stamped judgments for dimensions 4 and 5 (off-CI; needs a judge model).

Judges each behavioural bundle given (default: every bundle under evidence/ without a judgment
for the current rubric version) through any OpenAI-style endpoint (`--base-url`, `--model`,
key from `--api-key-env`) or a scripted model server (`--model-server scripted:PATH`). The
judge is blinded: it sees the scenario and final.md, never the arm, agent or model. Entries are
appended to the bundle's judgments.json; a failed request or a malformed verdict writes nothing
(exit 1) — never a zero. `pr` and `release` only replay what this command wrote.

A panel: repeat `--model` (with one `--base-url` for all, or one `--base-url` per model) or
`--model-server`. Every judge grades every item; per dimension, the panel's agreement over the
items of this invocation (Cohen's κ for two judges, Fleiss' κ for more) is printed; an item the
judges disagree on, or of a dimension whose κ is below `--kappa-floor` (default 0.6), is written
as `needs human review` — replayed as not judged, never a pass (exit 1 so it is seen).

The panel can live in skill-eval.toml instead of flags (flags win when given):

    [judge]
    models = ["judge-model-a", "judge-model-b"]
    base_urls = ["https://api.example.com/v1"]   # one for all, or one per model
    api_key_env = "JUDGE_API_KEY"
    kappa_floor = 0.6
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from skill_eval.commands._options import add_judge_arguments, flag_or_config
from skill_eval.content import config
from skill_eval.core.errors import ConfigError
from skill_eval.core.output import emit
from skill_eval.grading import evidence, regrade
from skill_eval.grading import judge as judge_mod
from skill_eval.grading.graders import Catalog

DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="*", type=Path, help="bundle directories (default: unjudged bundles under evidence/)")
    p.add_argument("--dimension", type=int, action="append", choices=judge_mod.JUDGED, default=None, help="default: 4 and 5")
    add_judge_arguments(p)
    p.add_argument("--rejudge", action="store_true", help="also judge bundles that already have a current judgment")


def _targets(cfg: config.Config, args: argparse.Namespace, catalog: Catalog, dims: list[int]) -> list[Path]:
    if args.bundles:
        return list(args.bundles)
    version = catalog.rubric.version if catalog.rubric else None
    found, _ = evidence.scan(cfg)
    return [f.path for f in found if f.meta is not None and f.meta.get("kind") == "behavioral"
            and (args.rejudge or judge_mod.needs_judging(f.path, version, dims, regrade.signers_of(cfg)))]


KAPPA_FLOOR_DEFAULT = 0.6


@dataclass(frozen=True)
class PanelSettings:
    """Who judges: flags when any is given, else skill-eval.toml's [judge] table."""

    base_urls: list[str] | None
    models: list[str] | None
    api_key_env: str | None
    model_servers: list[str] | None
    kappa_floor: float
    from_config: bool


def settings(cfg: config.Config, base_urls: list[str] | None, models: list[str] | None, api_key_env: str | None,
             model_servers: list[str] | None, kappa_floor: float | None) -> PanelSettings:
    """Resolve the panel: any judge flag replaces the [judge] table whole (never a mix of the two)."""
    table = cfg.raw.get("judge") or {}
    floor = flag_or_config(kappa_floor, float(table.get("kappa_floor", KAPPA_FLOOR_DEFAULT)))
    if base_urls or models or model_servers:
        return PanelSettings(base_urls, models, api_key_env, model_servers, floor, False)
    return PanelSettings(table.get("base_urls"), table.get("models"), api_key_env or table.get("api_key_env"), None,
                         floor, bool(table.get("models")))


@contextlib.contextmanager
def panel(base_urls: list[str] | None, models: list[str] | None, api_key_env: str | None,
          model_servers: list[str] | None, flag: str = "--") -> Iterator[list[judge_mod.Endpoint]]:
    """The judges' endpoints, one per `--model` (or `--model-server`); also used by `release stage`."""
    urls, names, servers = base_urls or [], models or [], model_servers or []
    if servers and (urls or names):
        raise ConfigError(f"a panel is either scripted ({flag}model-server) or served ({flag}base-url/{flag}model), not both")
    if len(urls) > 1 and len(urls) != len(names):
        raise ConfigError(f"{len(urls)} {flag}base-url for {len(names)} {flag}model: give one, or one per model")
    with contextlib.ExitStack() as stack:
        if servers:
            eps = [stack.enter_context(endpoint(None, None, None, s, flag)) for s in servers]
        elif not names:
            eps = [stack.enter_context(endpoint(urls[0] if urls else None, None, api_key_env, None, flag))]
        else:
            eps = [stack.enter_context(endpoint(urls[i] if len(urls) > 1 else (urls[0] if urls else None), m, api_key_env, None, flag))
                   for i, m in enumerate(names)]
        if len({ep.model for ep in eps}) != len(eps):
            raise ConfigError(f"the panel names one judge model twice ({[ep.model for ep in eps]}): its judges must differ")
        yield eps


@contextlib.contextmanager
def endpoint(base_url: str | None, model: str | None, api_key_env: str | None,
             model_server: str | None, flag: str = "--") -> Iterator[judge_mod.Endpoint]:
    """One judge's endpoint (also used by `release stage`, whose flags carry a `--judge-` prefix)."""
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
    ps = settings(cfg, args.base_url, args.model, args.api_key_env, args.model_server, args.kappa_floor)
    with panel(ps.base_urls, ps.models, ps.api_key_env, ps.model_servers) as eps:
        results, agree = judge_mod.judge_panel(cfg, catalog, eps, targets, dims, floor=ps.kappa_floor)
    lines, failed = report_lines(results, agree)
    from skill_eval.core import seal

    if seal.signing_key(repo=cfg.root) is None and any(r.entries for r in results):
        lines.append(f"judge: {seal.KEY_ENV} is not set: judgments.json was written UNSIGNED, and no gate counts "
                     "an unsigned judgment (docs/SIGNING.md)")
    review = [x for r in results for x in r.review]
    emit(args, lines, {"written": [{"bundle": str(r.bundle), "judgments": r.entries} for r in results if r.entries or not r.failures],
                       "failures": failed, "judges": [ep.model for ep in eps],
                       "agreement": {str(d): a.record() for d, a in sorted(agree.items())}, "needs_human_review": review})
    return 1 if failed or review else 0


def report_lines(results: list[judge_mod.Judged], agree: dict[int, judge_mod.Agreement] | None = None) -> tuple[list[str], int]:
    lines: list[str] = []
    for r in results:
        lines += r.failures
        lines += [f"{'needs human review' if 'needs_human_review' in e else 'pass' if e['passed'] else 'fail'} {r.bundle} "
                  f"dimension {e['dimension']} (score {e['score']}{', ' + e['needs_human_review'] if 'needs_human_review' in e else ''})"
                  for e in r.entries]
    for d, a in sorted((agree or {}).items()):
        k = "undefined (no variation)" if a.kappa is None else f"{a.kappa:.3f}"
        lines.append(f"agreement dimension {d}: {a.statistic} kappa {k} over {a.items} item(s), floor {a.floor}"
                     f"{' -- BELOW THE FLOOR: every item needs human review' if a.low else ''}")
    failed = sum(len(r.failures) for r in results)
    review = sum(len(r.review) for r in results)
    lines.append(f"judge: {sum(len(r.entries) for r in results)} judgment(s) written, {review} needing human review, {failed} failure(s)")
    return lines, failed
