"""The config and content additions the scorecard reads: [stats], [prices], holdout, empty evidence."""

from __future__ import annotations

import pytest

from skill_eval import cli
from skill_eval.content import config, evals
from skill_eval.core import schemas
from skill_eval.core.errors import ConfigError, InputError, SkillEvalError
from skill_eval.reporting import scorecard as sc
from skill_eval.reporting.scorecard import html


def add(root, text):
    path = root / "skill-eval.toml"
    path.write_text(path.read_text() + "\n" + text)


def test_stats_and_prices_tables_load_with_defaults(mini_repo):
    cfg = config.load(mini_repo)
    assert (cfg.stats.bootstrap_samples, cfg.stats.min_paired_scenarios, cfg.stats.confidence) == (2000, 6, 0.95)
    assert cfg.stats.max_infra_error_rate == 0.25 and cfg.prices == {}
    add(mini_repo, "[stats]\nbootstrap_samples = 500\nmin_paired_scenarios = 8\nseed = 3\nconfidence = 0.9\n"
                   '[prices."m-1"]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n')
    cfg = config.load(mini_repo)
    assert (cfg.stats.bootstrap_samples, cfg.stats.min_paired_scenarios, cfg.stats.seed, cfg.stats.confidence) == (500, 8, 3, 0.9)
    assert cfg.prices["m-1"].output_per_mtok == 15.0


@pytest.mark.parametrize("bad", [
    "[stats]\nconfidence = 1.5\n",
    "[stats]\nmin_paired_scenarios = 1\n",
    "[stats]\nbootstrap_samples = 10\n",
    "[stats]\nmax_infra_error_rate = 2\n",
    "[stats]\nalpha = 0.05\n",
    '[prices."m"]\ninput_per_mtok = 3.0\n',
    '[prices."m"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n',
])
def test_bad_stats_or_prices_are_config_errors(mini_repo, bad):
    add(mini_repo, bad)
    with pytest.raises((ConfigError, InputError)):
        config.load(mini_repo)


def test_holdout_mark_loads_and_is_validated(mini_repo):
    path = mini_repo / "evals/scenarios.yaml"
    text = path.read_text()
    path.write_text(text.replace("fixture: case-two, invocation_class: single-pair, probe: evidence-free}",
                                 "fixture: case-two, invocation_class: single-pair, probe: evidence-free, holdout: true}"))
    cfg = config.load(mini_repo)
    held = {s.id: s.holdout for s in evals.load_scenarios(cfg)}
    assert held == {"alpha-break": False, "alpha-same": True, "beta-unsure": False}
    path.write_text(text.replace("probe: evidence-free}", 'probe: evidence-free, holdout: "yes"}'))
    with pytest.raises(SkillEvalError):
        evals.load_scenarios(config.load(mini_repo))


def test_no_evidence_yet_gives_an_empty_but_valid_scorecard(mini_repo, tmp_path):
    card = sc.compute(config.load(mini_repo)).card
    schemas.validate(card, "scorecard", "scorecard.json")
    assert card["cells"] == [] and card["bundles"] == 0 and card["scripted"] is False
    page = html.render(card)
    for chart in ("lift", "activation", "dimensions", "passk", "cost", "aa"):
        assert f'data-chart="{chart}"' in page
    assert "scripted-banner" not in page


def test_a_missing_evidence_directory_named_on_the_command_line_is_a_usage_error(mini_repo, tmp_path, capsys):
    rc = cli.main(["scorecard", "--root", str(mini_repo), "--evidence", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert rc == 2 and "nope" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
