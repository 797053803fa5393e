"""Hatch build hook: compile the optional C fast path skill_eval._fastjson (src/skill_eval/_fastjson.c).

The pure-Python path is complete (strict.py falls back to it whenever the module is absent), so a
failed compile (no compiler, no Python headers, an unsupported platform) prints one warning line and
the build goes on without the module.

- editable install (`pip install -e .`): compiled in place into src/skill_eval/ (gitignored);
- wheel: compiled into a temporary directory, force-included as skill_eval/_fastjson<EXT_SUFFIX>,
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

SOURCE = Path("src") / "skill_eval" / "_fastjson.c"
MODULE = "_fastjson"


def extension_name() -> str:
    return MODULE + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def compile_extension(source: Path, out_dir: Path, *, extra_flags: tuple[str, ...] = ()) -> Path:
    """Compile `source` into out_dir/_fastjson<EXT_SUFFIX> with the interpreter's own compiler and
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
    target = out_dir / extension_name()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{MODULE}-", suffix=".so", dir=out_dir)
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


class FastJsonHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        source = Path(self.root) / SOURCE
        self._tmp: str | None = None
        try:
            if version == "editable":
                compile_extension(source, source.parent)
                return
            self._tmp = tempfile.mkdtemp(prefix="skill-eval-ext-")
            built = compile_extension(source, Path(self._tmp))
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            print(f"skill-eval: building without the C fast path skill_eval.{MODULE} ({exc})", file=sys.stderr)
            return
        build_data["force_include"][str(built)] = f"skill_eval/{built.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_tmp", None):
            shutil.rmtree(str(self._tmp), ignore_errors=True)


if __name__ == "__main__":  # `python hatch_build.py`: recompile in place after editing the C source
    print(compile_extension(SOURCE, SOURCE.parent))
