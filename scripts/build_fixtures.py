#!/usr/bin/env python3
"""Rebuild the dogfood fixtures under agent-evals/skills/fixtures/ from their C sources.

Every fixture case is a directory of tiny C sources plus the shared objects (and, for the
consumer cases, the application) gcc builds from them. The built bytes are committed, so
the fixture test and every recorded run compare exactly the same artifacts; this script
is how they were produced and how anyone proves they still can be.

    python scripts/build_fixtures.py            rebuild every committed binary in place
    python scripts/build_fixtures.py --check    rebuild in a temporary directory and report
                                                every binary whose bytes differ (exit 1)
    python scripts/build_fixtures.py --case removed-export   only the named case(s)
    python scripts/build_fixtures.py --snapshots
        also regenerate the committed `abicheck dump` snapshots of the not-comparable
        case. Dumping with headers (-H) needs castxml; on Debian bookworm
        `apt-get install -y castxml` gives 0.5.1, which abicheck 0.7.0 accepts only with
        ABICHECK_ALLOW_UNSUPPORTED_CASTXML=1 (this script sets it). Snapshots are never
        rebuilt by default and are not part of --check: they are inputs, not build outputs,
        and the fixture test needs no castxml because they are committed.

Reproducibility: every compile runs with the fixture (or temporary) directory as cwd, only
relative source paths, -ffile-prefix-map=<dir>=. (so DW_AT_comp_dir is "."), no build-id,
LC_ALL=C and SOURCE_DATE_EPOCH=0. Two builds in different directories are byte-identical
with the same gcc (measured with gcc 12.2.0, Debian 12); a different gcc or binutils
version changes the bytes, which --check reports rather than hides.

Size: -Wl,-z,noseparate-code -Wl,-z,norelro keep each object around 6 KB instead of 16 KB.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "agent-evals" / "skills" / "fixtures"

SMALL = ["-Wl,-z,noseparate-code", "-Wl,-z,norelro", "-Wl,--build-id=none", "-Wl,--hash-style=gnu"]


@dataclass(frozen=True)
class Lib:
    """A shared object built from every .c file in `src` (relative to the case directory)."""

    src: str
    out: str
    soname: str
    debug: bool = True  # False: no -g and stripped (-s): a symbols-only artifact
    m32: bool = False  # i686 target: -m32 -nostdlib (no 32-bit libc/libgcc on the build host)
    libs: tuple[str, ...] = ()
    optimize: str = "-O0"

    def argv(self, cwd: Path) -> list[str]:
        sources = sorted(str(p.relative_to(cwd)) for p in (cwd / self.src).glob("*.c"))
        if not sources:
            raise SystemExit(f"build_fixtures: no C sources in {cwd / self.src}")
        argv = [
            "gcc",
            self.optimize,
            "-shared",
            "-fPIC",
            f"-I{self.src}",
            f"-Wl,-soname,{self.soname}",
            *SMALL,
            f"-ffile-prefix-map={cwd}=.",
        ]
        argv += ["-g"] if self.debug else ["-s"]
        if self.m32:
            argv += ["-m32", "-nostdlib"]
        return [*argv, *sources, "-o", self.out, *self.libs]


@dataclass(frozen=True)
class App:
    """An executable linked against a library built earlier in the same case."""

    src: str
    out: str
    include: str
    link: str

    def argv(self, cwd: Path) -> list[str]:
        return [
            "gcc",
            "-O0",
            "-g",
            f"-I{self.include}",
            *SMALL,
            f"-ffile-prefix-map={cwd}=.",
            self.src,
            self.link,
            "-o",
            self.out,
        ]


@dataclass(frozen=True)
class Copy:
    """A library built from another case's committed sources (`from_case`, laid out as that
    case, so the bytes match what it would build there) and committed here without them:
    the case must not hand the agent sources or headers (a vendor binary drop, a stripped
    release package)."""

    from_case: str
    lib: Lib

    @property
    def out(self) -> str:
        return self.lib.out


@dataclass(frozen=True)
class Snapshots:
    """`abicheck dump` snapshots (only with --snapshots) of libraries another case builds.

    Each dump is (source case, source dir in it, snapshot out, version label, extra dump args);
    the library is rebuilt from that case's sources in a scratch directory and dumped with -H.
    """

    dumps: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = field(default_factory=tuple)


def demo(src: str, out: str, **kw) -> Lib:
    return Lib(src, out, "libdemo.so.1", **kw)


def pair(**kw) -> list:
    return [demo("old", "old/libdemo.so.1", **kw), demo("new", "new/libdemo.so.1", **kw)]


CASES: dict[str, list] = {
    "no-change": pair(),
    "compatible-addition": pair(),
    "removed-export": pair(),
    "changed-signature": pair(),
    "struct-layout": pair(),
    "enum-value": pair(),
    "field-rename": pair(),
    "new-dependency": [demo("old", "old/libdemo.so.1"), demo("new", "new/libdemo.so.1", libs=("-lm",))],
    # struct-layout's change built without -g and stripped, as a distro package ships it.
    "stripped-layout": [
        Copy("struct-layout", demo("old", "old/libdemo.so.1", debug=False)),
        Copy("struct-layout", demo("new", "new/libdemo.so.1", debug=False)),
    ],
    "consumer-unaffected": [*pair(), App("app/client.c", "app/demo-client", "old", "old/libdemo.so.1")],
    "consumer-affected": [*pair(), App("app/client.c", "app/demo-client", "old", "old/libdemo.so.1")],
    "consumer-addition": [*pair(), App("app/client.c", "app/demo-client", "old", "old/libdemo.so.1")],
    "plugin-required-symbol": [Lib("old", "old/blur.so", "blur.so"), Lib("new", "new/blur.so", "blur.so")],
    "plugin-intact": [Lib("old", "old/blur.so", "blur.so"), Lib("new", "new/blur.so", "blur.so")],
    # A vendor binary drop without headers: the removed-export libraries, byte for byte.
    "contract-coverage": [
        Copy("removed-export", demo("old", "old/libdemo.so.1")),
        Copy("removed-export", demo("new", "new/libdemo.so.1")),
    ],
    "release-matrix-complete": [
        demo("src/old", "linux-x86_64/old/libdemo.so.1"),
        demo("src/new", "linux-x86_64/new/libdemo.so.1"),
        demo("src/old", "linux-i686/old/libdemo.so.1", m32=True),
        demo("src/new", "linux-i686/new/libdemo.so.1", m32=True),
    ],
    # linux-aarch64 is a required target whose artifacts were never produced (see its
    # BUILD-FAILED.txt); the build host has no aarch64 toolchain, which is the point.
    "release-matrix-missing-target": [
        demo("src/old", "linux-x86_64/old/libdemo.so.1"),
        demo("src/new", "linux-x86_64/new/libdemo.so.1"),
    ],
    "not-comparable": [
        # Old dumped with --include-system-declarations, new without: a scope mismatch that
        # abicheck 0.7.0 refuses to compare (exit 16, verdict null).
        Snapshots(
            (
                ("removed-export", "old", "snapshots/libdemo-1.0.abi.json", "1.0", ("--include-system-declarations",)),
                ("removed-export", "new", "snapshots/libdemo-1.1.abi.json", "1.1", ()),
            )
        ),
    ],
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "SOURCE_DATE_EPOCH": "0", "TZ": "UTC"})
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(argv, cwd=cwd, env=env or _env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(
            f"build_fixtures: {' '.join(argv)} (cwd {cwd}) failed with {proc.returncode}:\n{proc.stdout}{proc.stderr}"
        )


def outputs(case: str) -> list[str]:
    return [step.out for step in CASES[case] if isinstance(step, (Lib, App, Copy))]


def build_case(case: str, case_dir: Path, *, snapshots: bool = False) -> list[str]:
    """Build every binary of `case` inside `case_dir` (which holds its sources). Returns outputs.

    Copy and Snapshots steps read the committed sources of the case they name.
    """
    built = []
    for step in CASES[case]:
        if isinstance(step, (Lib, App)):
            (case_dir / step.out).parent.mkdir(parents=True, exist_ok=True)
            _run(step.argv(case_dir), case_dir)
            built.append(step.out)
        elif isinstance(step, Copy):
            with tempfile.TemporaryDirectory(prefix="skill-eval-copy-") as tmp:
                scratch = Path(tmp) / step.from_case
                scratch.mkdir()
                _copy_sources(FIXTURES / step.from_case, scratch, step.from_case)
                (scratch / step.lib.out).parent.mkdir(parents=True, exist_ok=True)
                _run(step.lib.argv(scratch), scratch)
                (case_dir / step.out).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(scratch / step.lib.out, case_dir / step.out)  # bytes and mode
            built.append(step.out)
        elif isinstance(step, Snapshots) and snapshots:
            built += _dump_snapshots(step, case_dir)
    return built


def _abicheck() -> str:
    exe = Path(sys.executable).parent / "abicheck"
    return str(exe) if exe.exists() else (shutil.which("abicheck") or "abicheck")


def _dump_snapshots(step: Snapshots, case_dir: Path) -> list[str]:
    if shutil.which("castxml") is None:
        raise SystemExit("build_fixtures: --snapshots needs castxml (apt-get install -y castxml)")
    env = _env()
    env["ABICHECK_ALLOW_UNSUPPORTED_CASTXML"] = "1"
    written = []
    # A fixed scratch path (snapshots record the header and library paths they were dumped
    # from), so regenerating them does not churn the committed bytes with a random temp name.
    scratch = Path(tempfile.gettempdir()) / "skill-eval-dump"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        env["XDG_CACHE_HOME"] = str(scratch / "cache")
        for from_case, src, out, version, extra in step.dumps:
            work = scratch / from_case
            if not work.is_dir():
                work.mkdir()
                _copy_sources(FIXTURES / from_case, work, from_case)
                build_case(from_case, work)
            lib = next(s for s in CASES[from_case] if isinstance(s, Lib) and s.src == src)
            target = case_dir / out
            target.parent.mkdir(parents=True, exist_ok=True)
            _run(
                [_abicheck(), "dump", lib.out, "-H", f"{src}/demo.h", "--version", version, *extra, "-o", str(target)],
                work,
                env,
            )
            written.append(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return written


def _copy_sources(case_dir: Path, dest: Path, case: str) -> None:
    produced = set(outputs(case))
    for path in sorted(case_dir.rglob("*")):
        rel = path.relative_to(case_dir).as_posix()
        if path.is_file() and rel not in produced:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / rel)


def check(cases: list[str]) -> list[str]:
    """Rebuild `cases` in a temporary directory; return one message per differing binary."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="skill-eval-fixtures-") as tmp:
        for case in cases:
            committed = FIXTURES / case
            scratch = Path(tmp) / case
            scratch.mkdir()
            _copy_sources(committed, scratch, case)
            for rel in build_case(case, scratch):
                if not (committed / rel).is_file():
                    problems.append(f"{case}/{rel}: committed binary is missing (run scripts/build_fixtures.py)")
                elif not filecmp.cmp(committed / rel, scratch / rel, shallow=False):
                    problems.append(f"{case}/{rel}: rebuilt bytes differ from the committed file")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    ap.add_argument("--check", action="store_true", help="rebuild in a temp dir and report differing binaries")
    ap.add_argument(
        "--snapshots",
        action="store_true",
        help="also regenerate abicheck dump snapshots (needs castxml; not with --check)",
    )
    ap.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    args = ap.parse_args(argv)
    cases = args.case or sorted(CASES)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(sorted(CASES))}")
    if shutil.which("gcc") is None:
        print("build_fixtures: gcc not found on PATH", file=sys.stderr)
        return 2
    if args.check:
        if args.snapshots:
            ap.error("--snapshots cannot be combined with --check (snapshots are not reproducible build outputs)")
        problems = check(cases)
        for p in problems:
            print(p)
        n = sum(len(outputs(c)) for c in cases)
        print(
            f"build_fixtures --check: {n - len(problems)}/{n} binaries reproducible"
            + ("" if not problems else f"; {len(problems)} differ")
        )
        return 1 if problems else 0
    for case in cases:
        for rel in build_case(case, FIXTURES / case, snapshots=args.snapshots):
            size = (FIXTURES / case / rel).stat().st_size
            print(f"{case}/{rel} ({size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
