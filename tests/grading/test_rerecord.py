"""Stale evidence deferred while it is re-recorded (issue 11): reviewed, digest-bound, expiring."""

import datetime as dt

import yaml
from test_freshness import make_meta, write_bundle

from skill_eval.cli import main
from skill_eval.content import config, freshness
from skill_eval.grading import rerecord


def _stale_alpha(mini_repo):
    cfg = config.load(mini_repo)
    write_bundle(mini_repo, make_meta(cfg))
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text() + "One more sentence.\n")
    return p


def _entries(mini_repo):
    return yaml.safe_load((mini_repo / "evals" / rerecord.FILE).read_text())["rerecord"]


def test_defer_keeps_merge_green_and_lists_pending(mini_repo, capsys):
    _stale_alpha(mini_repo)
    assert main(["freshness", "--root", str(mini_repo)]) == 1
    assert main(["freshness", "--root", str(mini_repo), "--defer", "wording fix, re-recording now"]) == 0
    [e] = _entries(mini_repo)
    assert e["key"] == "skill:alpha" and e["reason"] == "wording fix, re-recording now"
    assert e["digest"] == freshness.current(config.load(mini_repo)).digest("skill:alpha")
    capsys.readouterr()
    assert main(["freshness", "--root", str(mini_repo)]) == 0
    out = capsys.readouterr().out
    assert "PENDING re-record skill:alpha: 1 stale bundle(s) excused until" in out


def test_a_further_edit_is_not_covered(mini_repo, capsys):
    p = _stale_alpha(mini_repo)
    assert main(["freshness", "--root", str(mini_repo), "--defer", "wording fix, re-recording now"]) == 0
    p.write_text(p.read_text() + "And a riskier change.\n")
    capsys.readouterr()
    assert main(["freshness", "--root", str(mini_repo)]) == 1
    out = capsys.readouterr().out
    assert "skill:alpha: written for digest" in out and "the content moved again" in out
    assert "alpha: 1 bundle stale" in out


def test_expired_or_unused_entries_fail(mini_repo, capsys):
    _stale_alpha(mini_repo)
    assert main(["freshness", "--root", str(mini_repo), "--defer", "wording fix, re-recording now"]) == 0
    path = mini_repo / "evals" / rerecord.FILE
    doc = yaml.safe_load(path.read_text())
    doc["rerecord"][0]["expires"] = "2020-01-01"
    path.write_text(yaml.safe_dump(doc))
    capsys.readouterr()
    assert main(["freshness", "--root", str(mini_repo)]) == 1
    assert "expired on 2020-01-01" in capsys.readouterr().out
    # once re-recorded (here: the bundle removed), an entry that excuses nothing must go
    doc["rerecord"][0]["expires"] = (dt.date.today() + dt.timedelta(days=3)).isoformat()
    path.write_text(yaml.safe_dump(doc))
    import shutil

    shutil.rmtree(mini_repo / "evals/evidence")
    assert main(["freshness", "--root", str(mini_repo)]) == 1
    assert "excuses no stale bundle" in capsys.readouterr().out


def test_release_stage_accepts_no_deferral(mini_repo):
    _stale_alpha(mini_repo)
    cfg = config.load(mini_repo)
    cur = freshness.current(cfg)
    meta = make_meta(config.load(mini_repo))
    meta["digests"]["skill:alpha"] = "0" * 64
    body = rerecord.entries_for(cfg, [meta], cur, "wording fix, re-recording now", 10)
    (mini_repo / "evals" / rerecord.FILE).write_text(yaml.safe_dump(body))
    merge = rerecord.Deferrals(cfg, cur, "merge")
    problems = freshness.check_bundle_freshness(cfg, meta, cur)
    assert merge.excuses(meta, problems) and merge.problems() == []
    release = rerecord.Deferrals(cfg, cur, "release")
    assert not release.excuses(meta, problems)
    assert "not accepted in the release stage" in release.problems()[0]


def test_only_moved_digests_are_excused(mini_repo):
    cfg = config.load(mini_repo)
    cur = freshness.current(cfg)
    meta = make_meta(cfg)
    meta["digests"]["skill:alpha"] = "0" * 64
    del meta["digests"]["harness"]  # a missing digest is never excused
    body = rerecord.entries_for(cfg, [meta], cur, "wording fix, re-recording now", 10)
    (mini_repo / "evals" / rerecord.FILE).write_text(yaml.safe_dump(body))
    d = rerecord.Deferrals(cfg, cur)
    assert not d.excuses(meta, freshness.check_bundle_freshness(cfg, meta, cur))
    assert body["rerecord"][0]["expires"] <= (dt.date.today() + dt.timedelta(days=rerecord.MAX_DAYS)).isoformat()
