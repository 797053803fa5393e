"""Improving skills from failing cases (the release contract's step 5): an agent proposes, a human applies.

`improve.cases` gathers the failing cases (the trigger check's mispredictions, or named case ids) and
what the agent may be shown of them; `improve.sandbox` runs an agent through the harness's adapters and
OS sandbox on a copy of the skill sources only; `improve.patch` reads that copy back through descriptors,
refuses any change outside the skill source folders (and any symlink), and renders a `git apply`-able
patch; `improve.propose` ties them together and writes `<out>/proposal.patch` + `<out>/proposal.json`.
Nothing here writes into the repository: applying a proposal is a human's `git apply`.

Layer: rank 3 (imports core, content, checks and harness; imported only by commands).
"""
