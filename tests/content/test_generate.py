from skill_eval.content import config, generate
from skill_eval.content.skills import citation_graph, discover


def test_citations_are_transitive(mini_repo):
    cfg = config.load(mini_repo)
    skills = discover(cfg)
    assert skills["alpha"].cites == ["skills-src/shared/a.md", "skills-src/shared/b.md"]
    assert skills["beta"].cites == []
    assert citation_graph(cfg, skills) == {"skills-src/shared/a.md": ["alpha"], "skills-src/shared/b.md": ["alpha"]}


def test_published_tree_copies_and_rewrites(mini_repo):
    pub = mini_repo / ".claude/skills/alpha"
    assert (pub / "references/shared/a.md").read_text() == "Contract. See [b](./b.md).\n"
    assert (pub / "references/shared/b.md").is_file()
    assert "[the contract](references/shared/a.md)" in (pub / "SKILL.md").read_text()
    assert not (mini_repo / ".claude/skills/beta/references").exists()
    assert (mini_repo / ".agents/skills/alpha/SKILL.md").read_bytes() == (pub / "SKILL.md").read_bytes()


def test_links_inside_code_blocks_are_not_rewritten(mini_repo):
    src = mini_repo / "skills-src/alpha/SKILL.md"
    src.write_text(src.read_text() + "\n```md\n[x](../shared/a.md)\n```\n")
    cfg = config.load(mini_repo)
    generate.write_published(cfg)
    assert "[x](../shared/a.md)" in (mini_repo / ".claude/skills/alpha/SKILL.md").read_text()


def test_drift_detected_and_repaired(mini_repo):
    cfg = config.load(mini_repo)
    assert generate.drift(cfg) == []
    (mini_repo / ".agents/skills/beta/SKILL.md").write_text("hand edit\n")
    (mini_repo / ".claude/skills/stray.md").write_text("x")
    problems = generate.drift(cfg)
    assert any(".agents/skills/beta/SKILL.md: differs" in p for p in problems)
    assert any(".claude/skills/stray.md: not produced" in p for p in problems)
    generate.write_published(cfg)
    assert generate.drift(cfg) == []
    assert not any(p.name.startswith(".") for p in (mini_repo / ".claude").iterdir() if p.name != "skills")
