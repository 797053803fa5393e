"""Every committed file format fails closed on bad input: one line naming the file, exit 1 or 2,
never a traceback or "internal error", never exit 0.

The first cases are hand-written; the rest is the generated corpus (tests/data/bad_input/,
scripts/make_bad_inputs.py): every case runs through the real CLI in its own process (forked
from a warm worker by tests/bad_input_harness.py), which measures its wall time and peak RSS:
each must finish within 5 s and 500 MB, exit with the format's bad-input code (2, or 1 for bundle
files, which fail grading) and print exactly one stderr line naming the file. A broken SKILL.md is
different by design (issue 11): it is that skill's L0 finding, not an error stopping check-skills,
so it exits 1 with nothing on stderr, its finding lines on stdout name the file (each one line),
and the other skills are still checked (the summary counts every skill).
"""

import pytest

from skill_eval.cli import main

BASELINE = "agent-evals/skills/baselines/abi-compat-review--claude-code--scripted_3dca3847550cd148fdb78d194bd58bf8a491331132f5a680daf270f8a997cd2a.json"

CASES = {
    "cli surface reference": ("agent-evals/skills/surface/abicheck-cli.json", '{"schema_version": 1, "schema_version": 1}',
                              ["check-skills"], "duplicate JSON key"),
    "cli surface unknown field": ("agent-evals/skills/surface/abicheck-cli.json",
                                  '{"schema_version": 1, "tool": "abicheck", "version": "0.7.0", "commands": {}, "extra": 1}',
                                  ["check-skills"], "abicheck-cli.json"),
    "evidence pending": ("agent-evals/skills/evidence-pending.yaml", "schema_version: 1\npending: []\nsurprise: true\n",
                         ["evidence"], "evidence-pending.yaml"),
    "baseline": (BASELINE, '{"truncated": ', ["evidence"], "invalid JSON"),
    "golden manifest": ("agent-evals/skills/golden/manifest.yaml", "schema_version: 1\nschema_version: 1\n",
                        ["golden"], "duplicate key"),
    "model script": ("agent-evals/skills/model-scripts/bad.yaml", "schema_version: 1\nturns: [\n",
                     ["run", "review-removed-export", "--agent", "scripted", "--model-server",
                      "scripted:agent-evals/skills/model-scripts/bad.yaml", "--no-trigger", "-k", "1", "--run-id", "bad"], "bad.yaml"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_clear_line(repo_copy, capsys, name):
    rel, text, argv, needle = CASES[name]
    (repo_copy / rel).write_text(text)
    rc = main([argv[0], "--root", str(repo_copy), *argv[1:]])
    captured = capsys.readouterr()
    assert rc in (1, 2), (rc, captured)
    both = captured.out + captured.err
    assert "Traceback" not in both and "internal error" not in both, both
    assert needle in both, both


# -- the generated corpus (scripts/make_bad_inputs.py): every case in its own measured process ----

import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

DATA = Path(__file__).parent / "data" / "bad_input"
MANIFEST = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
CASE_IDS = ([f"file:{c['file']}" for c in MANIFEST["cases"]] + [f"oversize:{f}" for f in MANIFEST["oversize"]]
            + [f"cli:{n}" for n in MANIFEST["cli"]])
WORKERS = 2  # the CI machine has two cores
MAX_SECONDS = 5.0
MAX_RSS_MB = 500.0


def _scratch_repo(dest: Path) -> Path:
    """This repository's host content with one evidence bundle, the frozen v1 fixture the corpus
    attacks (every command then reads a realistic repository, fast)."""
    from conftest import REPO, REPO_PARTS, git, git_commit_all

    dest.mkdir(parents=True)
    bundle = MANIFEST["bundle"]["path"]
    evidence = "agent-evals/skills/evidence"
    for part in REPO_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, symlinks=True,
                            ignore=lambda d, names: ["evidence"] if Path(d) == REPO / "agent-evals/skills" else [])
        elif src.exists():
            shutil.copy2(src, dest / part)
    shutil.copytree(REPO / MANIFEST["bundle"]["source"], dest / bundle, symlinks=True)
    assert (dest / evidence).is_dir()
    git(dest, "init", "-q")
    git_commit_all(dest, "corpus base")
    return dest


@pytest.fixture(scope="session")
def corpus_results(tmp_path_factory) -> dict[str, dict]:
    base = tmp_path_factory.mktemp("bad_input")
    harness = Path(__file__).parent / "bad_input_harness.py"
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["XDG_STATE_HOME"] = str(base / "state")
    procs = []
    for w in range(WORKERS):
        repo = _scratch_repo(base / f"repo{w}")
        out = base / f"results{w}.json"
        procs.append((out, subprocess.Popen([sys.executable, str(harness), str(DATA / "manifest.json"), str(repo), str(out),
                                             *CASE_IDS[w::WORKERS]], env=env)))
    results: dict[str, dict] = {}
    for out, proc in procs:
        assert proc.wait(timeout=1800) == 0
        results |= {r["case"]: r for r in json.loads(out.read_text(encoding="utf-8"))}
    return results


def test_corpus_is_large_and_covers_every_format():
    assert len(MANIFEST["cases"]) >= 300
    assert {c["format"] for c in MANIFEST["cases"]} == set(MANIFEST["formats"])
    assert all((DATA / c["file"]).is_file() for c in MANIFEST["cases"])


def _skill_count() -> int:
    from conftest import REPO

    return len(list((REPO / "skills-src").glob("*/SKILL.md")))


def _check_findings(r: dict) -> None:
    """A broken skill folder is that skill's finding: stdout holds only finding lines and the
    summary, at least one error line names the file, and every skill was still checked."""
    out, err = r["stdout_head"], r["stderr"]
    assert err == "", err
    assert "Traceback" not in out and "internal error" not in out, out
    lines = out.strip("\n").split("\n")
    assert all(line.startswith(("error: ", "warning: ", "check-skills: ")) for line in lines), out
    findings = [line for line in lines if line.startswith("error: ") and r["names"] + ":" in line]
    assert findings, out
    assert len(set(findings)) == len(findings), out  # one line per finding, no repeated wall
    summary = re.search(r"^check-skills: FAIL — (\d+) skills", out, re.MULTILINE)
    # one broken folder never aborts the rest: every other skill is still checked (an unreadable one may not count)
    assert summary and int(summary.group(1)) >= _skill_count() - 1, out


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_bad_input_case(corpus_results, case_id):
    r = corpus_results[case_id]
    kind, _, name = case_id.partition(":")
    fmt = None if kind == "cli" else MANIFEST["formats"][name.split("/", 1)[0]]
    allowed = [2] if fmt is None else fmt["exits"]
    err = r["stderr"]
    assert "Traceback" not in err and "internal error" not in err, err
    assert r["exit"] in allowed and r["exit"] != 0, (r["exit"], err, r["stdout_head"])
    assert r["wall_s"] <= MAX_SECONDS, r["wall_s"]
    assert r["max_rss_mb"] <= MAX_RSS_MB, r["max_rss_mb"]
    if fmt is not None and fmt.get("reports") == "findings":
        _check_findings(r)
        return
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].strip(), err
    assert r["names"] in lines[0], lines[0]
