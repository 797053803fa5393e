"""Content: what a host repository declares, and the digests that bind evidence to it.

The config, skills and their published copies, the eval files (scenarios, ground truth, trigger
corpus, rubric: `evals`), the registry's rules, the claim format an agent writes, the pack of
content digests, freshness and suite selection. Imports `core` only. Both halves above it —
`grading` (judging what was recorded) and `harness` (recording it) — read content from here.
"""
