"""`skill-eval init PATH`: scaffold skill-eval into another git repository.

Writes the host configuration, an example skill with a shared fragment, the evaluation
content skeleton, nox/Makefile/pre-commit entries, then generates the published trees
and the pack so `skill-eval pack --check` and `skill-eval check-skills` pass at once.
Existing files are never overwritten (snippets are appended to noxfile.py, Makefile and
.pre-commit-config.yaml only when they do not already mention skill-eval).
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from skill_eval import config, fsio, generate, pack
from skill_eval.errors import ConfigError
from skill_eval.output import emit

NAME = "init"
HELP = "scaffold skill-eval (config, example skill and evals, nox/Makefile/pre-commit) into a git repository"
DESCRIPTION = __doc__

TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "init"
SNIPPETS = {"noxfile_snippet.txt", "pre-commit-snippet.yaml", "skill-eval.mk"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path, help="root of the target git repository")
    p.add_argument("--force", action="store_true", help="scaffold even if a skill-eval.toml already exists (existing files are still kept)")


def _append_once(path: Path, marker: str, text: str, created: list[str], header: str = "") -> None:
    """Writes through fsio: a symlinked Makefile (or one on the way) is refused, never written through."""
    root = path.parent
    existing = fsio.read_file(root, path.name)
    if existing is not None:
        current = existing.decode("utf-8")
        if marker in current:
            return
        fsio.write_file(root, path.name, current.rstrip("\n") + "\n" + text)
        created.append(f"{path.name} (appended)")
    else:
        fsio.write_file(root, path.name, header + text)
        created.append(path.name)


def run(args: argparse.Namespace) -> int:
    root: Path = args.path.resolve()
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory", fix="create the repository first (git init)")
    probe = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        raise ConfigError(f"{root} is not inside a git repository", fix=f"run `git init {root}` first")
    if (root / config.CONFIG_NAME).exists() and not args.force:
        raise ConfigError(f"{root / config.CONFIG_NAME} already exists", fix="pass --force to add missing files only")
    created: list[str] = []
    for src in sorted(TEMPLATES.rglob("*")):
        rel = src.relative_to(TEMPLATES)
        if src.is_dir() or rel.name in SNIPPETS:
            continue
        dest = root / rel
        if dest.exists() and not dest.is_symlink():
            continue
        fsio.write_file(root, rel, src.read_bytes())  # refuses a symlink, even a dangling one
        created.append(rel.as_posix())
    mk = root / "skill-eval.mk"
    if not mk.exists() or mk.is_symlink():
        fsio.write_file(root, "skill-eval.mk", (TEMPLATES / "skill-eval.mk").read_bytes())
        created.append("skill-eval.mk")
    _append_once(root / "Makefile", "skill-eval.mk", "include skill-eval.mk\n", created)
    _append_once(root / "noxfile.py", "skill-eval", (TEMPLATES / "noxfile_snippet.txt").read_text(encoding="utf-8"), created,
                 header='"""nox sessions."""\n')
    _append_once(root / ".pre-commit-config.yaml", "skill-eval", (TEMPLATES / "pre-commit-snippet.yaml").read_text(encoding="utf-8"),
                 created, header="repos:\n")
    cfg = config.load(root)
    generate.write_published(cfg)
    pack.write(cfg)
    created += [*cfg.published, str(pack.pack_path(cfg).relative_to(root))]
    lines = [f"  created {c}" for c in created]
    lines.append(f"init: ok — scaffolded {root}. Next: edit [subject] in skill-eval.toml, run `skill-eval surface --write`, "
                 "replace the example skill, then `skill-eval generate && skill-eval pack` and commit.")
    emit(args, lines, {"ok": True, "root": str(root), "created": created})
    return 0
