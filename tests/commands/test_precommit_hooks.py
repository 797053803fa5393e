"""The published hooks and this repository's own config stay in step."""

from pathlib import Path

from skill_eval.core import strict

REPO = Path(__file__).resolve().parents[2]


def test_hook_ids_and_entries():
    hooks = strict.load_yaml(REPO / ".pre-commit-hooks.yaml")
    ids = {h["id"]: h for h in hooks}
    assert {"skill-eval-pack", "skill-eval-check-skills"} <= set(ids)
    assert ids["skill-eval-pack"]["entry"] == "skill-eval pack --check"
    local = strict.load_yaml(REPO / ".pre-commit-config.yaml")["repos"][0]["hooks"]
    for hook in local:
        if hook["id"] in ids:
            assert hook["entry"].endswith(ids[hook["id"]]["entry"]), hook["id"]
