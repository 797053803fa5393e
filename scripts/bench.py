#!/usr/bin/env python3
"""Every performance figure of issue 8, each as a ratio to a reference measured in the same run.

Why ratios: this machine is shared and absolute times drift with load; a figure and its
reference are measured round-robin (interleaved repeats) and compared by medians, so both
see the same load.

    python scripts/bench.py [--quick] [--json] [--only NAME ...]

Figures (NAME: what / reference):
  help      `skill-eval --help`                     / `python -I -S -c pass` (the interpreter floor)
  pr        `skill-eval pr` on this repo, warm + cold surface cache / the same floor (targets 2 s, 4 s)
  pipeline  `nox -s pr`'s own work (scripts/pipeline.py over the noxfile's PR_STEPS, as `nox -R -s pr` runs it
            once its venv exists) / `skill-eval pr`, on this repo and on examples/towncrier-notes (target <= 1.5x)
  regrade   `skill-eval evidence` (freshness + re-grade of every bundle) over 1,000 and 3,000
            synthetic bundles / `sha256sum` over the same files; peak RSS 1k vs 3k
  shim      recording-shim overhead per call / the floor; tee throughput / a `cat | cat` pipe
  runner    16 items, 1 s scripted model turns, stubbed subject: -j8 / -j1 (and the real abicheck)

`--quick` (CI smoke, < 60 s on an idle 2-core machine): fewer repeats, 400/1,200 bundles, 0.2 s turns. Nothing here calls a
network or a real model: the runner figure uses the in-process scripted agent with `latency:`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
PY = sys.executable
# Bytecode as an installed package has it: pip compiles a wheel's modules at install time, but a source
# checkout under PYTHONDONTWRITEBYTECODE (or freshly edited) has none, and every start would re-compile every
# module (~0.13 s per command). `precompile()` compiles src/skill_eval (into its gitignored __pycache__/, where
# an installed package keeps it) before anything is timed; the interpreter's and the venv's own modules were
# compiled when they were installed.
ENV = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")},
       "PYTHONPATH": str(REPO / "src")}


def precompile() -> str:
    """Compile src/skill_eval's bytecode (as pip does at install) so no timed run pays for compiling."""
    t = time.perf_counter()
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "src" / "skill_eval")], env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    return f"precompiled src/skill_eval bytecode before timing (as an installed wheel has it): {time.perf_counter() - t:.1f} s"
HOST_PARTS = ("skill-eval.toml", "skills-src", ".agents", ".claude", "agent-evals")


# -- measuring -----------------------------------------------------------------------------
# A small launcher measures the child's peak RSS: ru_maxrss survives exec(), so a child forked
# straight from this (large) benchmark process would report our own size, not its own.
_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write("@@maxrss %d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_timed(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
              rss: bool = False) -> tuple[float, int, int]:
    """(wall seconds, exit code, peak RSS KiB of the command itself or 0). With `rss`, through a tiny
    launcher (use it for a figure and its reference alike, so its few ms cancel out)."""
    t = time.perf_counter()
    proc = subprocess.run([PY, "-I", "-S", "-c", _LAUNCHER, *argv] if rss else argv, cwd=cwd, env=env or ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - t
    peak = 0
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("@@maxrss "):
            peak = int(line.split()[1])
    return elapsed, proc.returncode, peak


def interleave(cases: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """Round-robin repeats of every case (so a load spike hits all of them alike)."""
    out: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            out[name].append(fn())
    return out


def med(samples: list[float]) -> float:
    return statistics.median(samples)


def figure(name: str, value: float, reference: float, unit: str = "s", target: str = "",
           pairs: tuple[list[float], list[float]] | None = None, **extra) -> dict:
    """`ratio` is median(value) / median(reference); with `pairs` (the interleaved samples of both) also
    the min and max of the per-round ratios, which show how noisy the machine was."""
    ratio = value / reference if reference else float("inf")
    out = {"figure": name, "value": round(value, 4), "reference": round(reference, 4), "ratio": round(ratio, 2),
           "unit": unit, "target": target, **extra}
    if pairs is not None:
        per_round = [v / r for v, r in zip(*pairs, strict=True) if r]
        if per_round:
            out.update(ratio_min=round(min(per_round), 2), ratio_median=round(med(per_round), 2),
                       ratio_max=round(max(per_round), 2), rounds=len(per_round))
    return out


def floor_case() -> Callable[[], float]:
    return lambda: run_timed([PY, "-I", "-S", "-c", "pass"])[0]


def skill_eval_argv(*args: str) -> list[str]:
    script = Path(PY).parent / "skill-eval"
    return [str(script), *args] if script.is_file() else [PY, "-m", "skill_eval", *args]


# -- figures -------------------------------------------------------------------------------
def bench_help(quick: bool) -> list[dict]:
    samples = interleave({"floor": floor_case(), "help": lambda: run_timed(skill_eval_argv("--help"))[0]},
                         5 if quick else 15)
    return [figure("skill-eval --help / python floor", med(samples["help"]), med(samples["floor"]), target="<= 3x",
                   pairs=(samples["help"], samples["floor"]))]


def bench_pr(quick: bool) -> list[dict]:
    cache = REPO / ".cache" / "skill-eval" / "surface"

    def warm() -> float:
        return run_timed(skill_eval_argv("pr", "--json", "--root", str(REPO)), cwd=REPO)[0]

    def cold() -> float:
        shutil.rmtree(cache, ignore_errors=True)
        return warm()

    warm()  # make sure the cache exists for the first warm sample
    samples = interleave({"floor": floor_case(), "warm": warm, "cold": cold}, 1 if quick else 3)
    warm()  # leave the cache populated
    f = med(samples["floor"])
    return [figure("pr warm (surface cached) / python floor", med(samples["warm"]), f, target="<= 2 s absolute",
                   pairs=(samples["warm"], samples["floor"]), warm_s=[round(x, 2) for x in samples["warm"]]),
            figure("pr cold (no surface cache) / python floor", med(samples["cold"]), f, target="<= 4 s absolute",
                   pairs=(samples["cold"], samples["floor"]), cold_s=[round(x, 2) for x in samples["cold"]])]


def bench_pipeline(quick: bool) -> list[dict]:
    sys.path.insert(0, str(REPO / "scripts"))
    import pipeline

    out = []
    for label, root in (("this repo", REPO), ("towncrier-notes", REPO / "examples" / "towncrier-notes")):
        cases = {"pr": lambda root=root: run_timed(skill_eval_argv("pr", "--root", str(root)), cwd=REPO)[0],
                 "pipeline": lambda root=root: run_timed([PY, str(REPO / "scripts/pipeline.py"), "--root", str(root),
                                                          *pipeline.PR_STEPS], cwd=REPO)[0]}
        samples = interleave(cases, 3 if quick else 9)
        out.append(figure(f"nox pr's composition / skill-eval pr ({label})", med(samples["pipeline"]), med(samples["pr"]),
                          target="<= 1.5x", pairs=(samples["pipeline"], samples["pr"])))
    return out


def _bundle_templates(cfg, catalog) -> list[tuple[dict, dict[str, bytes]]]:
    """One in-memory bundle per grader shape (scripts/bench_grading.py), written once via golden.write_bundle."""
    import bench_grading

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = bench_grading.synthesize(cfg, catalog, Path(tmp), len(bench_grading.SHAPES))
        for p in paths:
            files = {f.relative_to(p).as_posix(): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file()}
            meta = json.loads(files.pop("meta.json"))
            out.append((meta, files))
    return out


def copy_host(dest: Path) -> None:
    """This repository's host content (config, skills, evals) without its recorded evidence."""
    for part in HOST_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, symlinks=True,
                            ignore=shutil.ignore_patterns("evidence") if part == "agent-evals" else None)
        elif src.exists():
            shutil.copy2(src, dest / part)


def synth_repo(dest: Path, n: int) -> Path:
    """A copy of this repository's host content with `n` fresh synthetic bundles under evidence/, each
    sealed (core/seal.py) with a key generated here and allowed in the copy: the figure includes the
    offline verification `pr` does of every committed bundle."""
    from skill_eval.core import seal

    copy_host(dest)
    ev = dest / "agent-evals/skills/evidence"
    shutil.rmtree(ev, ignore_errors=True)
    key = dest.parent / f"{dest.name}-bench_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    with (dest / "agent-evals/skills/allowed_signers").open("a") as fh:
        fh.write("bench@skill-eval " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n")
    from skill_eval.content import config, freshness
    from skill_eval.grading.graders import Catalog

    cfg = config.load(dest)
    catalog = Catalog(cfg)
    cur = freshness.current(cfg)
    templates = _bundle_templates(cfg, catalog)
    for i in range(n):
        meta, files = templates[i % len(templates)]
        meta = dict(meta, run_id=f"bench{i // (len(templates) * cfg.k)}s{i % len(templates)}", k=(i // len(templates)) % cfg.k)
        meta["digests"] = {k: cur.digest(k) for k in freshness.required_keys(meta, cur)}
        d = ev / meta["skill"] / meta["arm"] / meta["run_id"] / meta["scenario"] / str(meta["k"])
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        for rel, data in files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_bytes(data)
        seal.seal_tree(d, d.relative_to(ev).as_posix(), meta, key)
    return ev


def _read_by_gate(path: Path) -> bool:
    """Does `skill-eval evidence` read this synthetic bundle file? Every one, since the seal's
    verification hashes every file of every bundle (core/seal.py)."""
    return True


def bench_regrade(quick: bool) -> list[dict]:
    sizes = (400, 1200) if quick else (1000, 3000)  # both above POOL_MIN: same mode
    out, rss = [], {}
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"bench-regrade-{n}-") as tmp:
            root = Path(tmp)
            ev = synth_repo(root, n)
            os.sync()  # the fixture's own writeback (~n*10 new files) must not land inside the timed rounds
            # like with like: exactly the files the gate reads (every file but the captured stdout/stderr
            # streams, which a report written to a file never needs: see _read_by_gate)
            files = sorted(str(p) for p in ev.rglob("*") if p.is_file() and _read_by_gate(p))
            listing = root / "files.lst"
            listing.write_text("\0".join(files))
            mem: list[int] = []

            def regrade(root=root, mem=mem) -> float:
                secs, _, peak = run_timed(skill_eval_argv("evidence", "--root", str(root)), cwd=root, rss=True)
                mem.append(peak)
                return secs

            def sha(listing=listing) -> float:
                return run_timed(["sh", "-c", f"xargs -0 sha256sum < '{listing}' > /dev/null"], rss=True)[0]

            samples = interleave({"sha256sum": sha, "regrade": regrade}, 1 if quick else 5)
            rss[n] = med(mem)
            out.append(figure(f"re-grade + freshness, {n} bundles / sha256sum", med(samples["regrade"]),
                              med(samples["sha256sum"]), target="<= 3x", files=len(files),
                              peak_rss_mib=round(rss[n] / 1024, 1), pairs=(samples["regrade"], samples["sha256sum"]),
                              sha256sum_bytes=sum(os.path.getsize(f) for f in files)))
    a, b = sizes
    out.append(figure(f"peak RSS {b} / {a} bundles", rss[b] / 1024, rss[a] / 1024, unit="MiB", target="1.0 +- 0.10"))
    return out


def bench_shim(quick: bool) -> list[dict]:
    """Per-call overhead (shim client + recorder minus the tool run directly) against the interpreter floor,
    and tee throughput against a `cat | cat` pipe, from scripts/bench_shim.py (interleaved rounds)."""
    try:
        import bench_shim
    except Exception as exc:  # noqa: BLE001 - report, never crash the whole benchmark
        return [{"figure": "shim", "error": f"unavailable: {exc}"}]
    calls, mb = (10, 20) if quick else (100, 100)
    try:
        res = bench_shim.run(calls, mb, 3 if quick else 5)
    except Exception as exc:  # noqa: BLE001
        return [{"figure": "shim", "error": f"{type(exc).__name__}: {exc}"}]
    ms, raw = res["median_ms"], res["samples_ms"]
    over = [s - d for s, d in zip(raw["shim"], raw["direct"], strict=True)]
    out = [figure("shim overhead per call (client + recorder) / python -I -S floor", res["overhead_ms"] / 1000,
                  ms["floor"] / 1000, target="<= 1.5x", pairs=(over, raw["floor"]))]
    rates = res["tee_samples_mib_per_s"]
    for key, label in (("shim", "tee"), ("shim_subst", "tee with an -o redirect (substitution on)")):
        # throughput ratio = shim MiB/s / cat|cat MiB/s, per interleaved round
        out.append(figure(f"{label} throughput / cat|cat pipe", res["tee_mib_per_s"][key], res["tee_mib_per_s"]["cat_cat"],
                          unit="MiB/s", target=">= 0.60", pairs=(rates[key], rates["cat_cat"]), mib=mb))
    # what persisting a stream costs on this machine at all: coreutils `tee FILE` (C, no digest) against the
    # same pipe, and the recorder against it (the 0.60 target is out of reach where this one is far below it)
    out.append(figure("coreutils `tee FILE` throughput / cat|cat pipe (the persisting floor, reference)",
                      res["tee_mib_per_s"]["coreutils_tee"], res["tee_mib_per_s"]["cat_cat"], unit="MiB/s",
                      target="reference", pairs=(rates["coreutils_tee"], rates["cat_cat"]), mib=mb))
    out.append(figure("tee throughput / coreutils `tee FILE`", res["tee_mib_per_s"]["shim"],
                      res["tee_mib_per_s"]["coreutils_tee"], unit="MiB/s", target=">= 1.0 (at least C's tee)",
                      pairs=(rates["shim"], rates["coreutils_tee"]), mib=mb))
    return out


STUB = """#!/bin/sh
# a stand-in subject: answers --version, writes a fixed report to the -o json= destination
case "$1" in --version) echo "abicheck 0.7.0 (bench stub)"; exit 0;; esac
prev=""; out=""
for a in "$@"; do [ "$prev" = "-o" ] && out="${a#json=}"; prev="$a"; done
[ -n "$out" ] && printf '{"verdict": "BREAKING", "evidence_tiers": ["elf"]}' > "$out"
exit 4
"""


def _machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (/proc/stat), so a run's CPU counts every process it
    caused. Children's times (os.times) miss the subject's: it runs in the tool jail's PID namespace,
    whose processes are killed with their group after each call, and a killed parent passes on no
    grandchild's time. Other load on the machine inflates this figure, never deflates it."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        t = os.times()
        return t.children_user + t.children_system
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def bench_runner(quick: bool, real: bool) -> list[dict]:
    items, latency = (4, 0.2) if quick else (16, 1.0)
    wide = 4 if quick else 8
    script_src = REPO / "agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"
    out = []
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        copy_host(root)
        shutil.rmtree(root / "agent-evals/skills/evidence", ignore_errors=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        script = Path(tmp) / "latency.yaml"
        script.write_text(script_src.read_text() + f"latency: {latency}\n")
        stub = Path(tmp) / "abicheck"
        stub.write_text(STUB)
        stub.chmod(0o755)
        turns = 3
        variants = [("stub", str(stub))] + ([("abicheck", None)] if real else [])
        for label, subject in variants:
            env = dict(ENV)
            if subject:
                env["SKILL_EVAL_REAL"] = subject
            secs: dict[int, float] = {}
            cpu: dict[int, float] = {}
            for j in (1, wide):
                argv = skill_eval_argv("run", "--root", str(root), "review-removed-export", "--agent", "scripted",
                                       "--model-server", f"scripted:{script}", "--no-trigger", "-k", str(items),
                                       "-j", str(j), "--run-id", f"bench-{label}-j{j}", "--json")
                before = _machine_busy()
                secs[j], rc, _ = run_timed(argv, cwd=root, env=env)
                cpu[j] = _machine_busy() - before
                if rc != 0:
                    out.append({"figure": f"runner ({label})", "error": f"skill-eval run -j{j} exited {rc}"})
            model_s = round(turns * latency, 3)  # per item
            cpu_item = cpu[1] / items
            # machine CPU per item (every process), from the -j1 run; with C cores and J jobs an item costs at
            # least max(model_s / J, cpu_item / C) of wall time
            limit = min(wide, (model_s + cpu_item) / max(model_s / wide, cpu_item / (os.cpu_count() or 1)))
            out.append(figure(f"runner {items} items, {latency:g} s turns, {label} subject: -j{wide} speed-up over -j1",
                              secs[1], secs[wide], unit="x", target=">= 6.5x" if label == "stub" and not quick else "report",
                              j1_s=round(secs[1], 2), jwide_s=round(secs[wide], 2), model_s_per_item=model_s,
                              cpu_s_per_item=round(cpu_item, 3), cpu_bound_limit=round(limit, 2)))
    return out


SECTIONS = {"help": bench_help, "pr": bench_pr, "pipeline": bench_pipeline, "regrade": bench_regrade, "shim": bench_shim}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: fewer repeats, smaller sets (< 60 s)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", nargs="+", choices=[*SECTIONS, "runner"], default=None)
    ap.add_argument("--real-subject", action="store_true", help="runner figure also with the installed abicheck")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    results: list[dict] = []
    started = time.perf_counter()
    note = precompile()
    if not args.json:
        print(note)
        sys.stdout.flush()
    for name in args.only or [*SECTIONS, "runner"]:
        t = time.perf_counter()
        got = bench_runner(args.quick, args.real_subject) if name == "runner" else SECTIONS[name](args.quick)
        for r in got:
            r["section"] = name
            r["section_s"] = round(time.perf_counter() - t, 1)
        results += got
        if not args.json:
            for r in got:
                if "error" in r:
                    print(f"{r['figure']:<78} ERROR {r['error']}")
                else:
                    spread = (f" [min {r['ratio_min']:.2f} med {r['ratio_median']:.2f} max {r['ratio_max']:.2f}, "
                              f"{r['rounds']} rounds]" if "ratio_min" in r else "")
                    if "cpu_bound_limit" in r:
                        spread += (f" [{r['cpu_s_per_item']} CPU-s/item, {r['model_s_per_item']} s model/item: "
                                   f"CPU-bound limit {r['cpu_bound_limit']}x]")
                    print(f"{r['figure']:<78} {r['ratio']:>7.2f}x  ({r['value']:.4g} {r['unit']} vs {r['reference']:.4g}; "
                          f"target {r['target']}){spread}")
            sys.stdout.flush()
    if args.json:
        print(json.dumps({"quick": args.quick, "precompiled": note, "seconds": round(time.perf_counter() - started, 1), "figures": results},
                         indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
