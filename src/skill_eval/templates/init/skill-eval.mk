# skill-eval targets (written by `skill-eval init`; included from the Makefile).
# skill-eval is not on PyPI: install it with `pipx install git+<skill-eval repository URL>` or
# `pip install /path/to/skill-eval-checkout`, or point SKILL_EVAL at an existing install.
# {mk_install}
SKILL_EVAL ?= $(or $(shell command -v skill-eval 2>/dev/null),$(wildcard .venv/bin/skill-eval),$(error skill-eval not found: \
  install it (pipx install git+<skill-eval repository URL>, or pip install /path/to/checkout) or run make SKILL_EVAL=/path/to/skill-eval))

.PHONY: skill-eval-pr skill-eval-pack eval-risk eval-full
skill-eval-pr:    ## every deterministic skill check that applies (no model, no network)
	$(SKILL_EVAL) pr
skill-eval-pack:  ## regenerate published skills (if any) and the evaluation pack
	{generate}$(SKILL_EVAL) pack
# eval-risk takes the agent and the model, so the flow can be rehearsed offline before spending credits:
# AGENT, MODEL, MODEL_SERVER (scripted:DIR), BASE_URL (a local OpenAI-style server), AGENT_BINARY, ARM,
# RUN_ID, K, JOBS, BASE (default: the merge-base with main), EVAL_ARGS (anything else `run` takes).
# Unset = the config's. Scripted and local-endpoint runs are labelled so and never count for a release.
EVAL_RISK_ARGS = $(if $(AGENT),--agent $(AGENT)) $(if $(MODEL),--model $(MODEL)) \
  $(if $(MODEL_SERVER),--model-server $(MODEL_SERVER)) $(if $(BASE_URL),--base-url $(BASE_URL)) \
  $(if $(AGENT_BINARY),--agent-binary $(AGENT_BINARY)) $(if $(ARM),--arm $(ARM)) $(if $(RUN_ID),--run-id $(RUN_ID)) \
  $(if $(K),-k $(K)) $(if $(JOBS),-j $(JOBS)) $(EVAL_ARGS)
eval-risk:        ## record fresh evidence for the risk suite of what changed since main (AGENT=, MODEL=, MODEL_SERVER=, ...)
	$(SKILL_EVAL) run --suite risk --base $(if $(BASE),$(BASE),$$(git merge-base HEAD main 2>/dev/null || echo HEAD)) $(strip $(EVAL_RISK_ARGS))
	$(SKILL_EVAL) evidence compact   # raw streams gzip, identical captured artifacts once (seals stay valid)
eval-full:
	$(SKILL_EVAL) run --suite full
	$(SKILL_EVAL) evidence compact
