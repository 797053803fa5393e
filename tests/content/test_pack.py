import json
import subprocess

import pytest

from skill_eval.cli import main
from skill_eval.content import config, pack


def _check(root, capsys):
    rc = main(["pack", "--check", "--root", str(root)])
    return rc, capsys.readouterr().out


def test_fresh_pack_passes(mini_repo, capsys):
    rc, out = _check(mini_repo, capsys)
    assert rc == 0, out


def test_entries_and_affects(mini_repo):
    entries = pack.compute(config.load(mini_repo))
    assert sorted(entries) == ["corpus", "harness", "scenario:alpha-break", "scenario:alpha-same", "scenario:beta-unsure", "skill:alpha", "skill:beta"]
    assert entries["corpus"].affects == ("alpha", "beta")
    assert entries["scenario:beta-unsure"].affects == ("beta",)
    assert "skills-src/shared/b.md" in entries["skill:alpha"].inputs


@pytest.mark.parametrize(
    "rel,edit,expect",
    [
        ("skills-src/beta/SKILL.md", lambda t: t + "more\n", ["skill:beta: inputs moved: ", "skills-src/beta (affects beta)"]),
        ("skills-src/shared/b.md", lambda t: t + "x\n", ["skill:alpha: inputs moved: ", "skills-src/shared/b.md (affects alpha)"]),
        ("evals/fixtures/case-one/new.w", lambda t: "NEW\n", ["scenario:alpha-break, scenario:beta-unsure: inputs moved: evals/fixtures/case-one"]),
        ("evals/trigger_corpus.yaml", lambda t: t.replace("orders table", "orders table now"), ["corpus: inputs moved"]),
        ("evals/prompts/behavioral.md", lambda t: "changed {prompt}\n", ["harness: inputs moved: evals/prompts"]),
    ],
)
def test_check_names_moved_entry_and_input(mini_repo, capsys, rel, edit, expect):
    p = mini_repo / rel
    p.write_text(edit(p.read_text()))
    rc, out = _check(mini_repo, capsys)
    assert rc == 1
    for e in expect:
        assert e in out, out


def test_shared_fragment_edit_names_exactly_citing_skills(mini_repo, capsys):
    (mini_repo / "skills-src/shared/a.md").write_text("changed. See [b](./b.md).\n")
    rc, out = _check(mini_repo, capsys)
    assert rc == 1
    assert "skill:alpha" in out and "skill:beta" not in out


def test_ground_truth_edit_moves_only_its_scenarios(mini_repo, capsys):
    p = mini_repo / "evals/ground_truth.json"
    d = json.loads(p.read_text())
    d["cases"]["case-two"]["description"] = "edited"
    p.write_text(json.dumps(d))
    rc, out = _check(mini_repo, capsys)
    assert rc == 1 and "scenario:alpha-same" in out and "scenario:alpha-break" not in out


def test_hand_edited_pack_fails(mini_repo, capsys):
    p = mini_repo / "evals/skill-eval-pack.json"
    d = json.loads(p.read_text())
    d["entries"]["skill:beta"]["digest"] = "0" * 64
    p.write_text(json.dumps(d, indent=2, sort_keys=True) + "\n")
    rc, out = _check(mini_repo, capsys)
    assert rc == 1 and "skill:beta: digest does not match its inputs (hand-edited?)" in out


def test_reformatted_pack_fails(mini_repo, capsys):
    p = mini_repo / "evals/skill-eval-pack.json"
    p.write_text(json.dumps(json.loads(p.read_text())))
    rc, out = _check(mini_repo, capsys)
    assert rc == 1 and "not in generated form" in out


def test_corrupt_pack_is_one_line_error(mini_repo, capsys):
    (mini_repo / "evals/skill-eval-pack.json").write_text('{"schema_version": 1, "schema_version": 1}')
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    err = capsys.readouterr().err
    assert "duplicate JSON key" in err and "Traceback" not in err


def test_every_hashed_input_is_git_tracked(mini_repo):
    cfg = config.load(mini_repo)
    tracked = set(subprocess.run(["git", "-C", str(mini_repo), "ls-files"], capture_output=True, text=True, check=True).stdout.split())
    for entry in pack.compute(cfg).values():
        for inp in entry.inputs:
            path = inp.split("#", 1)[0]
            if path.startswith("skill-eval:") or path == "skill-eval.toml":
                assert path.startswith("skill-eval:") or path in tracked
                continue
            assert any(t == path or t.startswith(path.rstrip("/") + "/") for t in tracked), path


def test_this_repositorys_hashed_inputs_are_all_tracked():
    """A hashed file git does not track (untracked or ignored) would give a fresh clone another digest."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    cfg = config.load(repo)

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.split()

    for entry in pack.compute(cfg).values():
        for inp in entry.inputs:
            path = inp.split("#", 1)[0]
            if path.startswith("skill-eval:"):
                continue  # skill-eval's own installed source, hashed from the package
            assert git("ls-files", "--", path), f"{entry.key}: {path} is not tracked by git"
            stray = git("ls-files", "--others", "--", path) + git("ls-files", "--others", "--ignored", "--exclude-standard", "--", path)
            assert not stray, f"{entry.key}: untracked or ignored files under {path}: {stray[:5]}"
