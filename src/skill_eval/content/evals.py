"""Typed, validated views of the evaluation content under the evals root.

scenarios.yaml, ground_truth.json, trigger_corpus.yaml and rubric.yaml are each read
strictly, validated against their schema, then cross-checked (a scenario must name a
real skill, fixture and invocation class) and checked by the registry rules
(skill_eval.content.registry: modes, seeds, names, coverage). One fact lives in one place: Category A
scenarios take their expected verdict from ground truth, never restating it; category
oracle scenarios ask no verdict question and have no ground truth at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from skill_eval.content import registry
from skill_eval.content.config import Config
from skill_eval.content.registry import ORACLE, Seed
from skill_eval.core import fsio, schemas, strict
from skill_eval.core import memo as memo_mod
from skill_eval.core.errors import ConfigError, InputError, NotApplicable, SkillEvalError

SCENARIOS = "scenarios.yaml"
GROUND_TRUTH = "ground_truth.json"
TRIGGER_CORPUS = "trigger_corpus.yaml"
RUBRIC = "rubric.yaml"
FIXTURES = "fixtures"
GOLDEN_DIR = "golden"
GOLDEN_SCENARIOS = "scenarios.yaml"
GOLDEN_PREFIX = "golden-"
UNCERTAINTY_KINDS = ("not_comparable", "evidence_too_shallow", "matrix_target_unrun", "contract_coverage_incomplete")


@dataclass(frozen=True)
class TruthCase:
    """One fixture's ground truth (golden truth record): the pair compared and the expected outcome."""

    id: str
    record: dict[str, Any]

    @property
    def expected(self) -> str | None:
        return cast("str | None", self.record["expected"])

    @property
    def expected_exit(self) -> int:
        return cast(int, self.record["expected_exit"])

    @property
    def min_evidence(self) -> tuple[str, ...]:
        return tuple(self.record["min_evidence"])

    @property
    def consumer_expected(self) -> str | None:
        return cast("str | None", self.record.get("consumer_expected"))

    @property
    def targets(self) -> dict[str, dict[str, Any]]:
        return cast("dict[str, dict[str, Any]]", self.record.get("targets", {}))


@dataclass(frozen=True)
class Scenario:
    """One behavioural scenario of scenarios.yaml: its skill, prompt, fixture and what a good run shows."""

    id: str
    skill: str
    category: str
    status: str
    prompt: str
    fixture: str
    invocation_class: str
    record: dict[str, Any]
    probe: str | None = None
    setup: tuple[tuple[str, ...], ...] = ()
    actions: tuple[tuple[str, ...], ...] = ()
    oracle: dict[str, dict[str, Any]] = field(default_factory=dict)
    expected: dict[str, Any] | None = None
    holdout: bool = False  # scored apart from the scenarios descriptions/skills were tuned on
    mode: str | None = None  # one of [evals.modes] (None: the host declares no modes)
    seed: Seed | None = None  # fixtures/<fixture>/seed.json, run by the runner before setup and the agent
    verdict: bool = True  # a verdict question (category A/B of a verdict skill): dimensions 2, 3 and 6 apply

    @property
    def ready(self) -> bool:
        return self.status == "ready"

    @property
    def sandbox(self) -> str:
        """The sandbox name: the case id (the task-tool seed's rule; the registry refuses any other)."""
        return self.id

    @property
    def zero_tolerance_assertions(self) -> tuple[str, ...]:
        """Oracle assertions that must hold in every one of the k runs (pass^k)."""
        return tuple(sorted(n for n, spec in self.oracle.items() if spec.get("zero_tolerance") is True))

    def expected_verdict(self, truth: TruthCase) -> str | None:
        """Category A resolves from ground truth; Category B states it explicitly."""
        if self.category == "A" or self.expected is None:
            return truth.expected
        return cast("str | None", self.expected["verdict"])

    @property
    def uncertainty(self) -> str | None:
        return (self.expected or {}).get("uncertainty")


@dataclass(frozen=True)
class TriggerPrompt:
    """One prompt of the trigger corpus and the skill that should activate on it (None: none should)."""

    id: str
    prompt: str
    expected_skill: str | None


@dataclass(frozen=True)
class Dimension:
    """One rubric dimension: its id, name, grader and gate."""

    id: int
    name: str
    grader: str
    gate: str
    stage: str
    description: str
    judge_prompt: str | None = None


@dataclass(frozen=True)
class Rubric:
    """The rubric (rubric.yaml): its version and its dimensions."""

    version: str
    dimensions: tuple[Dimension, ...]

    def by_id(self, dim: int) -> Dimension:
        return next(d for d in self.dimensions if d.id == dim)

    @property
    def zero_tolerance(self) -> tuple[int, ...]:
        return tuple(sorted(d.id for d in self.dimensions if d.gate == "zero_tolerance"))


def evals_path(cfg: Config, rel: str) -> Path:
    """A path below the evals root, refused if a symlink on the way leads outside the repository."""
    return fsio.repo_path(cfg.root, f"{cfg.evals_root}/{rel}")


def present(cfg: Config, name: str) -> bool:
    """Whether an optional content file exists (a host turns a feature on by adding it).

    A symlink or other non-regular entry counts as present, so its reader refuses it loudly."""
    path = cfg.evals_dir / name
    return path.exists() or path.is_symlink()


def _validated_yaml(cfg: Config, path: Path, schema: str) -> Any:
    """A content YAML file parsed and validated, once per check (`_shared`): scenarios, the trigger corpus
    and the rubric are each read by the grading catalog and again by the pack digests selection needs.
    Read-only for every caller: the typed records keep references into it (Scenario.record, .oracle,
    .expected, .probe), shared by every build in the check, and nothing writes to them."""
    return _shared(cfg, ("yaml", str(path), schema), lambda: schemas.validate(strict.load_yaml(path), schema, path))


def _shared(cfg: Config, key: tuple[Any, ...], build: Any, *keep: Any) -> Any:
    """`build()`, computed once per Config inside a `memo.sharing()` block (one check: nothing on disk
    changes during it). The memo holds cfg (and `keep`, objects whose id is part of `key`) so no id is reused."""
    memo = memo_mod.shared_memo()
    if memo is None:
        return build()
    full = ("content", id(cfg), *key)
    if full not in memo:
        memo[full] = (cfg, keep, build())
    return memo[full][2]


def load_ground_truth(cfg: Config) -> dict[str, TruthCase]:
    """ground_truth.json's cases; a host whose subject produces no verdicts may have none (oracle scenarios only)."""
    return dict(_shared(cfg, ("truth",), lambda: _load_ground_truth(cfg)))


def _load_ground_truth(cfg: Config) -> dict[str, TruthCase]:
    path = evals_path(cfg, GROUND_TRUTH)
    if not cfg.subject.has_verdicts and not present(cfg, GROUND_TRUTH):
        return {}
    raw = schemas.validate(strict.load_json(path), "ground_truth", path)
    verdicts = set(cfg.subject.verdicts)
    cases = {}
    for case_id, rec in raw["cases"].items():
        for key in ("expected", "consumer_expected"):
            value = rec.get(key)
            if value is not None and value not in verdicts:
                raise ConfigError(f"{value!r} is not a subject verdict", source=path, field=f"cases.{case_id}.{key}",
                                  fix=f"use one of {', '.join(cfg.subject.verdicts)} or null")
        if not evals_path(cfg, f"{FIXTURES}/{case_id}").is_dir():
            raise ConfigError(f"fixture directory {FIXTURES}/{case_id}/ is missing", source=path, field=f"cases.{case_id}",
                              fix=f"add {FIXTURES}/{case_id}/ or remove the case")
        cases[case_id] = TruthCase(case_id, rec)
    return cases


def _require_scenarios(cfg: Config) -> None:
    """A missing scenarios.yaml: not applicable (exit 0) on a host that has recorded nothing yet, as
    `pr` reports it; an error with its fix once evidence or golden bundles exist (they need it)."""
    path = evals_path(cfg, SCENARIOS)
    if path.exists() or path.is_symlink():
        return
    fix = (f"add {cfg.evals_root}/{SCENARIOS} (behaviour scenarios; schema: scenarios.schema.json), "
           "then record them with `skill-eval run`")
    if present(cfg, "evidence") or present(cfg, "golden"):
        raise InputError("missing, but evidence or golden bundles exist and are graded against it", source=path, fix=fix)
    raise NotApplicable("not applicable: no behaviour scenarios yet (nothing recorded to grade)", source=path, fix=fix)


def load_scenarios(cfg: Config, *, skills: set[str] | None = None, truth: dict[str, TruthCase] | None = None,
                   problems: list[SkillEvalError] | None = None) -> list[Scenario]:
    """Load and cross-check scenarios.yaml, registry rules included (skill_eval.content.registry).

    `skills` (known skill names) enables the skill checks (each scenario's skill exists, every
    skill x mode is covered). `problems`: collect every problem there instead of raising the first
    (`skill-eval registry`); the scenarios that could be built are still returned."""
    _require_scenarios(cfg)
    truth = truth if truth is not None else load_ground_truth(cfg)
    if problems is not None:  # collecting problems: always a fresh build
        return _build_scenarios(cfg, evals_path(cfg, SCENARIOS), truth, skills=skills, problems=problems)
    key = ("scenarios", None if skills is None else frozenset(skills), _truth_key(truth))
    return list(_shared(cfg, key, lambda: _build_scenarios(cfg, evals_path(cfg, SCENARIOS), truth, skills=skills), truth))


def _truth_key(truth: dict[str, TruthCase]) -> tuple[tuple[str, int], ...]:
    """Identity of a truth table by its cases (load_ground_truth hands out copies of one dict)."""
    return tuple((k, id(v)) for k, v in truth.items())


def golden_dir(cfg: Config) -> Path:
    """The golden corpus root (agent-evals/skills/golden/): its own scenarios live here too.

    A symlink leading outside the repository, on the way or inside it, is refused. Walked once per
    check (`_shared`): the grading Catalog asks for it twice (its root, its scenarios file) and the
    golden gate twice more (its root, its manifest)."""
    root: Path = _shared(cfg, ("golden_dir",), lambda: fsio.repo_tree(cfg.root, f"{cfg.evals_root}/{GOLDEN_DIR}"))
    return root


def load_golden_scenarios(cfg: Config, truth: dict[str, TruthCase]) -> list[Scenario]:
    """Golden-only scenarios (golden/scenarios.yaml): built exactly like scenarios.yaml, ids `golden-*`.

    They share the one builder (and so its duplicate-id, fixture, class and oracle checks);
    the prefix keeps them from ever being mistaken for — or colliding with — a real scenario.
    """
    path = golden_dir(cfg) / GOLDEN_SCENARIOS
    if not path.is_file():
        return []
    return _build_scenarios(cfg, path, truth, id_prefix=GOLDEN_PREFIX)


def _build_scenarios(cfg: Config, path: Path, truth: dict[str, TruthCase], *, skills: set[str] | None = None,
                     id_prefix: str | None = None, problems: list[SkillEvalError] | None = None) -> list[Scenario]:
    """The one scenario builder: schema, then every cross-check and registry rule, then typed records."""
    raw = _validated_yaml(cfg, path, "scenarios")
    found: list[SkillEvalError] = []
    seen: set[str] = set()
    out = []
    for i, rec in enumerate(raw["scenarios"]):
        sc = _build_one(cfg, path, truth, rec, f"scenarios.{i}", seen, skills, id_prefix, found)
        if sc is not None:
            out.append(sc)
    found += registry.set_problems(cfg, raw["scenarios"], path, skills)
    if problems is None and found:
        raise found[0]
    if problems is not None:
        problems.extend(found)
    return out


def _build_one(cfg: Config, path: Path, truth: dict[str, TruthCase], rec: dict[str, Any], where: str, seen: set[str],
               skills: set[str] | None, id_prefix: str | None, found: list[SkillEvalError]) -> Scenario | None:
    """One scenario record, or None (its problems appended to `found`)."""
    sid = rec["id"]
    start = len(found)

    def bad(message: str, field: str, fix: str) -> None:
        found.append(ConfigError(message, source=path, field=f"{where}.{field}", fix=fix))

    if id_prefix is not None and not sid.startswith(id_prefix):
        bad(f"{sid}: id must start with {id_prefix!r}", "id", f"rename it {id_prefix}{sid}")
    if sid in seen:
        bad(f"duplicate scenario id {sid!r}", "id", "give every scenario its own id")
    seen.add(sid)
    oracle_case = rec["category"] == ORACLE
    fixture = rec.get("fixture", sid)
    if not oracle_case and fixture not in truth:
        bad(f"{sid}: fixture {fixture!r} has no ground-truth case (and so no fixture)", "fixture",
            f"add it to {GROUND_TRUTH} and {FIXTURES}/")
    elif not evals_path(cfg, f"{FIXTURES}/{fixture}").is_dir():
        bad(f"{sid}: fixture directory {FIXTURES}/{fixture}/ is missing", "fixture", f"add {FIXTURES}/{fixture}/")
    if skills is not None and rec["skill"] not in skills:
        bad(f"{sid}: skill {rec['skill']!r} does not exist in {cfg.skills_source}/", "skill",
            "name a skill folder of the source tree")
    cls = rec.get("invocation_class")
    if cls is not None and cls not in cfg.subject.invocation_classes:
        bad(f"{sid}: invocation_class {cls!r} is not in subject.invocation_classes", "invocation_class",
            f"use one of {', '.join(sorted(cfg.subject.invocation_classes)) or '(none declared)'}")
    expected = rec.get("expected")
    if expected is not None:
        for key in ("verdict", "consumer_verdict"):
            value = expected.get(key)
            if value is not None and value not in cfg.subject.verdicts:
                bad(f"{sid}: {value!r} is not a subject verdict", f"expected.{key}",
                    f"use one of {', '.join(cfg.subject.verdicts)}")
    if len(found) > start:
        return None  # the registry rules below read the fixture directory
    seed = None
    try:
        seed = registry.load_seed(cfg, fixture)
    except SkillEvalError as exc:  # unreadable, not strict JSON, or off-schema: one line naming the file
        found.append(exc)
    else:
        if seed is not None:
            found.extend(registry.seed_problems(cfg, seed))
    found.extend(registry.record_problems(cfg, rec, where, path, seed, skills, runnable=id_prefix is None))
    if len(found) > start:
        return None
    return Scenario(
        id=sid, skill=rec["skill"], category=rec["category"], status=rec["status"], prompt=rec["prompt"],
        fixture=fixture, invocation_class=rec.get("invocation_class", ""), record=rec, probe=rec.get("probe"),
        setup=tuple(tuple(a) for a in rec.get("setup", ())), actions=tuple(tuple(a) for a in rec.get("actions", ())),
        oracle=rec.get("oracle", {}), expected=expected, holdout=rec.get("holdout", False), mode=rec.get("mode"),
        seed=seed, verdict=not oracle_case and cfg.subject.verdict_skill(rec["skill"]),
    )


def load_trigger_corpus(cfg: Config, *, skills: set[str] | None = None) -> list[TriggerPrompt]:
    key = ("trigger_corpus", None if skills is None else frozenset(skills))
    return list(_shared(cfg, key, lambda: _load_trigger_corpus(cfg, skills)))


def _load_trigger_corpus(cfg: Config, skills: set[str] | None) -> list[TriggerPrompt]:
    path = evals_path(cfg, TRIGGER_CORPUS)
    raw = _validated_yaml(cfg, path, "trigger_corpus")
    seen: set[str] = set()
    out = []
    for rec in raw["prompts"]:
        if rec["id"] in seen:
            raise ConfigError(f"duplicate prompt id {rec['id']!r}", source=path, field="prompts",
                              fix="give every prompt its own id")
        seen.add(rec["id"])
        if rec.get("draft"):
            continue  # drafted by `skill-eval init`: not counted until the user edits it and drops `draft: true`
        if skills is not None and rec["expected_skill"] is not None and rec["expected_skill"] not in skills:
            raise ConfigError(f"prompt {rec['id']}: expected_skill {rec['expected_skill']!r} does not exist", source=path,
                              field="prompts", fix="name a skill folder of the source tree, or null")
        out.append(TriggerPrompt(rec["id"], rec["prompt"], rec["expected_skill"]))
    if not out and raw["prompts"]:
        return out  # only drafts: L1s is not on yet (drafts_only)
    if not any(p.expected_skill is None for p in out):
        raise ConfigError("the trigger corpus has no negative prompt (expected_skill: null)", source=path, field="prompts",
                          fix="add out-of-scope prompts no skill should claim; precision is meaningless without them")
    return out


def drafts_only(cfg: Config) -> bool:
    """Whether the trigger corpus holds only `draft: true` prompts (the template `init` writes): L1s is
    not on until one is edited. A corpus that cannot be read is not 'drafts only' (its reader says why)."""
    try:
        return present(cfg, TRIGGER_CORPUS) and not load_trigger_corpus(cfg)
    except SkillEvalError:
        return False


def load_rubric(cfg: Config) -> Rubric:
    path = evals_path(cfg, RUBRIC)
    raw = _validated_yaml(cfg, path, "rubric")
    dims = tuple(sorted((Dimension(**d) for d in raw["dimensions"]), key=lambda d: d.id))
    if [d.id for d in dims] != [1, 2, 3, 4, 5, 6]:
        raise ConfigError("must be exactly 1..6, once each", source=path, field="dimensions",
                          fix="list each rubric dimension 1..6 once")
    return Rubric(raw["version"], dims)
