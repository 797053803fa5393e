import pytest

from skill_eval.checks import structure, surface
from skill_eval.cli import main
from skill_eval.content import config, generate


def run_check(root, capsys):
    rc = main(["check-skills", "--root", str(root)])
    return rc, capsys.readouterr().out


def regen(root):
    generate.write_published(config.load(root))


def test_clean_repo_passes(mini_repo, capsys):
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0, out
    assert "check-skills: ok — 2 skills" in out


@pytest.mark.parametrize(
    "old,new,needle",
    [
        ("name: alpha", "name: Alpha", "must be lowercase"),
        ("name: alpha", "name: alpha--x", "single hyphens"),
        ("name: alpha", "name: gamma", "must equal its folder name 'alpha'"),
        ("name: alpha", "name: " + "a" * 65, "the limit is 64"),
        ("description: Compare", "description: ''\nx_y: Compare", "'description' is missing or empty"),
        ("description: Compare", "version: 1\ndescription: Compare", "unknown frontmatter field 'version'"),
        ("description: Compare", "compatibility: ''\ndescription: Compare", "compatibility must be a string of 1-500"),
        ("description: Compare", "metadata: {a: 1}\ndescription: Compare", "metadata must map strings to strings"),
    ],
)
def test_frontmatter_violations(mini_repo, capsys, old, new, needle):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text().replace(old, new, 1))
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and needle in out, out


def test_description_too_long(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text().replace("description: Explain", "description: " + "x" * 1030 + " Explain"))
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "the limit is 1024" in out


def test_duplicate_frontmatter_key_is_that_skills_finding(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text().replace("name: beta", "name: beta\nname: beta"))
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1
    assert "error: skills-src/beta/SKILL.md: invalid YAML at line 3 column 1: duplicate key 'name'" in out  # file line numbers
    assert "1 skill, 1 error" in out  # alpha is still checked; beta's published copy is not a second finding


def test_broken_relative_link(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "\nSee [missing](references/nope.md).\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "broken relative link 'references/nope.md'" in out


def test_link_escaping_the_skill(mini_repo, capsys):
    (mini_repo / "README.md").write_text("# host\n")
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "\nSee [readme](../../README.md).\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)  # resolves in the repository: a portability warning for a plugin
    assert rc == 0 and "warning: skills-src/beta/SKILL.md: link '../../README.md' leaves the skill folder" in out
    cfg = mini_repo / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace("[evals]", '[checks]\npublish = "standalone"\n\n[evals]', 1))
    rc, out = run_check(mini_repo, capsys)  # published alone: the same link is an error
    assert rc == 1 and "error: skills-src/beta/SKILL.md: link '../../README.md' leaves the skill folder" in out
    p.write_text(p.read_text() + "\nSee [gone](../../NOPE.md).\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)  # resolves nowhere: a broken link whatever the publishing
    assert rc == 1 and "broken relative link '../../NOPE.md'" in out


def test_unresolved_references_path_mention(mini_repo, capsys):
    p = mini_repo / "skills-src/alpha/SKILL.md"  # alpha has a references/ folder
    p.write_text(p.read_text() + "\nRead references/ghost.md first.\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "'references/ghost.md'" in out


def test_unknown_flag_in_code_block(mini_repo, capsys):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text().replace("-o json=report.json", "--format json \\\n  --output-dir out"))
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1
    assert "`tool compare --format`: tool compare has no option --format" in out
    assert "--output-dir" in out


def test_unknown_command(mini_repo, capsys):
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text() + "\n```sh\nFOO=1 tool frobnicate x\n```\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and "tool has no command 'frobnicate'" in out


def test_flags_outside_code_blocks_are_not_checked(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "\nNever pass `tool compare --format`; it was removed.\n")
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0, out


def test_published_copy_drift(mini_repo, capsys):
    (mini_repo / ".agents/skills/alpha/SKILL.md").write_text("drifted\n")
    rc, out = run_check(mini_repo, capsys)
    assert rc == 1 and ".agents/skills/alpha/SKILL.md: differs from its source" in out


def test_orphan_fragment_warns(mini_repo, capsys):
    (mini_repo / "skills-src/shared/orphan.md").write_text("nobody cites me\n")
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0 and "warning: skills-src/shared/orphan.md: shared fragment is cited by no skill" in out


def test_long_body_warns(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "line\n" * 600)
    regen(mini_repo)
    rc, out = run_check(mini_repo, capsys)
    assert rc == 0 and "body is" in out and "lines (> 500)" in out


def test_subject_invocations_parsing():
    text = "```bash\nA=1 tool compare a b \\\n  --suppress s.yaml | tee x; tool dump --bad\n# tool compare --comment\n```\n"
    found = structure.subject_invocations(text, "tool")
    assert [argv[:2] for _, argv in found] == [["tool", "compare"], ["tool", "dump"]]
    assert found[0][1][-2:] == ["--suppress", "s.yaml"]


def test_parse_help_boxed_and_plain():
    boxed = "╭─ Options ─╮\n│ --header   -H  PATH   Public header │\n│                 --not-a-flag wrapped │\n│ --follow-deps/--no-follow-deps  x │\n╰──╯\n╭─ Commands ─╮\n│ compare   Compare things │\n╰──╯\n"
    opts, cmds = surface.parse_help(boxed)
    assert opts == ["--follow-deps", "--header", "--no-follow-deps", "-H"] and cmds == ["compare"]
    plain = "Usage: x\n\nOptions:\n  --variant NAME=PATH  Capture\n                       --wrapped x\n  -o, --output TEXT  out\n\nCommands:\n  tree  Show tree\n"
    opts, cmds = surface.parse_help(plain)
    assert opts == ["--output", "--variant", "-o"] and cmds == ["tree"]


def test_surface_drift():
    ref = {"version": "1", "commands": {"compare": {"options": ["-o", "--old"]}}}
    now = {"tool": "t", "version": "2", "commands": {"compare": {"options": ["-o", "--new"]}, "dump": {"options": []}}}
    problems = surface.drift(ref, now)
    assert any("installed t is 2" in p for p in problems)
    assert "compare: options removed from the installed tool: --old" in problems
    assert "compare: options added in the installed tool: --new" in problems
    assert any("'dump' exists in the installed tool but not in the reference" in p for p in problems)
