"""Grading: re-derive every verdict from recorded artifacts, deterministically, offline.

One direction, top to bottom: the evidence gate (`evidence`: complete, fresh, pass^k, baselines)
runs the pass (`regrade`: each bundle read once) which calls the graders (`graders/`) on a loaded
`bundle`; `golden` holds the graders to their expected failure sets. Imports `core` and `content`,
never `harness`: the graders judge what the runner recorded and must not share its code paths.
"""
