"""Harness: recording evidence with a real agent CLI inside a sandbox.

The runner (`runner/`: plan, sandbox, recorder, bundle writer), the agent adapters (`adapters/`),
the scripted model servers (`modelserver/`) and the in-sandbox shim (`shim`). Imports `core` and
`content`, never `grading`: the runner records, it does not judge. Its source is part of the
harness digest (`content.pack.TOOL_HARNESS`): an edit here makes recorded evidence stale.
"""
