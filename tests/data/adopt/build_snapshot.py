"""Build a reduced snapshot of a public skills repository (test fixture) from a bare git mirror.

    python tests/data/adopt/build_snapshot.py <bare git dir> tests/data/adopt/<owner>__<name> [<commit> [<prefix> [<also>]]]

Without a commit: the first three snapshots' layout (everything under skills/ and template/, root plugin
manifests) at HEAD. With one: every skill folder (a folder holding SKILL.md, under <prefix> if given), every
plugin manifest (.claude-plugin/, .codex-plugin/, .cursor-plugin/, plugin.json, gemini-extension.json), the
root LICENSE and README.md (reduced, its install lines kept) at that commit; <also>: comma-separated folders
outside the skills that their links point into (Markdown reduced, other files stubbed).
"""
import re
import subprocess
import sys
from pathlib import Path

git_dir, out = sys.argv[1], Path(sys.argv[2])
REV = sys.argv[3] if len(sys.argv) > 3 else "HEAD"
PREFIX = sys.argv[4] if len(sys.argv) > 4 else ""
ALSO = tuple(p for p in (sys.argv[5] if len(sys.argv) > 5 else "").split(",") if p)  # folders links point into
MANIFEST_DIRS = (".claude-plugin/", ".codex-plugin/", ".cursor-plugin/")
KEEP_TOP = ("skills/", "template/", *MANIFEST_DIRS)
STUB = b"(stub: file content omitted from the test snapshot; only its path matters)\n"
names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", REV], capture_output=True, text=True,
                       check=True).stdout.splitlines()
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


SKILL_DIRS = sorted({n[:-len("SKILL.md")] for n in names if n.endswith("/SKILL.md") and n.startswith(PREFIX)},
                    key=len, reverse=True)


def skill_dir_of(name: str) -> str | None:
    return next((d for d in SKILL_DIRS if name.startswith(d)), None)


def is_manifest(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return any(f"/{d}" in f"/{name}" for d in MANIFEST_DIRS) or base in ("plugin.json", "gemini-extension.json")


def keep(name: str) -> bool:
    if REV == "HEAD":
        return name.startswith(KEEP_TOP)
    return (skill_dir_of(name) is not None or is_manifest(name) or name in ("LICENSE", "README.md")
            or (bool(ALSO) and name.startswith(ALSO)))


def tops_of(name: str) -> list[str]:
    if REV != "HEAD":
        skill = skill_dir_of(name) or ""
        has = {n[len(skill):].split("/", 1)[0] for n in names if n.startswith(skill) and "/" in n[len(skill):]}
        return sorted(has | {"scripts", "references", "assets", "skills"})
    parts = name.split("/")
    if parts[0] != "skills":
        return ["scripts", "references", "assets", "skills"]
    i = 2 if parts[1].startswith(".") else 1  # openai: skills/.curated/<skill>
    skill = "/".join(parts[:i + 1]) + "/"
    has = {n[len(skill):].split("/", 1)[0] for n in names if n.startswith(skill) and "/" in n[len(skill):]}
    return sorted(has | {"scripts", "references", "assets", "skills"})


def reduce_md(text: str, tops: list[str], install: bool = False) -> str:
    mention = re.compile(r"(?<![\w/.$~@:%-])(?:\./)?(?:" + "|".join(map(re.escape, tops)) + r")/")
    fm = ""
    m = re.match(r"\A(---[ \t]*\r?\n.*?^---[ \t]*\r?\n)", text, re.S | re.M)
    if m:
        fm, text = m.group(1), text[m.end():]
    lines = text.split("\n")
    keep = []
    for i, line in enumerate(lines):
        bare = re.sub(r"\S+://\S*", "", line)
        if FENCE.match(line) or mention.search(bare) or (install and re.search(r"(?i)install|skills add", line)) or re.search(r"\]\((?![a-z]+:|#)", line) or "<!--" in line \
                or re.match(r"^\s{0,3}\[[^\]]+\]:", line) or re.search(r"\b(?:href|src)\s*=", line):
            prev = next((j for j in range(i - 1, -1, -1) if lines[j].strip()), None)
            if prev is not None and lines[prev].rstrip().endswith(":") and (not keep or keep[-1] != prev):
                keep.append(prev)
            keep.append(i)
    kept = [lines[i] for i in sorted(set(keep))]
    out, open_at = [], None  # drop code blocks left empty by the reduction (structure unchanged)
    for line in kept:
        m = FENCE.match(line)
        if open_at is None:
            if m:
                open_at = (len(out), m.group(1))
            out.append(line)
            continue
        if m and set(line.strip()) == {open_at[1][0]} and len(line.strip()) >= len(open_at[1]):
            if open_at[0] == len(out) - 1:
                out.pop()
            else:
                out.append(line)
            open_at = None
            continue
        out.append(line)
    body = "\n".join(out)
    return fm + "\n(reduced test snapshot: only the lines naming paths or links, and code fences, are kept)\n\n" + body + "\n"


for name in names:
    if not keep(name):
        continue
    data = subprocess.run(["git", "--git-dir", git_dir, "show", f"{REV}:{name}"], capture_output=True, check=True).stdout
    dest = out / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    if name == "LICENSE":
        dest.write_bytes(data)
    elif name.endswith(".md"):
        dest.write_text(reduce_md(data.decode("utf-8"), tops_of(name), name == "README.md"), encoding="utf-8")
    elif (REV == "HEAD" and name.startswith(MANIFEST_DIRS) and len(data) < 4096) or (REV != "HEAD" and is_manifest(name)):
        dest.write_bytes(data)
    else:  # a stub that is still valid in its language (linters walk test data too)
        ext = Path(name).suffix.lower()
        if ext in (".json",):
            dest.write_bytes(b"{}\n")
        elif ext in (".py", ".sh", ".rb", ".pl", ".yaml", ".yml", ".toml", ".r"):
            dest.write_bytes(b"# " + STUB)
        elif ext in (".js", ".ts", ".mjs", ".cjs", ".java", ".go", ".cs", ".php", ".c", ".h", ".css", ".kt", ".swift"):
            dest.write_bytes(b"// " + STUB)
        else:
            dest.write_bytes(STUB)
