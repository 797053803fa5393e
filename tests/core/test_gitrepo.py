"""One module owns every read of the repository's git (issue 34 item 1): core/gitrepo.py.

The only other `git` processes skill-eval starts work on trees that are not the host repository: a
scenario's fixture sandbox (harness/runner/sandbox.py, interop/harbor_verifier.py, their receipts) and
a scratch copy a proposed patch is applied to (improve/patch.py)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "skill_eval"
OTHER_TREES = {  # module -> the tree its git runs on
    "harness/runner/sandbox.py": "the fixture sandbox the agent worked in",
    "interop/harbor_verifier.py": "a Harbor trial's fixture checkout",
    "improve/patch.py": "a scratch copy a proposed patch is applied to",
}
GIT_PROCESS = re.compile(r"""(\[|\(|,\s*)["']git["']\s*,""")


def test_only_gitrepo_starts_git_on_the_repository():
    found = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if GIT_PROCESS.search(line) and "subprocess" in text and not line.lstrip().startswith(("#", "if argv", "elif argv")) \
                    and "fix=" not in line:
                found.add(rel)
    assert found - {"core/gitrepo.py"} <= set(OTHER_TREES), sorted(found - {"core/gitrepo.py"} - set(OTHER_TREES))
    assert "core/gitrepo.py" in found  # the pattern still finds the owner (the test is not hollow)


def test_gitpython_is_not_a_dependency():
    """Dropped, not imported: core/gitrepo.py's docstring says why (import cost on the pr path)."""
    pyproject = (SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert "gitpython" not in pyproject.lower()
    assert not [p for p in SRC.rglob("*.py") if re.search(r"^\s*(import git\b|from git\b)", p.read_text(encoding="utf-8"), re.M)]
