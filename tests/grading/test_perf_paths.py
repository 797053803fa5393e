"""The fast paths of issue 8 agree with the careful code they bypass.

Each fast path (libyaml events under the strict composer, the strict-JSON text pre-check, the
bundle file reader, the one-walk evidence scan, the one-read local-paths step) must give the
same values and the same error messages as the code it replaces; these tests hold them to it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
import yaml

from skill_eval.commands import local_paths
from skill_eval.core import fsio, strict
from skill_eval.core.errors import SkillEvalError
from skill_eval.grading import bundle
from skill_eval.harness.runner.normalize import check_evidence

ROOT = Path(__file__).resolve().parents[2]


def _loads_outcome(text: str) -> tuple[str, object]:
    """strict.loads_json's answer or its refusal's words: what a fast path must reproduce."""
    try:
        return ("ok", strict.loads_json(text, "f.json"))
    except SkillEvalError as exc:
        return ("err", str(exc))


def _yaml_files() -> list[Path]:
    return sorted(p for pattern in ("*.yaml", "*.yml") for p in ROOT.rglob(pattern)
                  if ".nox" not in p.parts and ".venv" not in p.parts)


@pytest.mark.skipif(strict._CStrictLoader is None, reason="PyYAML without libyaml")
def test_libyaml_loader_never_accepts_differently():
    """On every YAML file of the repository (bad-input corpus included) the C-event loader either
    gives the pure-Python loader's exact value or refuses (then loads_yaml asks the pure one)."""
    files = _yaml_files()
    assert len(files) > 50
    for path in files:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        try:
            fast = list(yaml.load_all(text, Loader=strict._CStrictLoader))  # noqa: S506
        except Exception:  # noqa: BLE001 - a refusal is always re-worded by the pure loader
            continue
        assert fast == list(yaml.load_all(text, Loader=strict._StrictLoader)), path  # noqa: S506


@pytest.mark.parametrize("text", [
    "a: 1\nb: [1, 2, {c: d}]\n",
    "a: &x 1\nb: *x\n",  # aliases refused
    "a: 1\na: 2\n",  # duplicate key
    "a: !!binary aGk=\n",
    "a: 2020-02-31\n",
    "a: 1\n---\nb: 2\n",
    "a: [1, 2\n",
    "a: " + "[" * 70 + "]" * 70 + "\n",
    "x: \"\\ud800\"\n",
    "k: 1234567890123456789012345678901234567890\n",
])
def test_loads_yaml_same_value_or_message_as_pure_python(monkeypatch, text):
    def outcome():
        strict._YAML_MEMO.clear()
        try:
            return ("ok", strict.loads_yaml(text, "f.yaml"))
        except SkillEvalError as exc:
            return ("err", str(exc))

    fast = outcome()
    monkeypatch.setattr(strict, "_CStrictLoader", None)
    assert fast == outcome()
    assert outcome() == fast  # a memo hit is indistinguishable from a parse


def test_yaml_memo_returns_private_copies():
    strict._YAML_MEMO.clear()
    first = strict.loads_yaml("a: {b: [1]}\n", "f.yaml")
    first["a"]["b"].append(2)
    assert strict.loads_yaml("a: {b: [1]}\n", "f.yaml") == {"a": {"b": [1]}}


@pytest.mark.parametrize("text", [
    '{"a": "\\ud800"}', '{"a": "\\uD83D\\uDE00"}', '{"a": "\\u00e9"}', '{"\\udc00": 1}',
    "[" * 63 + "]" * 63, "[" * 64 + "]" * 64, "[" * 65 + "]" * 65,
    '{"a": [' + ", ".join(["{}"] * 80) + "]}",
    '{"a": 1e400}', '{"a": NaN}', '{"a": 1234567890123456789012345678901}',
])
def test_loads_json_precheck_keeps_every_refusal(monkeypatch, text):
    outcome = functools.partial(_loads_outcome, text)
    fast = outcome()
    monkeypatch.setattr(strict, "_plainly_within_limits", lambda text, value, encodable: False)
    assert fast == outcome()


_JSON_CASES = [
    '{"a": 1}', '{"a": 1}\n', '{"a": 1}  \r\n\t', ' {"a": 1}', '\n[1]', "[1] x", "[1]]", "1 2", "", " ", "x",
    '{"a": 1, "a": 2}', '{"b": {"c": 1, "c": 1}}', '[{"k": 1}, {"k": 2, "k": 3}]', '{"a": NaN}', '[Infinity]',
    '[-Infinity]', '{"a": 1e400}', '[-1e400]', '{"a": 1234567890123456789012345678901}', '[-' + "9" * 31 + "]",
    '["' + "9" * 40 + '"]', "[" * 63 + "]" * 63, "[" * 70 + "]" * 70, "[" * 3000 + "]" * 3000, '{"a": [1, 2,]}',
    '{"a" 1}', '{"a": "\\ud800"}', '"x"', "true", "null", "1.5", "-0", '{"a": "\x01"}', '{"a": 1}\x00',
    "\ufeff{}", '{"é": "ü", "k": [true, false, null, 1.25e-3]}', '{"a": 1}\n{"b": 2}',
]


@pytest.mark.parametrize("text", _JSON_CASES)
def test_shared_decoders_match_json_loads_with_fresh_hooks(monkeypatch, text):
    """loads_json's shared decoders (built once, C scanner called directly, a duplicate key signalled
    without a source) give what json.loads with per-document hooks gave: the same value or the same
    refusal, worded the same."""
    outcome = functools.partial(_loads_outcome, text)
    fast = outcome()
    monkeypatch.setattr(strict, "_decode", lambda t, decoder: strict._careful_parse(t))
    assert fast == outcome()


@pytest.mark.parametrize("text", _JSON_CASES)
@pytest.mark.parametrize("which", [0, 1])
def test_direct_scan_raises_what_decode_raises(text, which):
    """`_decode` (scan_once in the common case) against the decoder's own `decode`: same value, or the
    same exception type, message and position."""
    import json

    decoder = strict._DECODERS[which]

    def outcome(parse):
        try:
            return ("ok", parse(text))
        except json.JSONDecodeError as exc:
            return ("err", "JSONDecodeError", exc.msg, exc.pos)
        except Exception as exc:  # noqa: BLE001 - compared, never swallowed silently
            return ("err", type(exc).__name__, str(exc))

    assert outcome(lambda t: strict._decode(t, decoder)) == outcome(decoder.decode)


@pytest.mark.parametrize("text", [
    "", "1" * 30, "1" * 31, "x" + "1" * 31 + "x", "1" * 30 + "a" + "1" * 30, "\u0661" * 40, "\u0661" + "1" * 31,
    "١" * 31, "é" * 10 + "9" * 31, "\ud800" + "9" * 31, "\ud800" + "9" * 3, '{"a": ' + "9" * 31 + "}",
    '{"a": "' + "9" * 40 + '"}', "12345678901234567890123456789012",
])
def test_digit_run_precheck_finds_every_long_ascii_run(text):
    """The translate-based precheck sees every run of more than MAX_INT_DIGITS ASCII digits (the only
    digits a JSON integer has); it may answer True for more (then the integer hook decides, as before)."""
    import re

    ascii_run = re.search(r"[0-9]{31}", text) is not None
    got = strict._long_digit_run(strict._utf8(text))
    assert got >= ascii_run
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return
    assert got == ascii_run


@pytest.mark.parametrize("text", [
    '{"a": ' + "9" * 31 + "}", '{"a": -' + "9" * 31 + "}", '{"a": ' + "9" * 30 + "}", '{"a": "' + "9" * 40 + '"}',
    '{"a": "' + "\u0661" * 40 + '", "b": 1}', '["' + "١" * 35 + '", 12]', '[1.' + "9" * 40 + "]",
    '[' + "9" * 31 + "e1]",
])
def test_long_integers_refused_as_with_the_regex_precheck(monkeypatch, text):
    outcome = functools.partial(_loads_outcome, text)
    fast = outcome()
    monkeypatch.setattr(strict, "_long_digit_run", lambda data: data is None or strict._LONG_DIGITS.search(data.decode()) is not None)
    assert fast == outcome()


def test_bundle_fast_read_matches_careful_path(tmp_path, monkeypatch):
    root = tmp_path / "b"
    (root / "captured" / "1.out.d").mkdir(parents=True)
    (root / "meta.json").write_text("{}")
    (root / "empty").write_bytes(b"")
    (root / "captured" / "1.out.d" / "r.json").write_text("[1]")
    (root / "big").write_bytes(b"x" * 100)
    os.symlink("meta.json", root / "link")
    os.symlink("captured", root / "dirlink")
    os.mkfifo(root / "fifo")
    (root / "usage.json").mkdir()  # a bundle file's name that is not a file
    os.symlink("meta.json", root / "claim.json")  # ... a symlink
    os.mkfifo(root / "final.md")  # ... a FIFO
    (root / "prompt.txt").write_bytes(b"y" * 51)  # ... over the cap
    names = ["meta.json", "empty", "captured/1.out.d/r.json", "big", "link", "dirlink/1.out.d/r.json", "fifo",
             "captured", "nope", "nodir/x", "./meta.json", "a/../meta.json", "/etc/passwd", "x\\y", "",
             "usage.json", "claim.json", "final.md", "prompt.txt", "facts.json", "judgments.json", "events.jsonl"]

    def outcome(name):
        try:
            return ("ok", bundle.Bundle(root=root, max_bytes=50).read_bytes(name))
        except SkillEvalError as exc:
            return ("err", str(exc))

    fast = [outcome(n) for n in names]
    monkeypatch.setattr(bundle, "_fast_read", lambda *a: None)
    assert fast == [outcome(n) for n in names]


def test_bundle_linkfree_read_matches_careful_path(tmp_path, monkeypatch):
    """Bundle.linkfree (the pass walked the bundle and met no symlink): nested reads skip the lstat of
    their directories, with the careful path's answers: missing directories, a file where a directory
    should be, traversal, FIFOs, oversized files."""
    root = tmp_path / "b"
    (root / "captured" / "1.out.d" / "0").mkdir(parents=True)
    (root / "meta.json").write_text("{}")
    (root / "captured" / "1.out.d" / "0" / "r.json").write_text("[1]")
    (root / "captured" / "1.out.d" / "big").write_bytes(b"x" * 100)
    (root / "captured" / "1.out").write_bytes(b"out")
    os.mkfifo(root / "captured" / "fifo")
    names = ["meta.json", "captured/1.out.d/0/r.json", "captured/1.out", "captured/1.out/x", "captured/1.out.d/big",
             "captured/fifo", "captured/nope/x", "nodir/x/y", "captured/1.out.d", "captured/../meta.json",
             "captured//1.out", "/etc/passwd", "captured/1.out.d/0/missing.json"]
    assert fsio.scan_below(tmp_path.resolve(), str(root), "meta.json", links := []) == [str(root / "meta.json")]
    assert links == []

    def outcome(name, linkfree):
        try:
            return ("ok", bundle.Bundle(root=root, max_bytes=50, linkfree=linkfree).read_bytes(name))
        except SkillEvalError as exc:
            return ("err", str(exc))

    quick = [outcome(n, True) for n in names]
    assert quick == [outcome(n, False) for n in names]
    monkeypatch.setattr(bundle, "_fast_read", lambda *a: None)
    assert quick == [outcome(n, True) for n in names]
    os.symlink("0", root / "captured" / "1.out.d" / "lnk")
    assert fsio.scan_below(tmp_path.resolve(), str(root), "meta.json", links := []) and links == [str(root / "captured" / "1.out.d" / "lnk")]


def test_scan_tree_lists_like_rglob_and_refuses_escaping_links(tmp_path):
    tree = tmp_path / "ev"
    for rel in ("a/1/meta.json", "a/2/x/meta.json", "b/meta.json", "c/notmeta.json"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("{}")
    os.symlink("../b", tree / "a" / "lnk")  # a link inside the repository: listed like rglob would, not entered
    top, found = fsio.scan_tree(tmp_path, "ev", "meta.json")
    assert top == tree
    assert sorted(found) == sorted(str(p) for p in tree.rglob("meta.json"))
    os.symlink("/etc", tree / "b" / "out")
    with pytest.raises(SkillEvalError, match="outside the repository"):
        fsio.scan_tree(tmp_path, "ev", "meta.json")
    with pytest.raises(SkillEvalError, match="outside the repository"):
        fsio.repo_tree(tmp_path, "ev")


def _scan_fixture(tree: Path) -> None:
    rels = ["a/1/meta.json", "a/2/x/meta.json", "b/meta.json", "c/notmeta.json", "meta.json"]
    for skill in ("s1", "s-2", "s"):
        for run in ("r1", "r2"):
            for item in ("i1", "i2", "i-3", "i"):
                for k in ("0", "1"):
                    rels += [f"{skill}/arm/{run}/{item}/{k}/meta.json", f"{skill}/arm/{run}/{item}/{k}/captured/1.out.d/0/r.json"]
            rels += [f"{skill}/arm/{run}/meta.json", f"{skill}/arm/{run}/i1/0/captured/meta.json"]
    rels += ["s1/arm/r1/i2/meta.json/x", "s/arm/r1/i1/meta.json/0/meta.json",  # directories named meta.json
             "s/arm/r1/i1/0/meta.json.d/meta.json", "s/arm/r2/i/1/captured/meta.json/meta.json"]
    for rel in rels:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("{}")
    os.symlink("../meta.json", tree / "s" / "arm" / "r1" / "i1" / "1" / "meta.json.lnk")  # inside: allowed
    os.symlink("../../../meta.json", tree / "s" / "arm" / "r2" / "i" / "meta.json")  # a symlink named meta.json


@pytest.mark.parametrize("depth", [0, 1, 3, 4, 6])
def test_scan_top_and_below_visit_what_scan_tree_visits(tmp_path, depth):
    """The evidence pass's walk in two halves (scan_top above the bundle directories, scan_below per
    bundle directory, by the worker that grades it) finds exactly scan_tree's entries, and refuses
    wherever scan_tree refuses (the pass then re-runs scan_tree for its wording)."""
    tree = tmp_path / "ev"
    _scan_fixture(tree)
    top, careful = fsio.scan_tree(tmp_path, "ev", "meta.json")
    assert len(careful) > 50
    got_top, found, below = fsio.scan_top(tmp_path, "ev", "meta.json", depth)
    assert got_top == top == tree
    real_root = tmp_path.resolve()
    halves = found + [m for d in below for m in fsio.scan_below(real_root, d, "meta.json")]
    assert sorted(halves) == sorted(careful) and len(halves) == len(careful)
    assert all(not os.path.islink(d) and os.path.isdir(d) for d in below)
    assert fsio.scan_top(tmp_path, "missing", "meta.json", depth) == (tmp_path / "missing", [], [])
    for link_at in ("b/out", "s/arm/r2/i-3/1/captured/out", "s/arm/r1/i2", "s/arm/r1/i1/0/captured/1.out.d/0/deep"):
        if (tree / link_at).is_dir():
            import shutil
            shutil.rmtree(tree / link_at)
        os.symlink("/etc", tree / link_at)
        with pytest.raises(SkillEvalError, match="outside the repository"):
            fsio.scan_tree(tmp_path, "ev", "meta.json")
        with pytest.raises(SkillEvalError, match="outside the repository"):
            _, found, below = fsio.scan_top(tmp_path, "ev", "meta.json", depth)
            for d in below:
                fsio.scan_below(real_root, d, "meta.json")
        os.unlink(tree / link_at)


def _pass_results(cfg, root, *, walk: bool, jobs: int | None):
    from skill_eval.grading import regrade

    fresh = regrade.default_freshness(cfg)
    catalog = regrade.default_catalog(cfg)
    if walk:
        p = regrade.Pass(cfg, root, fresh, catalog, jobs=jobs, tree=(cfg.root, str(root.relative_to(cfg.root))))
    else:
        p = regrade.Pass(cfg, root, fresh, catalog, jobs=jobs, listing=regrade.meta_paths(root))
    return [(r.where, r.parts, r.meta_ok, r.slot_key, r.run_id, r.stale_label, r.stale, r.contamination, r.fresh_meta,
             r.grade.to_json() if r.grade is not None else None) for r in p]


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_walking_pass_gives_the_listed_pass(jobs):
    """regrade.Pass over this repository's evidence: walking the tree itself (top levels here, each bundle
    directory by its worker, freshness checked here from the meta the worker sends) gives the pass over
    the listed meta.json files, Result for Result, in order; serial and forked alike."""
    from skill_eval.content import config
    from skill_eval.grading import evidence

    cfg = config.load(ROOT)
    root = evidence.evidence_dir(cfg)
    listed = _pass_results(cfg, root, walk=False, jobs=1)
    walked = _pass_results(cfg, root, walk=True, jobs=jobs)
    assert len(listed) > 100
    assert walked == listed


def test_walking_pass_with_inside_links_grades_like_the_listed_pass(repo_copy):
    """A bundle holding a symlink that stays inside the repository (allowed in the tree, refused when a
    grader reads through it): the walking pass does not take its linkfree shortcut there, and grades
    every bundle as the listed pass does, serial and forked."""
    from skill_eval.content import config

    cfg = config.load(repo_copy)
    root = repo_copy / "agent-evals" / "skills" / "evidence"
    from skill_eval.core import stored

    for index in sorted(root.glob("*/skill-agent/*/*/*/" + stored.INDEX)):  # compact evidence: one bundle plain again
        if any(".out.d/" in rel for rel in stored.index_of(index.parent)):
            stored.expand(index.parent)
            break
    snapshots = sorted(root.glob("*/skill-agent/*/*/*/captured/*.out.d"))
    assert snapshots
    victim = snapshots[0]
    moved = victim.with_name(victim.name + ".real")
    victim.rename(moved)
    os.symlink(moved.name, victim)
    listed = _pass_results(cfg, root, walk=False, jobs=1)
    assert any(r[-1] and r[-1]["checks"] and r[0] == str(victim.parents[1]) for r in listed)
    for jobs in (1, 2):
        assert _pass_results(cfg, root, walk=True, jobs=jobs) == listed


def test_walking_pass_refuses_like_scan_tree(repo_copy):
    """An escaping symlink deep in one bundle directory (met by a worker) or above the bundles: the pass
    raises scan_tree's own refusal, serial and forked, and leaves no child behind."""
    from skill_eval.content import config
    from skill_eval.grading import regrade

    cfg = config.load(repo_copy)
    rel = "agent-evals/skills/evidence"
    root = repo_copy / rel
    metas = regrade.meta_paths(root)
    assert len(metas) > 100
    for link in (Path(metas[len(metas) // 2]).parent / "captured" / "escape", root / "escape",
                 Path(metas[-1]).parents[2] / "escape"):
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink("/etc", link)
        with pytest.raises(SkillEvalError) as careful:
            fsio.scan_tree(repo_copy, rel, "meta.json")
        for jobs in (1, 2):
            with pytest.raises(SkillEvalError) as walked:
                list(regrade.Pass(cfg, root, regrade.default_freshness(cfg), regrade.default_catalog(cfg), jobs=jobs,
                                  tree=(repo_copy, rel)))
            assert str(walked.value) == str(careful.value)
            assert not regrade._STATE
            with pytest.raises(ChildProcessError):
                os.waitpid(-1, os.WNOHANG)
        os.unlink(link)


def test_evidence_gate_same_report_with_or_without_the_early_pass(monkeypatch):
    """evidence.check on this repository: the report is the same when the tree is walked whole first
    and the listed meta.json files are graded (no early pass started before selection)."""
    from skill_eval.content import config
    from skill_eval.grading import evidence

    cfg = config.load(ROOT)
    early = evidence.check(cfg)
    monkeypatch.setattr(evidence, "_early_pass", lambda cfg, slim: None)
    without = evidence.check(cfg)
    assert (early.errors, early.found, early.expected, early.pending) == \
        (without.errors, without.found, without.expected, without.pending)
    assert [g.to_json() for g in early.grades] == [g.to_json() for g in without.grades]


def test_early_pass_forked_gives_the_same_report(monkeypatch):
    """The same with the early pass forked (POOL_MIN lowered): the workers grade while selection runs,
    this process checks freshness; the report is the serial one."""
    from skill_eval.content import config
    from skill_eval.grading import evidence, regrade

    cfg = config.load(ROOT)
    serial = evidence.check(cfg)
    monkeypatch.setattr(regrade, "POOL_MIN", 10)
    monkeypatch.setattr(regrade, "POOL_CORES", 1)
    started: list[int] = []
    real_start = regrade.Pass.start

    def start(self):
        real_start(self)
        started.append(self._pool is not None)
    monkeypatch.setattr(regrade.Pass, "start", start)
    forked = evidence.check(cfg)
    assert started and started[0], "the early pass forked its workers"
    assert (forked.errors, forked.found, forked.expected, forked.pending) == \
        (serial.errors, serial.found, serial.expected, serial.pending)
    assert [g.to_json() for g in forked.grades] == [g.to_json() for g in serial.grades]


def test_early_pass_abandoned_when_selection_fails(monkeypatch):
    """Selection failing after the early pass forked: no child is left, no pass state either."""
    from skill_eval.content import config
    from skill_eval.grading import evidence, regrade

    cfg = config.load(ROOT)
    monkeypatch.setattr(regrade, "POOL_MIN", 10)
    monkeypatch.setattr(regrade, "POOL_CORES", 1)

    def broken(*a, **k):
        raise SkillEvalError("selection failed")
    with pytest.raises(SkillEvalError, match="selection failed"):
        evidence.check(cfg, select_fn=broken, expected_fn=lambda *a, **k: [])
    assert not regrade._STATE
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


_TOKENS = ["--", "-", "", "=", "-o", "-oX", "-o=x", "--out", "--out=x", "--out=", "--out=a=b", "--outx", "-S", "-Sx",
           "--S", "-h", "--help", "--help-all", "--dry-run", "x", "x=y", "-x=-o", "a-b", "--used-by", "--used-by=app", "@f"]
_FLAGS = ["-o", "--out", "-S", "-h", "--help", "--dry-run", "--used-by", "-", "--", "", "=", "--out=a", "-x", "x", "--S",
          "-o=", "-ab"]


def test_flag_set_answers_as_has_flag():
    """graders.artifacts.FlagSet (one pass over an argv) against has_flag (one pass per flag), over every
    argv of up to three of these tokens (after a program name) and every flag: "--" ends the flags,
    `flag=value`, a short flag's attached value, flags holding "=" (delegated)."""
    import itertools

    from skill_eval.grading.graders.artifacts import FlagSet, has_flag

    argvs = [("prog", *rest) for n in range(4) for rest in itertools.product(_TOKENS, repeat=n)]
    argvs += [(), ("--out",), ("-o", "--", "-o")]
    for argv in argvs:
        flags = FlagSet(argv)
        for f in _FLAGS:
            assert flags.has(f) == has_flag(argv, f), (argv, f)


def test_run_query_answers_kept_once_finished_grade_the_same(monkeypatch):
    """A finished Run answers exhibited() and pair_of() once (the rules are pure functions of it):
    every golden and evidence bundle of this repository grades exactly as with the queries recomputed."""
    from skill_eval.content import config
    from skill_eval.grading.graders import Catalog, context, grade_bundle

    cfg = config.load(ROOT)
    catalog = Catalog(cfg)
    dirs = sorted(p.parent for d in ("golden", "evidence") for p in (ROOT / "agent-evals" / "skills" / d).rglob("meta.json"))
    assert len(dirs) > 50
    kept = [grade_bundle(d, catalog).to_json() for d in dirs]
    monkeypatch.setattr(context.Run, "finish", lambda self: self)
    assert [grade_bundle(d, catalog).to_json() for d in dirs] == kept


def test_slim_meta_answers_as_the_dict_it_replaced():
    """SlimGrade.meta (a read-only view over the packed tuple) against the dict it used to build, for
    every golden and evidence bundle of this repository: every key, an unknown key, iteration, repr."""
    from skill_eval.content import config
    from skill_eval.grading import regrade, slimgrade
    from skill_eval.grading.graders import Catalog, grade_bundle

    cfg = config.load(ROOT)
    catalog = Catalog(cfg)
    dirs = sorted(p.parent for d in ("golden", "evidence") for p in (ROOT / "agent-evals" / "skills" / d).rglob("meta.json"))
    for d in dirs:
        slim = regrade.SlimGrade(grade_bundle(d, catalog))
        ref = dict(zip(regrade.SlimGrade._META_KEYS, slimgrade._meta_values(slim._meta), strict=True))
        meta = slim.meta
        assert dict(meta) == ref and meta == ref and repr(meta) == repr(ref) and len(meta) == len(ref)
        assert list(meta) == list(ref) and list(meta.items()) == list(ref.items())
        for key in [*ref, "nope", ""]:
            assert meta.get(key) == ref.get(key) and meta.get(key, 7) == ref.get(key, 7) and (key in meta) == (key in ref)
            if key in ref:
                assert meta[key] == ref[key]
            else:
                with pytest.raises(KeyError):
                    meta[key]
        assert slim.full().meta == ref


def test_local_paths_one_read_equals_the_two_checks(tmp_path):
    home = "/home/recorder"
    tree = tmp_path / "agent-evals" / "evidence"
    layout = ["s/skill-agent/r1/item/0", "s/skill-agent/r1/item/1", "trigger/skill-agent/r2/p/0"]
    for i, rel in enumerate(layout):
        b = tree / rel
        (b / "captured" / "1.out.d").mkdir(parents=True)
        (b / "facts").mkdir()
        (b / "meta.json").write_text("{}")
        (b / "final.md").write_text(f"see {home}/x and /tmp/sandbox-{i}-abcdefgh/work\n")
        (b / "captured" / "1.out").write_text(f"{home}/y /tmp/sandbox-abcdefgh\n")
        (b / "captured" / "1.out.d" / "r.json").write_text("/tmp/sandbox-abcdefgh")
        (b / "facts" / "f.json").write_text(home)
        (b / "events.jsonl").write_text("clean\n")
    nested = tree / layout[0] / "deeper"  # a meta.json below a bundle: a bundle for the sandbox check only
    nested.mkdir()
    (nested / "meta.json").write_text("/tmp/sandbox-zzzzzzzz")
    from skill_eval.reporting.scorecard.runs import bundle_dirs

    want = (check_evidence(tree, tmp_path), local_paths.home_hits(tree, tmp_path, home))
    assert want[0] and want[1]
    assert local_paths._scan(tree, tmp_path, home, bundle_dirs(tree)) == want
    assert local_paths._scan(tree, tmp_path, "/", bundle_dirs(tree)) == (want[0], [])


@pytest.mark.parametrize("mapping", [{}, {b"/private/store/1.out.d/0/report.json": b"report.json"}])
def test_recorder_stream_tees_digests_and_persists_the_same_bytes(tmp_path, mapping):
    """The copy loop forwards, one helper thread hashes, another persists: the agent's bytes, the
    captured file and the recorded digest are one and the same (substituted) stream, across chunks."""
    import hashlib
    import threading

    from skill_eval.harness.runner import tee
    from skill_eval.harness.runner.outputs import Substituter

    key = next(iter(mapping), b"")
    payload = b"".join(os.urandom(4093) + (key if i % 3 == 0 else b"") for i in range(800))  # ~3.3 MiB
    sub = Substituter(mapping)
    want = sub.feed(payload) + sub.flush()  # the whole stream at once: what chunked teeing must reproduce
    assert (want != payload) == bool(mapping)
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    got = bytearray()
    reader = threading.Thread(target=_drain, args=(dst_r, got))
    reader.start()
    writer = threading.Thread(target=lambda: (_feed(src_w, payload), os.close(src_w)))
    writer.start()
    cap = tmp_path / "cap"
    stream = tee.Stream(src_r, dst_w, str(cap), mapping)
    while stream.open:
        stream.pump()
    result = stream.result("captured/1.out")
    os.close(dst_w)
    writer.join()
    reader.join()
    os.close(dst_r)
    assert bytes(got) == want == cap.read_bytes()
    assert result == {"path": "captured/1.out", "sha256": hashlib.sha256(want).hexdigest(), "bytes": len(want)}
    assert stream.subst.count == (len(range(0, 800, 3)) if mapping else 0)


def _drain(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 1 << 16):
        into.extend(chunk)


def _feed(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[: 1 << 15]):]


def test_bundle_load_with_listed_names_is_the_plain_load(tmp_path):
    """bundle.load(names=...) (the evidence pass passes the bundle directory's entries it just listed):
    files not listed are absent without an open; every bundle of this repository, and a bundle missing
    required files, load exactly as without the listing."""
    dirs = sorted(p.parent for p in (ROOT / "agent-evals" / "skills" / "evidence").rglob("meta.json"))[:60]
    broken = tmp_path / "b"
    broken.mkdir()
    (broken / "meta.json").write_text("{}")
    (broken / "facts.json").mkdir()
    for d in [*dirs, broken]:
        plain = bundle.load(d)
        listed = bundle.load(d, names=frozenset(os.listdir(d)))
        assert (listed.meta, listed.calls, listed.events, listed.final_text, listed.claim_file, listed.usage,
                listed.judgments, listed.facts, listed.present, listed.problems) == \
               (plain.meta, plain.calls, plain.events, plain.final_text, plain.claim_file, plain.usage,
                plain.judgments, plain.facts, plain.present, plain.problems)
    assert bundle.load(broken, names=frozenset(os.listdir(broken))).problems  # still reported missing


# -- JSON Lines in one scan (strict._plain_lines) ------------------------------------------------
_LINE_ATOMS = ['{"a":1}', '{"a":1,"a":2}', "[1,2]", '"x"', "1", "-0.5", "NaN", "1e999", '{"a":', "1}", ' {"b":2}',
               '{"c":3} ', "", '{"d":"\\u00e9"}', '{"e":"\\ud800"}', "\ufeff{}", '{"f":' + "[" * 70 + "]" * 70 + "}",
               "1" * 40, '{"g":\r1}', '{"h":1}\r', "true", "null", '{"i":[{"j":{}}]}', "[", "]", ",", '{"k":"a\\nb"}',
               '{"l":"é"}', "{}", "[]", '{"x":[1', "2]}", '{"y":{"z":1}', '{"w":2}}']


def _lines_outcome(fn, text: str) -> tuple[str, object]:
    try:
        return ("ok", fn(text, "f.jsonl"))
    except SkillEvalError as exc:
        return ("err", str(exc))


@pytest.mark.parametrize("seed", range(8))
def test_jsonl_in_one_scan_answers_as_line_by_line(seed):
    """loads_jsonl's one-scan path gives exactly what parsing line by line gives (values, or the
    refusal in the same words), over texts built from valid and broken lines: split values, padding,
    blank lines, BOMs, surrogates, long digit runs, deep nesting, duplicate keys, CRLF."""
    import random

    rng = random.Random(seed)
    taken = 0
    for _ in range(3000):
        lines = [rng.choice(_LINE_ATOMS) for _ in range(rng.randint(0, 5))]
        text = "\n".join(lines) + rng.choice(["", "\n", "\n\n", "\r\n"])
        careful = _lines_outcome(strict._loads_lines, text)
        assert _lines_outcome(strict.loads_jsonl, text) == careful, text
        fast = strict._plain_lines(text)
        if fast is not None:
            taken += 1
            assert ("ok", fast) == careful, text
    assert taken > 100  # the one-scan path is really taken, not always declined


@pytest.mark.parametrize("text", ['{"a":\n1}\n', '{"a":[1,\n2]}', '[1,\n2]\n{"b":1}\n', '{"x":[1\n2]}\n'])
def test_jsonl_value_split_over_lines_is_refused(text):
    """A value whose tokens straddle a newline is two broken lines, not one record (the one scan
    would read it whole: it must decline and let the line-by-line path refuse it)."""
    assert strict._plain_lines(text) is None
    with pytest.raises(SkillEvalError, match="line 1"):
        strict.loads_jsonl(text, "f.jsonl")


# -- one check's memo: repo_path, content YAML, fixture digests, hot schemas ------------------------
def test_repo_path_memo_keeps_only_whole_paths_and_every_refusal(tmp_path):
    from skill_eval.core import memo
    from skill_eval.core.errors import InputError

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    with memo.sharing():
        assert fsio.repo_path(tmp_path, "a/f") == tmp_path / "a" / "f"
        assert ("repo_path", str(tmp_path), "a/f") in memo.shared_memo()
        # a missing component is not kept: created later as an escaping link, it is refused
        assert fsio.repo_path(tmp_path, "b/f") == tmp_path / "b" / "f"
        (tmp_path / "b").symlink_to(outside)
        with pytest.raises(InputError, match="outside the repository"):
            fsio.repo_path(tmp_path, "b/f")
        with pytest.raises(InputError, match="outside the repository"):  # a refusal is never kept either
            fsio.repo_path(tmp_path, "b/f")
    assert memo.shared_memo() is None
    with pytest.raises(InputError):
        fsio.repo_path(tmp_path, "b/f")


def test_content_yaml_read_once_per_check(monkeypatch):
    """scenarios, the trigger corpus and the rubric are parsed once per check (the grading catalog
    and the pack digests both read them); outside a check, every read parses."""
    from skill_eval.content import config, evals
    from skill_eval.core import memo

    cfg = config.load(ROOT)
    real = strict.load_yaml
    seen: list[str] = []
    monkeypatch.setattr(strict, "load_yaml", lambda p: (seen.append(Path(p).name), real(p))[1])
    with memo.sharing():
        a = evals.load_scenarios(cfg)
        b = evals.load_scenarios(cfg, skills={s.skill for s in a})
        evals.load_rubric(cfg)
        evals.load_rubric(cfg)
    assert [s.id for s in a] == [s.id for s in b]
    assert seen.count("scenarios.yaml") == 1 and seen.count("rubric.yaml") == 1
    evals.load_rubric(cfg)
    evals.load_rubric(cfg)
    assert seen.count("rubric.yaml") == 3


def test_golden_tree_walked_once_per_check_and_refusals_never_kept(monkeypatch):
    """The grading Catalog asks for golden/ twice (its root, then its scenarios file): inside a check
    the tree is walked once; outside, every call walks; a refusal is raised again, never kept."""
    from skill_eval.content import config, evals
    from skill_eval.core import memo
    from skill_eval.core.errors import InputError
    from skill_eval.grading import graders

    cfg = config.load(ROOT)
    real = fsio.repo_tree
    walks: list[str] = []
    monkeypatch.setattr(fsio, "repo_tree", lambda root, path: (walks.append(str(path)), real(root, path))[1])
    with memo.sharing():
        graders.Catalog(cfg)
        assert len(walks) == 1
        assert evals.golden_dir(cfg) == real(cfg.root, f"{cfg.evals_root}/{evals.GOLDEN_DIR}")
        assert len(walks) == 1
    evals.golden_dir(cfg)
    evals.golden_dir(cfg)
    assert len(walks) == 3

    def refuse(root, path):
        walks.append(str(path))
        raise InputError("is a symlink to /x, outside the repository; refused", source=path)
    monkeypatch.setattr(fsio, "repo_tree", refuse)
    with memo.sharing():
        for _ in range(2):
            with pytest.raises(InputError, match="outside the repository"):
                evals.golden_dir(cfg)
    assert len(walks) == 5


def test_fixture_digest_looked_at_once_per_cache(tmp_path, monkeypatch):
    from skill_eval.grading.graders import artifacts

    (tmp_path / "old.so").write_bytes(b"one")
    calls: list[str] = []
    real = os.lstat
    monkeypatch.setattr(artifacts.os, "lstat", lambda p, *a, **k: (calls.append(str(p)), real(p, *a, **k))[1])
    cache: dict = {}
    first = artifacts.file_sha256(tmp_path, "old.so", cache)
    assert first == artifacts.file_sha256(tmp_path, "old.so", cache) and len(calls) == 1  # one look per check
    assert artifacts.file_sha256(tmp_path, "missing", cache) is None
    assert artifacts.file_sha256(tmp_path, "missing", cache) is None and len(calls) == 2
    (tmp_path / "old.so").write_bytes(b"two")  # without a cache (no check) every call looks again
    assert artifacts.file_sha256(tmp_path, "old.so") != first and len(calls) == 3


def test_cli_parsers_import_no_shutil_and_keep_the_width():
    """argparse's formatter imports shutil (and its compression modules) for the terminal width;
    ours asks os directly: no command's start pays for it, and --help still wraps at COLUMNS."""
    import subprocess
    import sys

    code = ("import sys, argparse; from skill_eval import cli; p = cli.build_parser('evidence'); "
            "assert 'shutil' not in sys.modules, 'shutil imported'; "
            "assert cli._terminal_columns() - 2 == argparse.HelpFormatter('x')._width, 'width'; "  # stdlib's, via shutil
            "p.parse_args(['evidence', 'check', '--help'])")
    for columns in ("50", "133", "junk"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "COLUMNS": columns}, check=False)
        assert out.returncode == 0, out.stderr
        assert "--suite" in out.stdout


def test_slim_grades_cross_the_pool_unchanged_and_shared():
    """A SlimGrade pickled by a worker comes back with the same values, its meta summary and status
    pattern shared with those already seen (found whole), or rebuilt when new (a fresh process)."""
    import pickle

    from skill_eval.content import config
    from skill_eval.grading import regrade, slimgrade

    cfg = config.load(ROOT)
    top = fsio.repo_path(cfg.root, f"{cfg.evals_root}/evidence")
    grades = [r.grade for r in regrade.Pass(cfg, top, regrade.default_freshness(cfg), regrade.default_catalog(cfg),
                                            jobs=1, slim=True, tree=(cfg.root, f"{cfg.evals_root}/evidence"))
              if r.grade is not None]
    assert grades and all(isinstance(g, slimgrade.SlimGrade) for g in grades)

    def values(g):
        return (g.bundle, g.kind, g.item, g._meta, g._checks, g.zero_tolerance, g.failures(), dict(g.meta))

    data = pickle.dumps(grades)
    for seen in (True, False):
        if not seen:  # as in a process that met none of them before: every tuple rebuilt
            saved = dict(slimgrade._INTERNED)
            slimgrade._INTERNED.clear()
        try:
            back = pickle.loads(data)
        finally:
            if not seen:
                slimgrade._INTERNED.update(saved)
        assert [values(b) for b in back] == [values(g) for g in grades]
        if seen:
            assert all(b._meta[0] is g._meta[0] for b, g in zip(back, grades, strict=True))
            assert all(b._checks is g._checks for b, g in zip(back, grades, strict=True)
                       if not any(reasons for _, _, reasons in g._checks))


def test_slim_grade_with_an_unhashable_meta_value_crosses_the_pool():
    import pickle
    from types import SimpleNamespace

    from skill_eval.grading import slimgrade

    check = SimpleNamespace(status="fail", reasons=["why"])
    grade = SimpleNamespace(bundle="b", kind="behavioral", item="x", zero_tolerance=(2,), checks={"2": check},
                            meta={"arm": "skill-agent", "scripted": {"not": "hashable"}, "k": 0, "run_id": "r"})
    slim = slimgrade.SlimGrade(grade)
    back = pickle.loads(pickle.dumps(slim))
    assert dict(back.meta) == dict(slim.meta) and back.failures() == [2]


def test_bundle_walk_skips_a_directory_whose_listing_fails_part_way(tmp_path, monkeypatch):
    """scan_below, like scan_tree's walk, skips a directory that cannot be listed whole (an I/O error
    part-way): nothing of it is listed, and the walk goes on; it is not a refusal."""
    bundle_dir = tmp_path / "b"
    (bundle_dir / "captured").mkdir(parents=True)
    (bundle_dir / "captured" / "x").write_text("1")
    (bundle_dir / "meta.json").write_text("{}")
    real = os.scandir

    class Failing:
        def __init__(self, path):
            self._it = real(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._it.close()

        def __iter__(self):
            yield next(self._it)
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(fsio.os, "scandir", lambda p: Failing(p) if str(p).endswith("captured") else real(p))
    links: list[str] = []
    names: set[str] = set()
    found = fsio.scan_below(tmp_path.resolve(), str(bundle_dir), "meta.json", links, names)
    assert found == [str(bundle_dir / "meta.json")] and names == {"meta.json", "captured"} and not links
