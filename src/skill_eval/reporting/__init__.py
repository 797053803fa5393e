"""Reporting: numbers and documents built from graded evidence.

`lift` (paired, per-scenario lift with intervals, sign test and the A/A floor), the scorecard
(`scorecard/`) and the sealed release flow (`release/`). May import every layer below it.
"""
