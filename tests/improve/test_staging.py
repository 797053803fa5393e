"""improve.propose staging and improve.cases: what the agent is given, and what it is never shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import write

from skill_eval.content import config
from skill_eval.core.errors import ConfigError, InputError
from skill_eval.improve import cases, propose


def test_stage_copies_the_skill_sources_and_protects_the_rest(mini_repo):
    cfg = config.load(mini_repo)
    staged = propose.stage(cfg)
    assert staged.sources == ["skills-src"]
    assert set(staged.files) == {"skills-src/alpha/SKILL.md", "skills-src/alpha/references/details.md",
                                 "skills-src/beta/SKILL.md", "skills-src/shared/a.md", "skills-src/shared/b.md"}
    assert {"evals", ".agents/skills", ".claude/skills", "skill-eval.toml"} <= set(staged.protected)
    assert propose.stage(cfg).digest == staged.digest  # the base a proposal names is stable


def test_a_protected_folder_inside_a_source_is_left_out_of_the_copy(mini_repo):
    text = (mini_repo / "skill-eval.toml").read_text().replace(
        'published = [".agents/skills", ".claude/skills"]', 'published = ["skills-src/dist"]')
    (mini_repo / "skill-eval.toml").write_text(text)
    write(mini_repo, "skills-src/dist/alpha/SKILL.md", "published copy\n")
    staged = propose.stage(config.load(mini_repo))
    assert "skills-src/dist" in staged.protected
    assert not any(p.startswith("skills-src/dist/") for p in staged.files)


def test_a_symlink_in_the_sources_is_refused_at_staging(mini_repo):
    os.symlink("/etc/passwd", mini_repo / "skills-src/beta/leak.md")
    with pytest.raises(InputError, match="symlink"):
        propose.stage(config.load(mini_repo))


@pytest.mark.parametrize("out,ok", [("build/propose", True), ("skills-src/x", False), ("evals/p", False),
                                    (".agents/skills/p", False), (".", False)])
def test_out_dir_is_never_inside_what_the_proposal_is_diffed_against(mini_repo, out, ok):
    cfg = config.load(mini_repo)
    staged = propose.stage(cfg)
    if ok:
        assert propose.check_out_dir(cfg, mini_repo / out, staged) == Path(out)
    else:
        with pytest.raises(ConfigError, match="--out"):
            propose.check_out_dir(cfg, mini_repo / out, staged)
    assert propose.check_out_dir(cfg, mini_repo.parent / "elsewhere", staged) is None


def test_the_prompt_shows_each_case_and_the_sources(mini_repo):
    cfg = config.load(mini_repo)
    found = cases.named(cfg, ["p-beta", "beta-unsure"])
    text = propose.build_prompt(found, ["skills-src"])
    assert "skills-src/" in text and "{context_file}" in text  # filled in with the agent's path at launch
    assert '"which gadget consumers are affected?"' in text and "the beta skill activates" in text
    assert "verdict none, uncertainty not_comparable" in text  # a category B scenario states its outcome


def test_a_category_a_scenario_never_shows_its_ground_truth_verdict(mini_repo):
    (case,) = cases.named(config.load(mini_repo), ["alpha-break"])
    assert "BROKEN" not in repr(case.as_json()) and "ground truth" in case.expected
    assert case.rerun == ("skill-eval run alpha-break", "skill-eval evidence")
