"""A named path is a finding only when it is a real pointer, never a prose example (issue 27)."""

import pytest

from skill_eval.checks import pointers


def _classify(text: str, path: str) -> bool:
    lines = pointers.lines_of(text)
    for i, info in enumerate(lines):
        col = info.text.find(path)
        if col >= 0:
            return pointers.is_pointer(lines, i, col, path)
    raise AssertionError(f"{path} not in text")


@pytest.mark.parametrize("text,path", [
    ("- **Multi-step processes**: See references/workflows.md for sequential workflows", "references/workflows.md"),
    ("Run `python scripts/fill.py input.pdf` to fill the form.", "scripts/fill.py"),
    ("`python scripts/check_fillable_fields <file.pdf>`, and depending on the result go on.", "scripts/check_fillable_fields"),
    ("Read references/api.md before calling the API.", "references/api.md"),
    ("```bash\npython3 scripts/build.py --out dist\n```", "scripts/build.py"),
    ("```bash\nscripts/deploy.sh staging\n```", "scripts/deploy.sh"),
    ("```\n./scripts/deploy.sh staging\n```", "scripts/deploy.sh"),
    ("If they agree to the companion, read the detailed guide before proceeding:\n`skills/b/visual.md`", "skills/b/visual.md"),
    ("For the schema details, consult `references/schema.md`.", "references/schema.md"),
    ("Run scripts/deploy to ship.", "scripts/deploy"),  # a verb that runs it: an extensionless pair is still a pointer
    ("See references/examples/ for more.", "references/examples/"),  # a folder, written as one
])
def test_pointers(text, path):
    assert _classify(text, path) is True


@pytest.mark.parametrize("text,path", [
    ("- **Example**: `scripts/rotate_pdf.py` for PDF rotation tasks", "scripts/rotate_pdf.py"),
    ("2. A `scripts/rotate_pdf.py` script would be helpful to store in the skill", "scripts/rotate_pdf.py"),
    ("converting a raw curl/httpx script from an API key is a header change", "curl/httpx"),
    ("- Better scripts/tools that produced better output?", "scripts/tools"),
    ("Link sources and add a references/citations section.", "references/citations"),
    ("* ✓ **Good**: `scripts/helper.py`, `reference/guide.md`", "scripts/helper.py"),
    ("````markdown\n## Utility\n\n```bash\npython scripts/analyze_form.py input.pdf\n```\n````", "scripts/analyze_form.py"),
    ("````markdown\nRun: `python scripts/verify.py out.pdf`\n````", "scripts/verify.py"),
    ("```\nmy-skill/\n├── scripts/\n│   └── scripts/run.py\n```", "scripts/run.py"),
    ("Run `python scripts/build.py` in your project.", "scripts/build.py"),
    ("`scripts/helper.py`", "scripts/helper.py"),  # alone, with no instruction before it
    ("The layout:\n`scripts/helper.py`", "scripts/helper.py"),  # after a ':' line that instructs nothing
    # found adopting getsentry/skills and UiPath/skills: "e.g.," ends in a dot; a bare word pair read by a verb
    ("- **Custom scripts** - Never include project scripts with side effects (e.g., `./scripts/deploy.sh`)",
     "scripts/deploy.sh"),
    ("Reading or writing files, starting processes, fetching assets/queue items, or AI chat", "assets/queue"),
    # issue 36 (anthropics/claude-plugins-official plugin-dev): two things a verb reads, not a path
    ("- Loads references/examples when needed", "references/examples"),
])
def test_examples_are_not_pointers(text, path):
    assert _classify(text, path) is False


def test_fences_nest_by_length():
    lines = pointers.lines_of("````markdown\n```bash\nx\n```\ny\n````\nprose\n")
    assert [ln.fence for ln in lines] == ["markdown"] * 6 + [None, None]
