"""Checks: the static layers (L0 structure and CLI surface, L1s trigger separation).

Read a host's content and the installed subject's CLI; never a recorded bundle. Imports `core`
and `content` only.
"""
