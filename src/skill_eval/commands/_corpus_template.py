"""The trigger corpus `init` drafts: a commented template with prompts per skill for the user to replace.

Every drafted prompt carries `draft: true`, so L1s does not count it (content.evals skips drafts, and
`pr` reports L1s as not applicable while only drafts remain). The prompts are placeholders, never
derived from the descriptions: a corpus written from the descriptions measures nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from skill_eval.content.skills import NOT_SKILL_DIRS, SKILL_FILE, decode_markdown, split_frontmatter
from skill_eval.core.errors import SkillEvalError

HEADER = """\
# Labelled trigger prompts for the L1s check (`skill-eval check-triggers`), drafted by `skill-eval init`.
# Format: `skill-eval explain corpus` (schema: trigger_corpus.schema.json in the skill-eval package).
#
# Each prompt below is a DRAFT (`draft: true`): L1s does not count it. For each one, write the request
# as a user of the skill would type it — their task in their words, not the skill's description —
# then delete its `draft: true` line. Give every skill two or three such prompts, and keep several
# negatives (expected_skill: null): requests no skill should claim. Delete drafts you do not need.
# Until one prompt is edited, `skill-eval pr` reports L1s as not applicable.
schema_version: 1
prompts:
"""


def _description(skill_md: Path) -> str:
    try:
        fm, _ = split_frontmatter(decode_markdown(skill_md.read_bytes(), skill_md)[0], skill_md)
    except (SkillEvalError, OSError):
        return ""
    desc = fm.get("description")
    return " ".join(desc.split())[:110] if isinstance(desc, str) else ""


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "skill"


def _unique(wanted: str, used: set[str]) -> str:
    """`wanted`, or `wanted-2`, `-3`, ... : a drafted id is unique whatever the skill names slug to."""
    out, n = wanted, 1
    while out in used:
        n += 1
        out = f"{wanted}-{n}"
    used.add(out)
    return out


def render(root: Path, sources: list[str]) -> str:
    """The template for every skill folder under the adopted sources (a skill name in two sources is
    drafted once: the corpus names skills, and L1s refuses duplicate prompt ids)."""
    out = [HEADER]
    seen: set[str] = set()
    used: set[str] = {"draft-negative-1", "draft-negative-2"}
    for src in sources:
        base = root / src
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if not (child / SKILL_FILE).is_file() or child.name in NOT_SKILL_DIRS or child.name.startswith((".", "_")):
                continue
            if child.name in seen:
                continue
            seen.add(child.name)
            desc = _description(child / SKILL_FILE)
            out.append(f"  # {child.name}" + (f" — its description begins: {desc}" if desc else "") + "\n")
            for n in (1, 2):
                out.append(f"  - id: {_unique(f'draft-{_slug(child.name)}-{n}', used)}\n"
                           f"    prompt: {json.dumps(f'DRAFT: replace with a request a user would type that needs {child.name}')}\n"
                           f"    expected_skill: {json.dumps(child.name)}\n"
                           "    draft: true\n")
    out.append("  # negatives: requests no skill should claim (rewrite them for your users' neighbouring tasks)\n")
    for n, text in enumerate(("DRAFT: replace with a nearby request none of these skills should handle",
                              "DRAFT: replace with an everyday request unrelated to these skills"), start=1):
        out.append(f"  - id: draft-negative-{n}\n    prompt: {json.dumps(text)}\n    expected_skill: null\n    draft: true\n")
    return "".join(out)
