"""Interop: other tools' formats in and out (skill-creator's evals.json, Harbor task folders).

Imports `core` and `content` only.
"""
