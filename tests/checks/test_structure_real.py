"""L0 on real-world skills (issue 11): per-skill findings, CRLF/BOM, every link form, every named path."""

import json
import os

import pytest

from skill_eval.checks.rules import HYGIENE
from skill_eval.cli import main
from skill_eval.content import config, generate
from skill_eval.content.skills import iter_links, split_frontmatter

GOOD = "---\nname: {n}\ndescription: Does {n} things. Use when asked about {n}.\n---\n\n# {n}\n"


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "r"
    (root / "skills").mkdir(parents=True)
    (root / "skill-eval.toml").write_text(
        'schema_version = 1\n[skills]\nsource = "skills"\npublished = []\n[evals]\nroot = "evals"\n')
    return root


def add(root, name, text=None, files=None, raw: bytes | None = None):
    d = root / "skills" / name
    d.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        (d / "SKILL.md").write_bytes(raw)
    else:
        (d / "SKILL.md").write_text(text if text is not None else GOOD.format(n=name))
    for rel, data in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data if isinstance(data, bytes) else data.encode())
    return d


def check(root, capsys):
    rc = main(["check-skills", "--root", str(root), "--json"])
    out = json.loads(capsys.readouterr().out)
    return rc, [(e["where"], e["message"]) for e in out["errors"]], out


def test_one_broken_folder_never_aborts_the_rest(repo, capsys):
    add(repo, "good")
    add(repo, "dup-key", GOOD.format(n="dup-key").replace("name: dup-key", "name: dup-key\nname: dup-key"))
    add(repo, "latin1", raw=GOOD.format(n="latin1").replace("things", "caf\xe9").encode("latin-1"))
    add(repo, "has-link", files={"scripts/x.sh": "echo\n"})
    os.symlink(repo / "skills" / "good", repo / "skills" / "linked")
    os.symlink("/etc/hostname", repo / "skills/has-link/scripts/y.sh")
    rc, errors, out = check(repo, capsys)
    assert rc == 1
    assert out["skills"] == ["good"]  # every other folder is its own finding; good is still checked
    where = dict(errors)
    assert "duplicate key 'name'" in where["skills/dup-key/SKILL.md"]
    assert "invalid UTF-8" in where["skills/latin1/SKILL.md"]
    assert "symlink" in where["skills/linked"]
    assert "symlink" in where["skills/has-link"]
    assert len(errors) == 4


def test_crlf_bom_and_empty_frontmatter(repo, capsys):
    add(repo, "crlf", raw=GOOD.format(n="crlf").replace("\n", "\r\n").encode())
    add(repo, "bom", raw=b"\xef\xbb\xbf" + GOOD.format(n="bom").encode())
    rc, errors, out = check(repo, capsys)
    assert rc == 0, errors
    assert [w["where"] for w in out["warnings"]] == ["skills/bom/SKILL.md"]
    assert "byte-order mark" in out["warnings"][0]["message"]
    add(repo, "empty", "---\n---\n\n# Empty\n")
    rc, errors, _ = check(repo, capsys)
    assert rc == 1
    assert errors == [("skills/empty/SKILL.md", "frontmatter field 'name' is missing or not a string"),
                      ("skills/empty/SKILL.md", "frontmatter field 'description' is missing or empty")]


def test_split_frontmatter_edge_cases():
    assert split_frontmatter("---\r\nname: a\r\n---\r\nbody\r\n", "x") == ({"name": "a"}, "body\n")
    assert split_frontmatter("---\n# only a comment\n---\n", "x") == ({}, "")
    assert split_frontmatter("---\nname: a\n---", "x") == ({"name": "a"}, "")
    with pytest.raises(Exception, match="not closed"):
        split_frontmatter("---\nname: a\n", "x")


def test_link_forms():
    text = ('[a](a%20b.md) [t](<c d.md> "title") ![img](img.png?raw=1#x)\n'
            '[ref]: refs/r.md "T"\n  [r2]: <refs/r 2.md>\n'
            '<a href="html/page.md">x</a> <img src=\'assets/i.png\'>\n'
            '[web](https://example.com) [anchor](#top) `[code](nope.md)`\n'
            '```\n[fenced](nope2.md)\n```\n')
    assert iter_links(text) == ["a b.md", "c d.md", "img.png", "refs/r.md", "refs/r 2.md", "html/page.md", "assets/i.png"]


def test_every_link_form_and_named_path_is_resolved(repo, capsys):
    add(repo, "ok", GOOD.format(n="ok") + (
        "See [guide](references/user%20guide.md), [logo][l], <img src=\"assets/logo.png\">, "
        "run `python scripts/run.py` or `bash ./scripts/run.py`, templates in `templates/base.html`, "
        "globs like `scripts/*.py` and placeholders like `references/<topic>.md` are not paths.\n\n"
        "[l]: assets/logo.png\n"),
        files={"references/user guide.md": "g\n", "assets/logo.png": b"\x89PNG", "scripts/run.py": "1\n",
               "templates/base.html": "<html/>\n"})
    add(repo, "bad", GOOD.format(n="bad") + (
        "See [guide](references/missing%20guide.md), [logo][l], <a href=\"docs/gone.md\">x</a>.\n\n"
        "```bash\npython scripts/nope.py --in data.csv\n```\n"
        "Assets: `assets/icon.svg`. Our own folder: `templates/missing.html`.\n\n[l]: assets/logo.png\n"),
        files={"templates/base.html": "<html/>\n", "assets/other.png": b"x", "references/other.md": "x\n",
               "scripts/other.py": "x\n"})
    add(repo, "no-folders", GOOD.format(n="no-folders") + "Run `python scripts/build.py` in your project.\n")
    rc, errors, out = check(repo, capsys)
    assert rc == 1
    # links are always pointers; a named path only when the agent is told to use it (here: a command that
    # runs it). `assets/icon.svg` and `templates/missing.html` are named in prose, so they are examples.
    assert sorted(m for w, m in errors if w == "skills/bad/SKILL.md") == sorted([
        "broken relative link 'references/missing guide.md' (no references/missing guide.md in the published skill)",
        "broken relative link 'assets/logo.png' (no assets/logo.png in the published skill)",
        "broken relative link 'docs/gone.md' (no docs/gone.md in the published skill)",
        "names 'scripts/nope.py', which does not exist in the skill",
    ])
    assert not [e for e in errors if e[0] != "skills/bad/SKILL.md"]
    # a skill with no scripts/ folder naming scripts/build.py "in your project": the user's path, no finding
    assert [w for w in out["warnings"] if w["rule"] not in HYGIENE] == []  # (bundled files named by no file: checks.hygiene)


@pytest.mark.parametrize("field,value,needle", [
    ("compatibility", "x" * 501, "compatibility must be a string of 1-500 characters (it is 501)"),
    ("compatibility", "''", "compatibility must be a string of 1-500 characters"),
    ("metadata", "{author: me, version: 1.0}", "metadata must map strings to strings"),
    ("metadata", "just-a-string", "metadata must map strings to strings"),
    ("allowed-tools", "42", "allowed-tools must be a non-empty space-separated string"),
    ("license", "''", "license must be a non-empty string"),
    ("triggers", "always", "unknown frontmatter field 'triggers'"),
])
def test_optional_spec_fields_are_validated(repo, capsys, field, value, needle):
    add(repo, "s", GOOD.format(n="s").replace("---\n\n", f"{field}: {value}\n---\n\n", 1))
    rc, errors, _ = check(repo, capsys)
    assert rc == 1 and any(needle in m for _, m in errors), errors


def test_optional_spec_fields_accepted(repo, capsys):
    add(repo, "s", GOOD.format(n="s").replace("---\n\n", (
        "license: Proprietary. LICENSE.txt has complete terms\ncompatibility: Requires git and network access\n"
        "metadata:\n  author: example-org\n  version: \"1.0\"\nallowed-tools: Bash(git:*) Read\n---\n\n"), 1))
    add(repo, "t", GOOD.format(n="t").replace("---\n\n", "allowed-tools:\n  - Read\n  - Grep\nuser-invocable: false\n---\n\n", 1))
    rc, errors, out = check(repo, capsys)
    assert rc == 0, errors
    msgs = [w["message"] for w in out["warnings"]]
    assert any("allowed-tools is a YAML list" in m for m in msgs)
    assert any("'user-invocable' is not in the Agent Skills spec" in m and "Claude Code documents it" in m for m in msgs)


def test_unregenerated_copy_says_make_pack(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "\nOne more sentence.\n")
    rc = main(["check-skills", "--root", str(mini_repo)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "differs from its source" in out and "run `make pack`" in out
    generate.write_published(config.load(mini_repo))
    assert main(["check-skills", "--root", str(mini_repo)]) == 0


def test_template_and_non_skill_folders_are_skipped_by_rule(repo, capsys):
    add(repo, "real")
    add(repo, "template", "---\nname: template-skill\ndescription: Replace me.\n---\n")
    (repo / "skills" / "docs").mkdir()
    (repo / "skills" / "docs" / "README.md").write_text("not a skill\n")
    (repo / "skills" / "README.md").write_text("index\n")
    rc, errors, out = check(repo, capsys)
    assert rc == 0, errors
    assert out["skills"] == ["real"]
    assert sorted(s["where"] for s in out["skipped"]) == ["skills/docs", "skills/template"]


def test_lowercase_skill_md_is_a_finding(repo, capsys):
    add(repo, "real")
    d = repo / "skills" / "lower"
    d.mkdir()
    (d / "skill.md").write_text(GOOD.format(n="lower"))
    rc, errors, _ = check(repo, capsys)
    assert rc == 1 and errors == [("skills/lower", "the skill file must be named exactly SKILL.md (fix: rename it to SKILL.md)")]
