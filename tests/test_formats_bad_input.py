"""Every committed file format fails closed on bad input: one line naming the file, exit 1 or 2,
never a traceback. (Formats with their own focused tests — config, scenarios, ground truth, corpus,
rubric, pack, meta, bundle files — are covered in test_cli_errors, test_freshness and test_bundle.)"""

import pytest

from skill_eval.cli import main

BASELINE = "agent-evals/skills/baselines/abi-compat-review--claude-code--scripted_3dca3847550cd148fdb78d194bd58bf8a491331132f5a680daf270f8a997cd2a.json"

CASES = {
    "cli surface reference": ("agent-evals/skills/surface/abicheck-cli.json", '{"schema_version": 1, "schema_version": 1}',
                              ["check-skills"], "duplicate JSON key"),
    "cli surface unknown field": ("agent-evals/skills/surface/abicheck-cli.json",
                                  '{"schema_version": 1, "tool": "abicheck", "version": "0.7.0", "commands": {}, "extra": 1}',
                                  ["check-skills"], "abicheck-cli.json"),
    "evidence pending": ("agent-evals/skills/evidence-pending.yaml", "schema_version: 1\npending: []\nsurprise: true\n",
                         ["evidence"], "evidence-pending.yaml"),
    "baseline": (BASELINE, '{"truncated": ', ["evidence"], "invalid JSON"),
    "golden manifest": ("agent-evals/skills/golden/manifest.yaml", "schema_version: 1\nschema_version: 1\n",
                        ["golden"], "duplicate key"),
    "model script": ("agent-evals/skills/model-scripts/bad.yaml", "schema_version: 1\nturns: [\n",
                     ["run", "review-removed-export", "--agent", "scripted", "--model-server",
                      "scripted:agent-evals/skills/model-scripts/bad.yaml", "--no-trigger", "-k", "1", "--run-id", "bad"], "bad.yaml"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_clear_line(repo_copy, capsys, name):
    rel, text, argv, needle = CASES[name]
    (repo_copy / rel).write_text(text)
    rc = main([argv[0], "--root", str(repo_copy), *argv[1:]])
    captured = capsys.readouterr()
    assert rc in (1, 2), (rc, captured)
    both = captured.out + captured.err
    assert "Traceback" not in both and "internal error" not in both, both
    assert needle in both, both
