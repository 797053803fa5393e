# skill-eval targets (written by `skill-eval init`; included from the Makefile).
# skill-eval is not on PyPI: install it with `pipx install git+<skill-eval repository URL>` or
# `pip install /path/to/skill-eval-checkout`, or point SKILL_EVAL at an existing install.
SKILL_EVAL ?= $(or $(shell command -v skill-eval 2>/dev/null),$(wildcard .venv/bin/skill-eval),$(error skill-eval not found: \
  install it (pipx install git+<skill-eval repository URL>, or pip install /path/to/checkout) or run make SKILL_EVAL=/path/to/skill-eval))

.PHONY: skill-eval-pr skill-eval-pack eval-risk eval-full
skill-eval-pr:    ## every deterministic skill check that applies (no model, no network)
	$(SKILL_EVAL) pr
skill-eval-pack:  ## regenerate published skills (if any) and the evaluation pack
	{generate}$(SKILL_EVAL) pack
eval-risk:        ## record fresh evidence for the risk suite of what changed since main
	$(SKILL_EVAL) run --suite risk --base $$(git merge-base HEAD main 2>/dev/null || echo HEAD)
eval-full:
	$(SKILL_EVAL) run --suite full
