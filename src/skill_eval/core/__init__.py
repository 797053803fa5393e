"""Core: the strict readers and writers every other layer stands on.

Errors and exit codes, closed vocabularies, strict JSON/YAML/TOML readers, record versions
(`formats`), schema validation, race-free repository I/O (`fsio`), digests (`hashing`), output
batching and the per-check memo. Imports nothing of skill-eval outside `core`.
"""
