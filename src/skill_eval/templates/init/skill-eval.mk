# skill-eval targets (scaffolded by `skill-eval init`; included from the Makefile).
SKILL_EVAL ?= skill-eval

.PHONY: skill-eval-pr skill-eval-pack eval-risk eval-full
skill-eval-pr:    ## every deterministic skill check (no model, no network)
	$(SKILL_EVAL) pr
skill-eval-pack:  ## regenerate published skills and the evaluation pack
	$(SKILL_EVAL) generate && $(SKILL_EVAL) pack
eval-risk:        ## record fresh evidence for the risk suite of what changed since main
	$(SKILL_EVAL) run --suite risk --base $$(git merge-base HEAD main 2>/dev/null || echo HEAD)
eval-full:
	$(SKILL_EVAL) run --suite full
