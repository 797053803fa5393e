"""The host configuration: `skill-eval.toml`, or `[tool.skill-eval]` in pyproject.toml.

Everything generic about the subject tool lives in SubjectProfile, so graders, the
shim and the checks work for any verdict-producing CLI, not only abicheck — and for a CLI
without a verdict ladder: a subject may declare only its name (plus package, version, surface,
invocation classes, outputs), and then its skills' scenarios are graded by command oracles
(`verdict_skills` limits the verdict questions to some skills of a verdict-producing subject).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.core import formats, schemas, strict
from skill_eval.core.errors import ConfigError

CONFIG_NAME = "skill-eval.toml"

# Defaults live here and only here (the schema documents them, never restates them as values).
K_DEFAULT = 3
BODY_WARN_LINES_DEFAULT = 500
MAX_BUNDLE_FILE_BYTES_DEFAULT = strict.MAX_FILE_BYTES
TOOL_HARNESS_DEFAULT = True
REAL_ENV_DEFAULT = "SKILL_EVAL_REAL"
# Upper bounds shared by the schema (test_strict checks they agree) and the command line:
# a huge k or turn budget is a resource-exhaustion bug, not a setting.
K_MAX = 100
MAX_TURNS_MAX = 1000
TIMEOUT_MAX = 86400.0
COST_MAX = 10000.0
JOBS_MAX = 64
SPECIAL_OUTCOMES = frozenset({"green", "not_comparable", "tool_error", "usage_error", "gate"})


@dataclass(frozen=True)
class InvocationClass:
    """A named shape of subject invocation (evals.invocation_classes): its command and the flags it needs."""

    name: str
    command: str
    require_all: tuple[str, ...] = ()
    require_any: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class SubjectProfile:
    """What skill-eval knows of the subject CLI: its verdicts, exit codes, evidence commands and flags."""

    name: str
    verdicts: tuple[str, ...]
    green: frozenset[str]
    exit_codes: dict[int, str]
    report_format: str
    verdict_path: str
    evidence_commands: tuple[str, ...]
    format_dest_options: tuple[str, ...] = ()
    path_options: tuple[str, ...] = ()
    directory_options: tuple[str, ...] = ()
    stdout_token: str = "-"  # noqa: S105 - the stdout destination, not a credential
    consumer_verdict_paths: tuple[str, ...] = ()
    evidence_path: str | None = None
    side_digest_paths: tuple[str, ...] = ()
    coverage_path: str | None = None
    suppression_flags: tuple[str, ...] = ()
    scoping_flags: tuple[str, ...] = ()
    diagnostic_flags: tuple[str, ...] = ()  # forced comparisons: their results never carry a confident verdict
    invocation_classes: dict[str, InvocationClass] = field(default_factory=dict)
    cli_reference: str | None = None
    surface_files: tuple[str, ...] = ()
    real_env: str = REAL_ENV_DEFAULT
    package: str | None = None
    version: str | None = None
    verdict_skills: tuple[str, ...] | None = None  # None: every skill (when the profile has verdicts)
    env: tuple[str, ...] = ()  # variables of the agent's environment the subject may see (an allow-list, no prefixes)
    workspace: str = "operands"  # "operands": a read-only snapshot of its operands; "tree": the live work tree

    @property
    def has_verdicts(self) -> bool:
        """Whether this subject produces verdicts (the verdict profile is all-or-nothing in the schema)."""
        return bool(self.verdicts)

    def verdict_skill(self, skill: str | None) -> bool:
        """Whether `skill`'s scenarios are verdict questions: dimensions 2 and 6 apply to them."""
        if not self.has_verdicts:
            return False
        return self.verdict_skills is None or skill in self.verdict_skills

    def severity(self, verdict: str) -> int:
        """Ordinal position in the verdict ladder (0 = least severe)."""
        return self.verdicts.index(verdict)

    def is_green(self, verdict: str | None) -> bool:
        return verdict is not None and verdict in self.green


@dataclass(frozen=True)
class Mode:
    """[evals.modes.<name>]: an evaluation mode (the task-tool seed's committed / local)."""

    name: str
    description: str = ""
    require: frozenset[str] = frozenset()  # "decoys" and/or "provenance": what its seed.json must carry
    init: tuple[str, ...] | None = None  # the documented init argv its seed.json must run once


@dataclass(frozen=True)
class MatrixCell:
    """[[evals.matrix]]: an agent x model cell the evidence of a profile must cover. model "scripted"
    stands for any scripted model (scripted turns are labelled by script digest, not by name)."""

    agent: str
    model: str
    profiles: tuple[str, ...] = ("pr", "release")

    @property
    def label(self) -> str:
        return f"{self.agent}/{self.model}"


def cell_of(agent: object, model: object, scripted: object) -> str:
    """The matrix label of a bundle's (agent name, model, scripted) as its meta records them."""
    label = "scripted" if scripted is True or str(model or "").startswith("scripted:") else str(model or "")
    return f"{agent or ''}/{label}"


@dataclass(frozen=True)
class AgentDefaults:
    """The agent a run uses unless told otherwise: adapter, model, turn and time limits."""

    adapter: str = "claude-code"
    model: str | None = None
    max_turns: int = 40
    timeout_seconds: float = 900.0
    max_cost_usd: float | None = None
    max_tokens: int | None = None  # per model reply (the built-in loop sends it as max_tokens)
    max_total_tokens: int | None = None  # per run; reached -> the run stops with outcome budget_stop


@dataclass(frozen=True)
class Thresholds:
    """The pass marks of the gates (trigger precision, recall, negative accuracy and score, and more)."""

    trigger_min_precision: float = 0.8
    trigger_min_recall: float = 0.8
    trigger_min_negative_accuracy: float = 0.8
    trigger_min_score: float = 1.0
    trigger_min_margin: float = 0.0
    cost_regression: float = 0.10


@dataclass(frozen=True)
class Triggers:
    """[triggers]: how L1s scores a prompt against the descriptions (skill_eval.checks.triggers, .semantic)."""

    scorer: str = "bm25"  # bm25 | fused (BM25 + the packaged embedding model: extra skill-eval[semantic])
    # fused = (1 - semantic_weight) * bm25 / (bm25 + bm25_saturation) + semantic_weight * semantic, where
    # semantic = (1 - token_weight) * cosine + token_weight * tokens, both minus the skill's background prior
    # (skill_eval.checks.triggers, docs/TRIGGERS.md). Defaults fitted on four real corpora + a synthetic one.
    semantic_weight: float = 0.85
    token_weight: float = 0.7
    bm25_saturation: float = 16.0
    fused_min_score: float = 0.08  # the top skill's fused score must reach this ...
    fused_min_margin: float = 0.0  # ... and beat the runner-up by this, else the prompt goes to no skill


@dataclass(frozen=True)
class Stats:
    """[stats]: how lift is tested (skill_eval.reporting.lift). Seeded so a scorecard is reproducible."""

    bootstrap_samples: int = 2000
    min_paired_scenarios: int = 6
    seed: int = 20260101
    confidence: float = 0.95
    max_infra_error_rate: float = 0.25
    max_incomplete_rate: float = 0.25  # more incomplete/budget-stopped runs than this -> INCONCLUSIVE


@dataclass(frozen=True)
class Price:
    """[prices.<model>]: USD per million tokens, for runs whose agent reports no cost."""

    input_per_mtok: float
    output_per_mtok: float


@dataclass(frozen=True)
class SkillSource:
    """One skill source tree ([skills] source, or one [[skills.sources]] entry) and its own settings."""

    path: str
    published: tuple[str, ...] = ()
    shared: str = ""
    publish: str = "plugin"  # plugin: ships with its sibling skills | standalone: each skill is installed alone

    def holds(self, skill_dir: str) -> bool:
        """Whether a skill folder (repository-relative, as discovery names it) is one of this source's:
        a root source (".") names its skills without a prefix (`webhooks`, not `./webhooks`)."""
        if self.path == ".":
            return "/" not in skill_dir
        return skill_dir.startswith(self.path.rstrip("/") + "/")


@dataclass(frozen=True)
class Suppression:
    """[[checks.ignore]]: an L0 finding id (fnmatch pattern) accepted, with the reason why."""

    id: str
    reason: str


PUBLISH_DEFAULT = "plugin"
L0_BASELINE_DEFAULT = "check-skills-baseline.json"  # under the evals root


@dataclass(frozen=True)
class Config:
    """skill-eval.toml, loaded and checked: every path and setting the commands read."""

    root: Path
    source: Path  # the file the config came from
    skills_source: str
    skills_shared: str
    published: tuple[str, ...]
    extension_keys: frozenset[str]
    body_warn_lines: int
    evals_root: str
    k: int
    harness: tuple[str, ...]
    tool_harness: bool
    max_bundle_file_bytes: int
    subject: SubjectProfile
    agent: AgentDefaults
    thresholds: Thresholds
    raw: dict[str, Any]
    stats: Stats = Stats()
    triggers: Triggers = Triggers()
    prices: dict[str, Price] = field(default_factory=dict)
    # evidence profile (pr | release) -> arms whose bundles it requires; skill-agent always included
    arms: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(ARMS_DEFAULT))
    modes: dict[str, Mode] = field(default_factory=dict)  # empty: the host declares no modes
    signatures: str = "warn"  # unsigned bundles: "require" fails them, "warn" counts and labels them (release: always required)
    allowed_signers: str | None = None  # who may sign evidence (git's format); default <evals.root>/allowed_signers
    # [evals] release_sources: model sources a release counts ("remote", "local-endpoint"); scripted never
    release_sources: tuple[str, ...] = ("remote",)
    # [evals] action_commands: programs a scenario's actions/setup and a fixture's seed.json may run besides
    # the subject and git (the registry's allow-list; default: none)
    action_commands: tuple[str, ...] = ()
    # [[evals.matrix]]: the agent x model cells evidence must cover per profile (empty: any one cell)
    matrix: tuple[MatrixCell, ...] = ()
    # every skill source tree (the first is skills_source/skills_shared); [checks] suppressions and baseline
    sources: tuple[SkillSource, ...] = ()
    suppressions: tuple[Suppression, ...] = ()
    l0_baseline: str = ""
    # --base (commands/_options.add_base_argument): the commit the trust policy is read from (content/trust.py)
    base_ref: str | None = None

    def cells(self, stage: str) -> tuple[str, ...]:
        """The matrix cells (agent/model labels) the evidence gate demands at a stage (merge -> pr);
        empty: no matrix, any single cell."""
        profile = "release" if stage == "release" else "pr"
        return tuple(c.label for c in self.matrix if profile in c.profiles)

    def publish_of(self, skill_dir: str) -> str:
        """How the source holding `skill_dir` is published (plugin | standalone)."""
        for src in self.sources:
            if src.holds(skill_dir):
                return src.publish
        return PUBLISH_DEFAULT

    @property
    def l0_baseline_path(self) -> Path:
        return self.root / (self.l0_baseline or f"{self.evals_root}/{L0_BASELINE_DEFAULT}")

    def required_arms(self, stage: str) -> tuple[str, ...]:
        """Arms the evidence gate expects for a stage (merge -> the `pr` profile, release -> `release`)."""
        return self.arms.get("release" if stage == "release" else "pr", ARMS_DEFAULT["pr"])

    @property
    def allowed_signers_path(self) -> Path:
        """The committed allowed_signers file (it may not exist: then no bundle verifies as signed)."""
        return self.root / (self.allowed_signers or f"{self.evals_root}/allowed_signers")

    def path(self, rel: str) -> Path:
        return self.root / rel

    @property
    def has_subject(self) -> bool:
        """Whether the host configured a verdict-producing subject tool ([subject] is optional)."""
        return self.subject is not NO_SUBJECT

    @property
    def evals_dir(self) -> Path:
        return self.root / self.evals_root

    @property
    def evidence_rel(self) -> str:
        """The committed evidence tree, relative to the repository root (<evals root>/evidence)."""
        return f"{self.evals_root}/evidence"


def find_root(start: Path | None = None) -> Path:
    """The nearest ancestor holding skill-eval.toml or a pyproject with [tool.skill-eval]."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / CONFIG_NAME).is_file():
            return candidate
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _tool_table(pyproject) is not None:
            return candidate
    raise ConfigError(
        f"no {CONFIG_NAME} (or [tool.skill-eval] in pyproject.toml) here or in any parent of {here}",
        fix="run inside a configured repository, pass --root, or run `skill-eval init`",
    )


def _tool_table(pyproject: Path) -> Any:
    """`[tool.skill-eval]` of a pyproject.toml, or None (a non-table `tool` counts as absent)."""
    tool = strict.load_toml(pyproject).get("tool")
    return tool.get("skill-eval") if isinstance(tool, dict) else None


def load(root: Path | None = None) -> Config:
    """Read, version-check (formats.upgrade), validate and build the host configuration."""
    root = find_root(root) if root is None or not _has_config(root) else root.resolve()
    path = root / CONFIG_NAME
    if path.is_file():
        raw = strict.load_toml(path)
    else:
        path = root / "pyproject.toml"
        raw = _tool_table(path)
        if raw is None:
            raise ConfigError(f"no {CONFIG_NAME} and no [tool.skill-eval] table", source=root,
                              fix="run `skill-eval init`, or pass --root")
    raw = formats.upgrade(raw, "config", path)
    schemas.validate(raw, "config", path)
    return _build(root, path, raw)


def _has_config(root: Path) -> bool:
    try:
        return (root / CONFIG_NAME).is_file() or (root / "pyproject.toml").is_file()
    except OSError as exc:  # e.g. an over-long --root
        raise ConfigError(f"cannot be read ({exc.strerror})", source=str(root)[:300], field="--root") from None


# A host without a [subject] (most skills repositories): an empty profile, so code that only
# reads lists (surface files, invocation classes) sees none; `Config.has_subject` gates the
# checks that need a verdict-producing tool (DESIGN §3, revision turn 2).
NO_SUBJECT = SubjectProfile(name="", verdicts=(), green=frozenset(), exit_codes={}, report_format="json",
                            verdict_path="", evidence_commands=())


def _subject(source: Path, s: dict[str, Any] | None) -> SubjectProfile:
    if s is None:
        return NO_SUBJECT
    verdicts = tuple(s.get("verdicts", ()))
    for g in s.get("green", ()):
        if g not in verdicts:
            raise ConfigError(f"names {g!r}, which is not in subject.verdicts", source=source, field="subject.green",
                              fix="list only verdicts as green")
    exit_codes: dict[int, str] = {}
    for code, meaning in s.get("exit_codes", {}).items():
        if meaning not in verdicts and meaning not in SPECIAL_OUTCOMES:
            raise ConfigError(f"{meaning!r} is neither a verdict nor one of {sorted(SPECIAL_OUTCOMES)}",
                              source=source, field=f"subject.exit_codes.{code}", fix="name a verdict or a special outcome")
        exit_codes[int(code)] = meaning
    classes = {
        name: InvocationClass(
            name=name,
            command=spec["command"],
            require_all=tuple(spec.get("require_all", ())),
            require_any=tuple(spec.get("require_any", ())),
            forbid=tuple(spec.get("forbid", ())),
            description=spec.get("description", ""),
        )
        for name, spec in s.get("invocation_classes", {}).items()
    }
    # A verdict-free subject (schema: the verdict profile is all-or-nothing) reads no report.
    report = s.get("report", {"format": "json", "verdict_path": ""})
    outputs = s.get("outputs", {})
    surface = s.get("surface", {})
    verdict_skills = s.get("verdict_skills")
    return SubjectProfile(
        name=s["name"],
        verdicts=verdicts,
        green=frozenset(s.get("green", ())),
        exit_codes=exit_codes,
        report_format=report["format"],
        verdict_path=report["verdict_path"],
        evidence_commands=tuple(s.get("evidence_commands", ())),
        format_dest_options=tuple(outputs.get("format_dest", ())),
        path_options=tuple(outputs.get("path", ())),
        directory_options=tuple(outputs.get("directory", ())),
        stdout_token=outputs.get("stdout_token", "-"),
        consumer_verdict_paths=tuple(report.get("consumer_verdict_paths", ())),
        evidence_path=report.get("evidence_path"),
        side_digest_paths=tuple(report.get("side_digest_paths", ())),
        coverage_path=report.get("coverage_path"),
        suppression_flags=tuple(s.get("suppression_flags", ())),
        scoping_flags=tuple(s.get("scoping_flags", ())),
        diagnostic_flags=tuple(s.get("diagnostic_flags", ())),
        invocation_classes=classes,
        cli_reference=surface.get("cli_reference"),
        surface_files=tuple(surface.get("files", ())),
        real_env=s.get("real_env", REAL_ENV_DEFAULT),
        package=s.get("package"),
        version=s.get("version"),
        verdict_skills=tuple(verdict_skills) if verdict_skills is not None else None,
        env=tuple(s.get("env", ())),
        workspace=s.get("workspace", "operands"),
    )


def _modes(evals: dict[str, Any]) -> dict[str, Mode]:
    return {name: Mode(name=name, description=spec.get("description", ""), require=frozenset(spec.get("require", ())),
                       init=tuple(spec["init"]) if "init" in spec else None)
            for name, spec in sorted((evals.get("modes") or {}).items())}


ARMS_DEFAULT: dict[str, tuple[str, ...]] = {"pr": ("skill-agent",), "release": ("skill-agent",)}


def _arms(source: Path, evals: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """[evals.arms]: release defaults to pr's list; skill-agent is mandatory (the trigger corpus and the
    pass^k gates are judged on it, so a profile without it would require no gradeable evidence)."""
    spec = evals.get("arms") or {}
    pr = tuple(spec.get("pr", ARMS_DEFAULT["pr"]))
    arms = {"pr": pr, "release": tuple(spec.get("release", pr))}
    for profile, names in arms.items():
        if "skill-agent" not in names:
            raise ConfigError(f"evals.arms.{profile} does not include skill-agent", source=str(source),
                              field=f"evals.arms.{profile}", fix='add "skill-agent" to the list')
    return arms


def _sources(source: Path, skills: dict[str, Any], checks: dict[str, Any]) -> tuple[SkillSource, ...]:
    """[skills] source/published (one tree) and/or [[skills.sources]] (several), each with its settings."""
    publish = checks.get("publish", PUBLISH_DEFAULT)
    stray = [k for k in ("published", "shared") if k in skills and "source" not in skills]
    if stray:
        raise ConfigError(f"skills.{stray[0]} is set without skills.source", source=source, field=f"skills.{stray[0]}",
                          fix="set it inside the [[skills.sources]] entry it belongs to")
    specs = ([{"path": skills["source"], "published": skills.get("published", []), "shared": skills.get("shared")}]
             if "source" in skills else []) + list(skills.get("sources", []))
    if not specs:
        raise ConfigError("names no skill source", source=source, field="skills",
                          fix='set [skills] source = "skills" (or add [[skills.sources]] entries with path = "...")')
    out: list[SkillSource] = []
    for spec in specs:
        path = spec["path"].strip("/") or "."  # "/" and "./" name the repository root as "."
        if any(path == o.path for o in out):
            raise ConfigError(f"skill source {path!r} is listed twice", source=source, field="skills.sources",
                              fix="list each source folder once")
        out.append(SkillSource(path, tuple(spec.get("published", ())), spec.get("shared") or ("shared" if path == "." else f"{path}/shared"),
                               spec.get("publish", publish)))
    return tuple(out)


def _build(root: Path, source: Path, raw: dict[str, Any]) -> Config:
    subject = _subject(source, raw.get("subject"))
    skills = raw["skills"]
    evals = raw["evals"]
    checks = raw.get("checks", {})
    sources = _sources(source, skills, checks)
    published = tuple(dict.fromkeys(p for s in sources for p in s.published))
    return Config(
        root=root,
        source=source,
        skills_source=sources[0].path,
        skills_shared=sources[0].shared,
        published=published,
        sources=sources,
        suppressions=tuple(Suppression(i["id"], i["reason"]) for i in checks.get("ignore", ())),
        l0_baseline=checks.get("baseline", ""),
        extension_keys=frozenset(skills.get("extension_keys", ())),
        body_warn_lines=skills.get("body_warn_lines", BODY_WARN_LINES_DEFAULT),
        evals_root=evals["root"],
        k=evals.get("k", K_DEFAULT),
        harness=tuple(evals.get("harness", ())),
        tool_harness=evals.get("tool_harness", TOOL_HARNESS_DEFAULT),
        max_bundle_file_bytes=evals.get("max_bundle_file_bytes", MAX_BUNDLE_FILE_BYTES_DEFAULT),
        signatures=evals.get("signatures", "warn"),
        allowed_signers=evals.get("allowed_signers"),
        release_sources=tuple(evals.get("release_sources", ("remote",))),
        action_commands=tuple(evals.get("action_commands", ())),
        matrix=tuple(MatrixCell(c["agent"], c["model"], tuple(c.get("profiles", ("pr", "release"))))
                     for c in evals.get("matrix", ())),
        subject=subject,
        agent=AgentDefaults(**raw.get("agent", {})),
        thresholds=Thresholds(**raw.get("thresholds", {})),
        raw=raw,
        stats=Stats(**raw.get("stats", {})),
        triggers=Triggers(**raw.get("triggers", {})),
        prices={model: Price(**p) for model, p in raw.get("prices", {}).items()},
        arms=_arms(source, evals),
        modes=_modes(evals),
    )
