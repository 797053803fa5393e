"""nox sessions: the verify pipeline a skill repository mirrors.

pr       — every deterministic check (no model, credential or network at check time)
tests    — the test suite (no network but loopback)
lint     — ruff
e2e      — the real agent CLIs (pinned npm versions) against scripted model servers
release  — pr gates + a sealed release stage (stops for the human worksheet; see README "Release flow")
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["pr", "tests", "lint"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def pr(session: nox.Session) -> None:
    """The merge gate: L0, L1s, pack, golden (L4), freshness, evidence completeness."""
    session.install("-e", ".[subject]")
    session.run("skill-eval", "pr", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (real abicheck, loopback servers; never a real model)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "not e2e", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff==0.17.6")
    session.run("ruff", "check", "src", "tests", "scripts", "noxfile.py")


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
