"""Hatch build hook: compile the optional C fast paths, each a module of its own:
skill_eval._fastjson (src/skill_eval/_fastjson.c: strict JSON, strict.py) and skill_eval._fastio
(src/skill_eval/_fastio.c: a bundle directory walked and read, fsio.read_bundle_dir).

The pure-Python paths are complete (each caller falls back to it whenever its module is absent), so
a failed compile (no compiler, no Python headers, an unsupported platform) prints one warning line
and the build goes on without that module.

- editable install (`pip install -e .`): compiled in place into src/skill_eval/ (gitignored);
- wheel: compiled into a temporary directory, force-included as skill_eval/<module><EXT_SUFFIX>,
  and the wheel is tagged for this interpreter and platform;
- sdist: nothing to compile (it ships the .c file and this hook);
- `python hatch_build.py`: recompile in place (an editable install does not notice an edited .c file).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = Path("src") / "skill_eval"
MODULES = ("_fastjson", "_fastio")


def extension_name(module: str) -> str:
    return module + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def compile_extension(source: Path, out_dir: Path, *, extra_flags: tuple[str, ...] = ()) -> Path:
    """Compile `source` (<module>.c) into out_dir/<module><EXT_SUFFIX> with the interpreter's own compiler and
    headers; the file appears atomically (a process may have the old one mapped). Raises
    RuntimeError (with the compiler's first error line) or OSError when it cannot."""
    if sys.platform == "win32":
        raise RuntimeError("no compile recipe for Windows")
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise RuntimeError(f"no Python.h in {include}")
    link = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / extension_name(source.stem)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{source.stem}-", suffix=".so", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        argv = [*cc, "-O2", "-fPIC", *link, "-Wall", "-Wextra", *extra_flags, f"-I{include}",
                str(source), "-o", str(tmp)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            errors = [line for line in lines if "error" in line] or lines or [f"exit {done.returncode}"]
            raise RuntimeError(errors[0].strip())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


class FastPathsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        self._tmp: str | None = None if version == "editable" else tempfile.mkdtemp(prefix="skill-eval-ext-")
        for module in MODULES:
            source = Path(self.root) / PACKAGE / f"{module}.c"
            try:
                built = compile_extension(source, source.parent if self._tmp is None else Path(self._tmp))
            except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                print(f"skill-eval: building without the C fast path skill_eval.{module} ({exc})", file=sys.stderr)
                continue
            if self._tmp is not None:
                build_data["force_include"][str(built)] = f"skill_eval/{built.name}"
                build_data["pure_python"] = False
                build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_tmp", None):
            shutil.rmtree(str(self._tmp), ignore_errors=True)


if __name__ == "__main__":  # `python hatch_build.py`: recompile in place after editing a C source
    for name in MODULES:
        print(compile_extension(PACKAGE / f"{name}.c", PACKAGE))
