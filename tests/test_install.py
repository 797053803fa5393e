"""Install paths that work (issue 11): a wheel and an sdist built from a clean export of HEAD
install into a fresh venv, and that install's `skill-eval init` + `pr` adopt a skills repository.

Offline by construction: `python -m build --no-isolation` uses the pinned build backend from
the test environment, and the fresh venv gets the wheel with `--no-deps --no-index`; its
runtime dependencies come from the test environment through a .pth file (so this checks our
package — its files, entry point and data — not PyPI's).
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_adopt import public_skills_repo

REPO = Path(__file__).resolve().parents[1]


def _run(*argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, **kw)


@pytest.mark.slow
def test_wheel_and_sdist_install_in_a_fresh_venv_and_adopt(tmp_path):
    pytest.importorskip("build")
    pytest.importorskip("hatchling")
    if _run("git", "-C", REPO, "rev-parse", "HEAD").returncode != 0:
        pytest.skip("not a git checkout")
    src = tmp_path / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "HEAD"], capture_output=True, check=True)
    (tmp_path / "head.tar").write_bytes(archive.stdout)
    with tarfile.open(tmp_path / "head.tar") as tar:
        tar.extractall(src, filter="data")
    dist = tmp_path / "dist"
    # a pure-Python wheel: building it needs no compiler (CC points at one that always fails)
    built = _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, src,
                 env={**os.environ, "CC": "/bin/false", "CXX": "/bin/false"})
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = dist.glob("skill_eval-*.whl")
    [sdist] = dist.glob("skill_eval-*.tar.gz")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("skill_eval/schemas/config.schema.json", "skill_eval/templates/init/skill-eval.toml",
                   "skill_eval/templates/init/example/SKILL.md", "skill_eval/cli.py"):
        assert needed in names, needed
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert any(m.endswith("schemas/config.schema.json") for m in members)
    # no C source, no build hook, nothing compiled: one wheel for every platform
    assert not any(m.endswith("/hatch_build.py") or ("/src/skill_eval/" in m and m.endswith((".c", ".so", ".pyi")))
                   for m in members), members
    assert not any(n.endswith((".so", ".pyd", ".c")) for n in names), names
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name

    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    py = venv / "bin" / "python"
    inst = _run(py, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel)
    assert inst.returncode == 0, inst.stderr
    site = _run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    (Path(site) / "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    where = _run(py, "-c", "import skill_eval; print(skill_eval.__file__)", env=env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout + where.stderr

    repo = public_skills_repo(tmp_path / "skills-repo")
    exe = venv / "bin" / "skill-eval"
    init = _run(exe, "init", repo, env=env)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "found 6 skill(s) in skills/" in init.stdout
    nox_text = (repo / "noxfile.py").read_text()
    assert "file://" not in nox_text and str(tmp_path) not in nox_text  # a machine-local URL is never committed
    assert 'os.environ.get("SKILL_EVAL_SPEC", None)' in nox_text and "pip install skill-eval" not in nox_text
    pr = _run(exe, "pr", "--root", repo, env=env)
    assert pr.returncode == 1, pr.stdout + pr.stderr  # exactly the one real finding
    assert "names 'scripts/run_report.py', which does not exist in the skill" in pr.stdout
    assert "pr: FAIL — L0 structure fail" in pr.stdout and "pack ok" in pr.stdout
    shutil.rmtree(venv)
