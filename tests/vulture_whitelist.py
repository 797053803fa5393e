"""Names the dead-code check (vulture, `make lint`) cannot see used, each with why. Patterns for whole
protocols (the http.server handler API, rule functions looked up by name, classes loaded from a table)
are `ignore_names` in pyproject.toml's [tool.vulture]; this file holds the single names.

Not a test module (pytest collects test_*.py only); vulture reads it as code that uses these names.
"""

from skill_eval.commands import judge, local_paths
from skill_eval.content import evals
from skill_eval.core import strict, vocab
from skill_eval.grading import golden, readers, regrade
from skill_eval.harness import modelserver
from skill_eval.harness.runner import normalize, recorder, sandbox, secrets
from skill_eval.reporting import lift

# The closed vocabularies: tests/core/test_vocab.py holds each Literal equal to its schema's enum.
vocab.InputKind, vocab.OutputKind, vocab.AdapterTier, vocab.UncertaintyKind, vocab.Comparison, lift.VERDICTS
# Record fields read by name: the rubric's grader/judge_prompt and a truth case's expected_exit are schema
# fields that content tests read back; a JudgeEndpoint's from_config says where its values came from.
evals.Dimension.grader, evals.Dimension.judge_prompt, evals.TruthCase.expected_exit, judge.PanelSettings.from_config
# An action's digests and trees, written with dataclasses.asdict into facts.json (runner/sandbox.py).
sandbox.ActionFact.stdout_sha256, sandbox.ActionFact.stderr_sha256, sandbox.ActionFact.tree_before
sandbox.ActionFact.tree_after, sandbox.ActionFact.git_after, sandbox.ActionFact.validation
# Library functions the tests and the bench scripts drive directly (the production path reaches the same code
# through a wider entry point).
local_paths.home_hits, normalize.check_evidence, recorder.record_call, sandbox.Sandbox.for_scenario
secrets.assert_no_secrets, golden.file_input, golden.envelope, strict._careful_parse, regrade.stale_label
readers.Reader.informational
# Dead, but in the harness, whose every byte is the tool-harness digest the committed evidence is bound to:
# removed with the next re-record of all evidence (issue 34), not before.
sandbox.Sandbox.run_dir, secrets.Scanner.too_short, modelserver.KIND_FOR_ADAPTER
