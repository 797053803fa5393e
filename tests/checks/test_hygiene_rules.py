"""L0 hygiene rules (issue 36 item 3): reserved words in a name, bundled files nothing names, long
references without a table of contents, unpinned package runners. Each flags its planted case and
lets its near miss through, with an id, a line where one exists, a fix and an `explain` page."""

import json
from pathlib import Path

import pytest

from skill_eval.checks.rules import HYGIENE, TOC_LINES
from skill_eval.cli import main

CONFIG = 'schema_version = 1\n[skills]\nsource = "skills"\npublished = []\n[evals]\nroot = "evals"\n'


def skill_md(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: Does {name} things. Use when asked about {name}.\n---\n\n# {name}\n\n{body}"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "skill-eval.toml").write_text(CONFIG)
    return tmp_path


def add(root: Path, name: str, body: str = "", files: dict[str, str | bytes] | None = None) -> None:
    d = root / "skills" / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(skill_md(name, body), encoding="utf-8")
    for rel, data in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data if isinstance(data, bytes) else data.encode())


def hygiene(root: Path, capsys) -> list[dict]:
    main(["check-skills", "--root", str(root), "--json"])
    out = json.loads(capsys.readouterr().out)
    return [f for f in out["errors"] + out["warnings"] if f["rule"] in HYGIENE]


def test_reserved_word_in_a_name(repo, capsys):
    add(repo, "claude-helper")
    add(repo, "clod-helper")  # near miss
    (f,) = hygiene(repo, capsys)
    assert (f["rule"], f["level"], f["where"], f["line"], f["column"]) == (
        "name-reserved", "warning", "skills/claude-helper/SKILL.md", 2, 1)
    assert "'claude'" in f["message"] and f["fix"]


def test_a_bundled_file_nothing_names(repo, capsys):
    add(repo, "tool", "Run `python scripts/run.py`. Fonts are in canvas-fonts/.\n", {
        "scripts/run.py": "from helpers import load\n",
        "scripts/helpers.py": "def load(): ...\n",  # imported by run.py: named
        "scripts/leftover.py": "print('old')\n",  # planted: nothing names it
        "canvas-fonts/Inter.ttf": b"\0\1font",  # its folder is named
        "LICENSE.txt": "MIT\n",  # a licence is for people
        "references/unused.md": "# Notes\n",  # planted: `scripts/` named does not name references/
    })
    got = sorted((f["where"], f["id"].rsplit(":", 1)[1]) for f in hygiene(repo, capsys))
    assert got == [("skills/tool/references/unused.md", "references/unused.md"),
                   ("skills/tool/scripts/leftover.py", "scripts/leftover.py")]


def test_a_long_reference_needs_a_table_of_contents(repo, capsys):
    long = "".join(f"Line {i}.\n" for i in range(TOC_LINES + 20))
    add(repo, "ref", "Read references/long.md, references/toc.md, references/anchors.md and references/short.md.\n", {
        "references/long.md": "# Long\n\n" + long,  # planted
        "references/toc.md": "# Guide\n\n## Contents\n- Setup\n- Use\n\n" + long,
        "references/anchors.md": "# Guide\n\n- [Setup](#setup)\n- [Use](#use)\n- [Limits](#limits)\n\n" + long,
        "references/short.md": "# Short\n\n" + long[: 50 * 8],
        "README.md": "# For maintainers\n\n" + long,  # not a reference the agent loads
    })
    (f,) = hygiene(repo, capsys)
    assert (f["rule"], f["where"], f["line"]) == ("reference-no-toc", "skills/ref/references/long.md", 1)
    assert f"> {TOC_LINES}" in f["message"]


def test_unpinned_package_runners_in_code(repo, capsys):
    add(repo, "runner", "Inspect with `npx @modelcontextprotocol/inspector` or run `uvx ruff@0.6.9 check`.\n\n"
        "```bash\nnpx -y create-thing my-app\nnpx prettier@3.3.3 --check .\nuvx --from 'black==24.8.0' black .\n"
        "pipx run cowsay hi\n```\n\n```python\nsubprocess.run(['npx', 'left-alone'])\n```\n\n"
        "In prose, npx something is not a command.\n")
    got = sorted((f["line"], f["column"], f["id"].rsplit(":", 1)[1]) for f in hygiene(repo, capsys))
    assert got == [(8, 15, "@modelcontextprotocol/inspector"), (11, 1, "create-thing"), (14, 1, "cowsay")]


def test_hygiene_findings_are_suppressible(repo, capsys):
    add(repo, "claude-notes")
    (repo / "skill-eval.toml").write_text(CONFIG + '[checks]\n[[checks.ignore]]\nid = "name-reserved:skills/claude-notes/*"\n'
                                          'reason = "installed through Claude Code only"\n')
    assert hygiene(repo, capsys) == []
    assert main(["check-skills", "--root", str(repo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["suppressed"][0]["rule"] == "name-reserved"


def test_every_hygiene_rule_has_an_explain_page(capsys):
    for rule in HYGIENE:
        assert main(["explain", rule]) == 0
        assert f"ignore[{rule}]" in capsys.readouterr().out
