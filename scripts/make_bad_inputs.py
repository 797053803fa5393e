"""Generate the bad-input corpus under tests/data/bad_input/ (reproducible: same repo, same files).

Every format skill-eval reads gets the same battery of syntax attacks (empty, BOM, bad UTF-8,
truncation, lone surrogates, non-finite numbers, over-long integers, deep nesting, duplicate
keys, YAML anchors/aliases and impossible dates, newer/missing schema versions, wrong top-level
types, over-long paths) plus semantic cases built by mutating this repository's own valid file
(out-of-range numbers, unknown fields, missing required fields). Each case is one file:
tests/data/bad_input/<format>/<case>.<ext>; manifest.json says, per format, which repository file
the case replaces, which command reads it, which exit codes are correct (2 bad input; 1 for
bundle files, which fail grading, and for a SKILL.md, which is that skill's L0 finding) and where
the one line naming the file appears ("stderr" for an error that stops the command; "findings"
for check-skills, where one broken skill folder is that skill's finding on stdout and the other
skills are still checked, issue 11). tests/test_formats_bad_input.py runs every case through the
CLI in its own process and checks that line, within 5 s and 500 MB.

    python scripts/make_bad_inputs.py          # rewrite the corpus
    python scripts/make_bad_inputs.py --check  # exit 1 if the committed corpus differs
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "bad_input"
EVALS = "agent-evals/skills"
BUNDLE = f"{EVALS}/evidence/abi-compat-review/skill-agent/claude-code-scripted/review-removed-export/0"
# The bundle under attack is the frozen v1 fixture (tests/data/v1), placed at BUNDLE in the
# scratch repository: re-recording the live evidence never changes this corpus.
BUNDLE_SOURCE = "tests/data/v1/bundles/behavioral"
LONG = "x" * 5000
DEEP = 200  # nesting levels (the readers' limit is 64)

# format -> (file it replaces, syntax, command argv, allowed exit codes)
FORMATS: dict[str, tuple[str, str, list[str], list[int]]] = {
    "config": ("skill-eval.toml", "toml", ["pack", "--check"], [2]),
    "scenarios": (f"{EVALS}/scenarios.yaml", "yaml", ["pack", "--check"], [2]),
    "ground_truth": (f"{EVALS}/ground_truth.json", "json", ["pack", "--check"], [2]),
    "trigger_corpus": (f"{EVALS}/trigger_corpus.yaml", "yaml", ["check-triggers"], [2]),
    "rubric": (f"{EVALS}/rubric.yaml", "yaml", ["golden"], [2]),
    "golden_manifest": (f"{EVALS}/golden/manifest.yaml", "yaml", ["golden"], [2]),
    "evidence_pending": (f"{EVALS}/evidence-pending.yaml", "yaml", ["evidence"], [2]),
    "baseline": (f"{EVALS}/baselines/abi-compat-review--claude-code--scripted_3dca3847550cd148fdb78d194bd58bf8a491331132f5a680daf270f8a997cd2a.json",
                 "json", ["baseline", "show"], [2]),
    "pack": (f"{EVALS}/skill-eval-pack.json", "json", ["pack", "--check"], [2]),
    "cli_surface": (f"{EVALS}/surface/abicheck-cli.json", "json", ["check-skills"], [2]),
    "model_script": (f"{EVALS}/model-scripts/abi-compat-review-removed-export.yaml", "yaml",
                     ["model-server", "--kind", "anthropic", "--script", f"{EVALS}/model-scripts/abi-compat-review-removed-export.yaml"], [2]),
    "skill_md": ("skills-src/abi-compat-review/SKILL.md", "frontmatter", ["check-skills"], [1]),
    "meta": (f"{BUNDLE}/meta.json", "json", ["grade", BUNDLE], [1]),
    "calls": (f"{BUNDLE}/calls.jsonl", "jsonl", ["grade", BUNDLE], [1]),
    "events": (f"{BUNDLE}/events.jsonl", "jsonl", ["grade", BUNDLE], [1]),
    "claim": (f"{BUNDLE}/claim.json", "json", ["grade", BUNDLE], [1]),
    "usage": (f"{BUNDLE}/usage.json", "json", ["grade", BUNDLE], [1]),
    "facts": (f"{BUNDLE}/facts.json", "json", ["grade", BUNDLE], [1]),
    "judgments": (f"{BUNDLE}/judgments.json", "json", ["grade", "--stage", "release", BUNDLE], [1]),
}
# Formats whose bad file is a finding of a check that goes on (stdout), not an error stopping it (stderr).
FINDINGS = {"skill_md"}
# Syntax cases that are not bad input for a format: a SKILL.md may start with a BOM (accepted with a
# warning, issue 11), so it is no failure.
ACCEPTED = {"skill_md": {"bom"}}
SCHEMA = {"calls": "call", "events": "event", "claim": "claim_file", "skill_md": None}
EXT = {"toml": "toml", "yaml": "yaml", "json": "json", "jsonl": "jsonl", "frontmatter": "md"}
VALID_EXTRA = {  # valid documents for formats this repository has no committed file of
    "facts": {"schema_version": 1, "actions": []},
    "judgments": {"schema_version": 1, "rubric_version": "1", "judge": "scripted", "dimensions": {}},
}
# Command-line cases: argv -> the option the one-line error must name.
CLI_CASES: dict[str, tuple[list[str], str]] = {
    "run-k-negative": (["run", "-k", "-1", "--dry-run"], "-k"),
    "run-k-zero": (["run", "-k", "0", "--dry-run"], "-k"),
    "run-k-huge": (["run", "-k", "1000000000000", "--dry-run"], "-k"),
    "run-k-text": (["run", "-k", "three", "--dry-run"], "-k"),
    "run-jobs-zero": (["run", "-j", "0", "--dry-run"], "--jobs"),
    "run-jobs-huge": (["run", "-j", "100000", "--dry-run"], "--jobs"),
    "run-timeout-zero": (["run", "--timeout", "0", "--dry-run"], "--timeout"),
    "run-timeout-nan": (["run", "--timeout", "nan", "--dry-run"], "--timeout"),
    "run-timeout-inf": (["run", "--timeout", "inf", "--dry-run"], "--timeout"),
    "run-timeout-negative": (["run", "--timeout", "-5", "--dry-run"], "--timeout"),
    "run-max-turns-zero": (["run", "--max-turns", "0", "--dry-run"], "--max-turns"),
    "run-max-turns-huge": (["run", "--max-turns", "99999999", "--dry-run"], "--max-turns"),
    "run-max-cost-nan": (["run", "--max-cost", "nan", "--dry-run"], "--max-cost"),
    "run-max-cost-negative": (["run", "--max-cost", "-1", "--dry-run"], "--max-cost"),
    "model-server-port": (["model-server", "--kind", "anthropic", "--script", "x.yaml", "--port", "70000"], "--port"),
    "unknown-command": (["gradee"], "gradee"),
    "unknown-option": (["pack", "--chekc"], "--chekc"),
    "stage-choice": (["grade", "--stage", "nightly", "x"], "--stage"),
    "grade-long-path": (["grade", "p" * 5000], "pppp"),
    "digest-long-path": (["digest", "p" * 5000], "pppp"),
    "root-long-path": (["pack", "--check", "--root", "p" * 5000], "pppp"),
    "script-long-path": (["model-server", "--kind", "anthropic", "--script", "p" * 5000], "pppp"),
    "grade-nul-path": (["grade", "bad\x00path"], "bad"),
}


def _valid_text(fmt: str) -> str:
    rel, syntax, _, _ = FORMATS[fmt]
    if fmt in VALID_EXTRA:
        return json.dumps(VALID_EXTRA[fmt], indent=2) + "\n"
    if rel.startswith(BUNDLE + "/"):
        rel = f"{BUNDLE_SOURCE}/{rel.removeprefix(BUNDLE + '/')}"
    return (REPO / rel).read_text(encoding="utf-8")


def _parse(fmt: str, text: str) -> Any:
    syntax = FORMATS[fmt][1]
    if syntax == "json":
        return json.loads(text)
    if syntax == "yaml":
        return yaml.safe_load(text)
    if syntax == "jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if syntax == "toml":
        import tomllib

        return tomllib.loads(text)
    return None


def _dump(fmt: str, value: Any) -> str:
    syntax = FORMATS[fmt][1]
    if syntax == "json":
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    if syntax == "yaml":
        return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=1000)
    if syntax == "jsonl":
        return "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in value)
    if syntax == "toml":
        return _toml(value)
    raise ValueError(syntax)


def _toml(value: dict[str, Any], prefix: str = "") -> str:
    """A tiny TOML writer for the config (tables and scalars/arrays; enough for this corpus)."""
    def scalar(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(scalar(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {scalar(x)}" for k, x in v.items()) + "}"
        raise TypeError(type(v))

    lines, tables = [], []
    for k, v in value.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{json.dumps(k)} = {scalar(v)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        name = f"{prefix}.{json.dumps(k)}" if prefix else json.dumps(k)
        out += f"\n[{name}]\n" + _toml(v, name)
    return out


def _set(doc: Any, path: str, value: Any) -> Any:
    """A copy of doc with dotted `path` set (`-` deletes; list indexes are integers)."""
    doc = copy.deepcopy(doc)
    parts = path.split(".")
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    last = parts[-1]
    key: Any = int(last) if isinstance(node, list) else last
    if value is _DELETE:
        del node[key]
    else:
        node[key] = value
    return doc


_DELETE = object()


def _nest(depth: int, syntax: str) -> str:
    if syntax == "toml":
        return "a = " + "[" * depth + "]" * depth + "\n"
    if syntax in ("yaml", "frontmatter"):
        return "a: " + "[" * depth + "]" * depth + "\n"
    return "[" * depth + "]" * depth


def syntax_cases(fmt: str, valid: str) -> dict[str, bytes]:
    """The attacks every reader of this syntax must survive."""
    syntax = FORMATS[fmt][1]
    enc = valid.encode("utf-8")
    cases: dict[str, bytes] = {
        "empty": b"",
        "bom": b"\xef\xbb\xbf" + enc,
        "invalid-utf8": enc[: len(enc) // 2] + b"\xff\xfe" + enc[len(enc) // 2:],
        "truncated": (enc[:25] if syntax == "frontmatter"  # inside the frontmatter: never closed
                      else enc[: max(1, len(enc) // 3)] + (b"\n[unclosed: {" if syntax == "yaml" else b"")),
        "nul-byte": enc[:10] + b"\x00" + enc[10:],
        "binary": bytes(range(256)) * 4,
        "latin1": "caf\xe9 = 1\n".encode("latin-1"),
    }
    if syntax == "json":
        cases |= {
            "nan": b'{"schema_version": 1, "x": NaN}',
            "infinity": b'{"schema_version": 1, "x": -Infinity}',
            "float-overflow": b'{"schema_version": 1, "x": 1e999}',
            "int-40-digits": b'{"schema_version": 1, "x": ' + b"9" * 40 + b"}",
            "int-5000-digits": b'{"schema_version": 1, "x": ' + b"9" * 5000 + b"}",
            "lone-surrogate": b'{"schema_version": 1, "x": "\\ud800"}',
            "lone-surrogate-key": b'{"schema_version": 1, "\\udfff": 1}',
            "duplicate-key": b'{"schema_version": 1, "schema_version": 1}',
            "duplicate-key-nested": b'{"schema_version": 1, "x": {"a": 1, "a": 2}}',
            "deep-200": _nest(DEEP, "json").encode(),
            "deep-20000": _nest(20000, "json").encode(),
            "trailing-data": enc.rstrip() + b" {}",
            "two-documents": b'{"schema_version": 1}\n{"schema_version": 1}\n',
            "top-list": b"[]",
            "top-string": b'"hello"',
            "top-null": b"null",
            "top-number": b"1",
            "single-quotes": b"{'schema_version': 1}",
            "comment": b'// comment\n{"schema_version": 1}',
            "trailing-comma": b'{"schema_version": 1,}',
        }
    elif syntax == "jsonl":
        lines = valid.splitlines(keepends=True)
        del cases["empty"]  # an empty JSONL file is zero records: valid (graders judge the absence)
        cases |= {
            "blank-line-middle": "".join(lines[:1] + ["\n"] + lines[1:]).encode(),
            "blank-line-start": ("\n" + valid).encode(),
            "blank-line-end": (valid + "\n").encode(),
            "whitespace-line": (valid + "   \n").encode(),
            "crlf": valid.replace("\n", "\r\n").encode() + b"\r\n \r\n",
            "nan": (valid + '{"schema_version": 1, "x": NaN}\n').encode(),
            "int-5000-digits": (valid + '{"x": ' + "9" * 5000 + "}\n").encode(),
            "lone-surrogate": (valid + '{"x": "\\udc80"}\n').encode(),
            "duplicate-key": (valid + '{"x": 1, "x": 1}\n').encode(),
            "deep-200": (valid + _nest(DEEP, "json") + "\n").encode(),
            "deep-20000": (valid + _nest(20000, "json") + "\n").encode(),
            "not-json-line": (valid + "hello\n").encode(),
            "two-values-one-line": (valid + "{} {}\n").encode(),
            "top-list-line": (valid + "[]\n").encode(),
            "top-null-line": (valid + "null\n").encode(),
            "truncated-line": (valid + '{"schema_version": 1, "x": \n').encode(),
        }
    elif syntax in ("yaml", "frontmatter"):
        bomb = ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n")
        doc = yaml.safe_load(valid) if syntax == "yaml" else None
        list_key = next((k for k, v in doc.items() if isinstance(v, list)), None) if isinstance(doc, dict) else None
        body = {
            "alias-bomb": bomb,
            # the expansion where a validator must walk it (the 324-byte scenarios.yaml case of issue 7)
            "alias-bomb-used": f"schema_version: 1\n{bomb}{list_key or 'payload'}: *i\n",
            "anchor-alias": "schema_version: 1\nx: &anchor {a: 1}\ny: *anchor\n",
            "merge-key": "schema_version: 1\nbase: &b {a: 1}\nx:\n  <<: *b\n",
            "invalid-date": "schema_version: 1\nwhen: 2020-02-31\n",
            "invalid-datetime": "schema_version: 1\nwhen: 2020-13-45T99:99:99Z\n",
            "nan": "schema_version: 1\nx: .nan\n",
            "infinity": "schema_version: 1\nx: -.inf\n",
            "int-40-digits": "schema_version: 1\nx: " + "9" * 40 + "\n",
            "int-5000-digits": "schema_version: 1\nx: " + "9" * 5000 + "\n",
            "hex-int-huge": "schema_version: 1\nx: 0x" + "f" * 5000 + "\n",
            "sexagesimal-huge": "schema_version: 1\nx: 1" + ":59" * 2000 + "\n",
            "lone-surrogate": 'schema_version: 1\nx: "\\ud800"\n',
            "duplicate-key": "schema_version: 1\nschema_version: 1\n",
            "unhashable-key": "schema_version: 1\n? [a, b]\n: 1\n",
            "deep-200": _nest(DEEP, "yaml"),
            "deep-20000": _nest(20000, "yaml"),
            "python-tag": "schema_version: 1\nx: !!python/object/apply:os.system ['true']\n",
            "binary-tag": "schema_version: 1\nx: !!binary aGVsbG8=\n",
            "set-tag": "schema_version: 1\nx: !!set {a, b}\n",
            "unknown-tag": "schema_version: 1\nx: !custom 1\n",
            "two-documents": "schema_version: 1\n---\nschema_version: 1\n",
            "tab-indent": "schema_version: 1\nx:\n\t- a\n",
            "unclosed-flow": "schema_version: 1\nx: [a, b\n",
            "top-list": "- 1\n- 2\n",
            "top-scalar": "hello\n",
        }
        if syntax == "frontmatter":
            parses = ("invalid-date", "invalid-datetime", "two-documents")  # valid YAML: check-skills findings (exit 1)
            fm = {f"fm-{k}": ("---\n" + v + "---\n# Body\n").encode() for k, v in body.items() if k not in parses}
            fm |= {
                "fm-missing-open": b"# no frontmatter\n",
                "fm-unclosed": b"---\nname: abi-compat-review\ndescription: x\n",
                "fm-not-mapping": b"---\n- a\n---\nbody\n",
                "fm-null": b"---\n---\nbody\n",
            }
            return {k: v for k, v in cases.items() if k not in ("empty",)} | fm | {"empty": b""}
        cases |= {k: v.encode() for k, v in body.items()}
    elif syntax == "toml":
        cases |= {
            "nan": b"schema_version = 1\nx = nan\n",
            "infinity": b"schema_version = 1\nx = -inf\n",
            "int-40-digits": b"schema_version = 1\nx = " + b"9" * 40 + b"\n",
            "int-5000-digits": b"schema_version = 1\nx = " + b"9" * 5000 + b"\n",
            "lone-surrogate": b'schema_version = 1\nx = "\\ud800"\n',
            "duplicate-key": b"schema_version = 1\nschema_version = 1\n",
            "duplicate-table": b"schema_version = 1\n[skills]\n[skills]\n",
            "deep-200": _nest(DEEP, "toml").encode(),
            "deep-20000": _nest(20000, "toml").encode(),
            "inline-table-deep": ("a = " + "{b = " * DEEP + "1" + "}" * DEEP + "\n").encode(),
            "bad-date": b"schema_version = 1\nwhen = 2020-02-31\n",
            "unterminated-string": b'schema_version = 1\nx = "abc\n',
            "json-not-toml": b'{"schema_version": 1}',
        }
    return cases


def _schema(fmt: str) -> dict[str, Any]:
    name = SCHEMA.get(fmt, fmt)
    return json.loads((REPO / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))


def _prop(schema: dict[str, Any], key: str) -> dict[str, Any]:
    return schema.get("properties", {}).get(key, {})


def semantic_cases(fmt: str, valid: str) -> dict[str, str]:
    """Schema-level attacks on a copy of this repository's valid file: only mutations the schema
    refuses (a required field deleted, a bounded number out of its bounds, a wrong type)."""
    doc = _parse(fmt, valid)
    syntax = FORMATS[fmt][1]
    schema = _schema(fmt)
    out: dict[str, Any] = {}
    if syntax == "jsonl":
        first = doc[0]
        one = lambda **kv: [{**first, **kv}, *doc[1:]]  # noqa: E731
        if "schema_version" in first:
            out["version-newer"] = one(schema_version=99)
            out["version-string"] = one(schema_version="1")
            out["version-bool"] = one(schema_version=True)
            out["version-missing"] = [{k: v for k, v in first.items() if k != "schema_version"}, *doc[1:]]
        out["unknown-field"] = one(surprise=1)
        ints = {k: 1.5 for k in first if _prop(schema, k).get("type") == "integer" and k != "schema_version"}
        if ints:
            out["float-for-int"] = one(**ints)
        for key in [k for k in schema.get("required", []) if k in first and k != "schema_version"][:4]:
            out[f"{key}-deleted"] = [{k: v for k, v in first.items() if k != key}, *doc[1:]]
        return {k: _dump(fmt, v) for k, v in out.items()}
    if not isinstance(doc, dict):
        return {}
    if "schema_version" in doc:
        out["version-newer"] = _set(doc, "schema_version", 99)
        out["version-zero"] = _set(doc, "schema_version", 0)
        out["version-string"] = _set(doc, "schema_version", "1")
        if syntax != "toml":
            out["version-null"] = _set(doc, "schema_version", None)
        out["version-missing"] = _set(doc, "schema_version", _DELETE)
    out["unknown-field"] = _set(doc, "surprise_field", 1)
    for key, value in list(doc.items())[:6]:  # the first few fields: the battery, not every field
        if key == "schema_version":
            continue
        prop = _prop(schema, key)
        if key in schema.get("required", []):
            out[f"{key}-deleted"] = _set(doc, key, _DELETE)
        if isinstance(value, str) and "number" not in str(prop.get("type")) and "integer" not in str(prop.get("type")):
            out[f"{key}-number"] = _set(doc, key, 7)
        elif isinstance(value, list | dict) and "string" not in str(prop.get("type")):
            out[f"{key}-string"] = _set(doc, key, "not a container")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if prop.get("minimum", -1) >= 0:
                out[f"{key}-negative"] = _set(doc, key, -1)
            if "maximum" in prop:
                out[f"{key}-huge"] = _set(doc, key, 10 ** 25)
    out |= SPECIFIC.get(fmt, lambda d: {})(doc)
    return {k: _dump(fmt, v) for k, v in out.items()}


def _config_cases(doc: dict[str, Any]) -> dict[str, Any]:
    c = {
        "k-zero": _set(doc, "evals.k", 0), "k-negative": _set(doc, "evals.k", -1), "k-huge": _set(doc, "evals.k", 10 ** 12),
        "k-float": _set(doc, "evals.k", 2.5), "max-turns-huge": _set(doc, "agent.max_turns", 10 ** 9),
        "max-turns-zero": _set(doc, "agent.max_turns", 0), "timeout-zero": _set(doc, "agent.timeout_seconds", 0),
        "timeout-huge": _set(doc, "agent.timeout_seconds", 1e12), "max-cost-huge": _set(doc, "agent.max_cost_usd", 1e9),
        "recall-above-one": _set(doc, "thresholds.trigger_min_recall", 2.0),
        "recall-nan": _set(doc, "thresholds.trigger_min_recall", float("nan")),
        "timeout-inf": _set(doc, "agent.timeout_seconds", float("inf")),
        "timeout-nan": _set(doc, "agent.timeout_seconds", float("nan")),
        "precision-negative": _set(doc, "thresholds.trigger_min_precision", -0.5),
        "bootstrap-huge": _set(doc, "thresholds", {**doc["thresholds"], "bootstrap_samples": 10 ** 15}),
        "bundle-bytes-huge": _set(doc, "evals.max_bundle_file_bytes", 10 ** 15),
        "root-long": _set(doc, "evals.root", LONG), "root-absolute": _set(doc, "evals.root", "/etc"),
        "root-dotdot": _set(doc, "evals.root", "../outside"), "source-long": _set(doc, "skills.source", "a/" * 3000),
        "green-not-verdict": _set(doc, "subject.green", ["PURPLE"]),
        "exit-code-bad-meaning": _set(doc, "subject.exit_codes.0", "maybe"),
        "exit-code-key-text": _set(doc, "subject.exit_codes", {**doc["subject"]["exit_codes"], "abc": "green"}),
        "unknown-adapter": _set(doc, "agent.adapter", "hal9000"),
        "real-env-bad": _set(doc, "subject", {**doc["subject"], "real_env": "A B"}),
        # [subject] is optional (DESIGN §3), but a [subject] table must be complete
        "subject-verdicts-deleted": _set(doc, "subject.verdicts", _DELETE),
    }
    return c


def _scenarios_cases(doc: dict[str, Any]) -> dict[str, Any]:
    s0 = doc["scenarios"][0]
    return {
        "dup-id": _set(doc, "scenarios", [s0, s0]),
        "unknown-skill": _set(doc, "scenarios.0.skill", "no-such-skill"),
        "unknown-fixture": _set(doc, "scenarios.0.fixture", "no-such-fixture"),
        "unknown-class": _set(doc, "scenarios.0.invocation_class", "no-such-class"),
        "fixture-dotdot": _set(doc, "scenarios.0.fixture", "../../etc"),
        "fixture-long": _set(doc, "scenarios.0.fixture", LONG),
        "bad-category": _set(doc, "scenarios.0.category", "Z"),
        "scenario-not-mapping": _set(doc, "scenarios", ["just a string"]),
        "oracle-missing-action": _set(doc, "scenarios.0", {**s0, "oracle": {"o": {"action": 99, "expect": {}}}}),
        "bad-expected-verdict": _set(doc, "scenarios.0", {**s0, "category": "B", "expected": {"verdict": "PURPLE"}}),
    }


def _truth_cases(doc: dict[str, Any]) -> dict[str, Any]:
    first = next(iter(doc["cases"]))
    return {
        "expected-not-verdict": _set(doc, f"cases.{first}.expected", "PURPLE"),
        "missing-fixture-dir": _set(doc, "cases", {**doc["cases"], "no-such-case": doc["cases"][first]}),
        "case-id-long": _set(doc, "cases", {**doc["cases"], LONG: doc["cases"][first]}),
        "expected-exit-huge": _set(doc, f"cases.{first}.expected_exit", 10 ** 40),
        "case-not-mapping": _set(doc, f"cases.{first}", [1, 2]),
    }


def _corpus_cases(doc: dict[str, Any]) -> dict[str, Any]:
    p0 = doc["prompts"][0]
    positives = [p for p in doc["prompts"] if p["expected_skill"] is not None]
    return {
        "dup-id": _set(doc, "prompts", [p0, p0]),
        "unknown-skill": _set(doc, "prompts.0.expected_skill", "no-such-skill"),
        "no-negative": _set(doc, "prompts", positives),
        "prompt-number": _set(doc, "prompts.0.prompt", 12),
    }


def _rubric_cases(doc: dict[str, Any]) -> dict[str, Any]:
    dims = doc["dimensions"]
    return {
        "five-dimensions": _set(doc, "dimensions", dims[:5]),
        "dim-seven": _set(doc, "dimensions.0.id", 7),
        "dup-dimension": _set(doc, "dimensions", [dims[0], *dims]),
        "extra-dim-field": _set(doc, "dimensions.0.surprise", 1),
    }


def _pack_cases(doc: dict[str, Any]) -> dict[str, Any]:
    key = next(iter(doc["entries"]))
    return {
        "digest-short": _set(doc, f"entries.{key}.digest", "abc"),
        "digest-upper": _set(doc, f"entries.{key}.digest", "A" * 64),
        "entry-not-mapping": _set(doc, f"entries.{key}", 5),
    }


def _baseline_cases(doc: dict[str, Any]) -> dict[str, Any]:
    d = next(iter(doc["dimensions"]))
    return {
        "rate-above-one": _set(doc, f"dimensions.{d}.rate", 1.5),
        "total-zero": _set(doc, f"dimensions.{d}.total", 0),
        "other-triple": _set(doc, "skill", "abi-consumer-impact"),
    }


def _model_script_cases(doc: dict[str, Any]) -> dict[str, Any]:
    turns = doc["turns"]
    return {
        "no-final": _set(doc, "turns", turns[:-1]),
        "final-first": _set(doc, "turns", [turns[-1], *turns]),
        "no-turns": _set(doc, "turns", []),
        "tokens-negative": _set(doc, "usage", {"input_tokens": -5, "output_tokens": 1}),
    }


def _meta_cases(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "status-unknown": _set(doc, "status", "great"),
        "kind-unknown": _set(doc, "kind", "mystery"),
        "digest-short": _set(doc, "digests", {"corpus": "abc"}),
        "observed-dotdot": _set(doc, "observed_inputs", [{"path": "../x", "sha256": "0" * 64}]),
        "k-negative": _set(doc, "k", -1),
    }


def _claim_cases(doc: dict[str, Any]) -> dict[str, Any]:
    return {"claim-string": _set(doc, "claim", "BREAKING")} if "claim" in doc else {}


SPECIFIC = {
    "config": _config_cases, "scenarios": _scenarios_cases, "ground_truth": _truth_cases,
    "trigger_corpus": _corpus_cases, "rubric": _rubric_cases, "pack": _pack_cases, "baseline": _baseline_cases,
    "model_script": _model_script_cases, "meta": _meta_cases, "claim": _claim_cases,
}


def _skill_md_cases(valid: str) -> dict[str, str]:
    head, _, body = valid[4:].partition("\n---\n")
    return {
        "fm-duplicate-name": "---\n" + head + "\nname: again\n---\n" + body,
        "fm-alias": "---\n" + head + "\nx: &a [1]\ny: *a\n---\n" + body,
        "fm-deep": "---\n" + head + "\n" + _nest(DEEP, "yaml") + "---\n" + body,
        "fm-nan": "---\n" + head + "\nsince: 2021-02-30\nx: .nan\n---\n" + body,
        "fm-surrogate": "---\n" + head + '\nx: "\\udfff"\n---\n' + body,
    }


def build(out: Path) -> int:
    """Write the corpus and its manifest under `out`; return the number of case files."""
    if out.exists():
        shutil.rmtree(out)
    cases: list[dict[str, str]] = []
    for fmt, (_, syntax, _, _) in FORMATS.items():
        valid = _valid_text(fmt)
        files: dict[str, bytes] = {k: v for k, v in syntax_cases(fmt, valid).items() if k not in ACCEPTED.get(fmt, ())}
        if syntax == "frontmatter":
            files |= {k: v.encode() for k, v in _skill_md_cases(valid).items()}
        else:
            files |= {f"schema-{k}": v.encode() for k, v in semantic_cases(fmt, valid).items()}
        for name, data in sorted(files.items()):
            path = out / fmt / f"{name}.{EXT[syntax]}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            cases.append({"file": f"{fmt}/{path.name}", "format": fmt})
    manifest = {
        "generator": "scripts/make_bad_inputs.py",
        "bundle": {"path": BUNDLE, "source": BUNDLE_SOURCE},
        "formats": {f: {"target": rel, "argv": argv, "exits": exits,
                        "reports": "findings" if f in FINDINGS else "stderr",
                        "names": rel if f in FINDINGS else Path(rel).name}
                    for f, (rel, _, argv, exits) in FORMATS.items()},
        "oversize": {f: FORMATS[f][0] for f in ("config", "scenarios", "ground_truth", "meta", "calls")},
        "cli": {name: {"argv": argv, "names": needle} for name, (argv, needle) in CLI_CASES.items()},
        "cases": cases,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return len(cases)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed corpus differs from a fresh one")
    args = parser.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp) / "bad_input")
            import filecmp

            cmp = filecmp.dircmp(Path(tmp) / "bad_input", OUT)
            stale = cmp.left_only or cmp.right_only or cmp.diff_files or any(
                c.left_only or c.right_only or c.diff_files for c in cmp.subdirs.values())
            print("bad-input corpus: " + ("STALE (run scripts/make_bad_inputs.py)" if stale else "ok"))
            return 1 if stale else 0
    n = build(OUT)
    print(f"wrote {n} bad-input files (+ manifest.json) under {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
