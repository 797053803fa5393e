# Thin targets over nox; each bootstraps .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
NOX := $(VENV)/bin/nox

.PHONY: pr pr-example eval-example test lint typecheck e2e e2e-local e2e-local-smoke calibrate-local pack generate eval-risk eval-full eval-dogfood scorecard scorecard-png release release-rehearsal clean

$(VENV)/.bootstrapped: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet nox==2026.10.20 -e '.[dev]'
	touch $@

pr: $(VENV)/.bootstrapped   ## the main job: every pr-profile check on this repository and on the example host
	$(NOX) -s pr pr-example

pr-example: $(VENV)/.bootstrapped   ## the pr profile of examples/towncrier-notes only
	$(NOX) -s pr-example

test: $(VENV)/.bootstrapped   ## the test suite
	$(NOX) -s tests

lint: $(VENV)/.bootstrapped
	$(NOX) -s lint

typecheck: $(VENV)/.bootstrapped   ## mypy --strict on src/skill_eval
	$(NOX) -s typecheck

e2e: $(VENV)/.bootstrapped   ## real agent CLIs against scripted model servers
	$(NOX) -s e2e

e2e-local: $(VENV)/.bootstrapped   ## a real local model (llama.cpp + SmolLM2-135M, offline) through run + grade
	$(NOX) -s e2e-local

e2e-local-smoke: $(VENV)/.bootstrapped   ## the short e2e-local CI runs (2 bundles; cold llama.cpp build ~10 min)
	$(NOX) -s e2e-local -- -k smoke

calibrate-local: $(VENV)/.bootstrapped   ## re-record the A/A calibration (agent-evals/skills/calibration/; refused when its runs do not finish)
	$(NOX) -s calibrate-local

generate: $(VENV)/.bootstrapped   ## regenerate the published skill trees
	$(VENV)/bin/skill-eval generate

pack: $(VENV)/.bootstrapped   ## regenerate the published trees and the evaluation pack
	$(VENV)/bin/skill-eval generate
	$(VENV)/bin/skill-eval pack

# eval-risk takes the agent and the model, so the maintainer flow can be rehearsed offline before spending
# credits (README, "Rehearse offline"): AGENT, MODEL, MODEL_SERVER (scripted:DIR), BASE_URL (a local
# OpenAI-style server), AGENT_BINARY, ARM, RUN_ID, K, JOBS, BASE (default: the merge-base with main) and
# EVAL_ARGS (anything else `skill-eval run` takes, e.g. --dry-run or scenario ids). Unset = the config's.
EVAL_RISK_ARGS = $(if $(AGENT),--agent $(AGENT)) $(if $(MODEL),--model $(MODEL)) \
  $(if $(MODEL_SERVER),--model-server $(MODEL_SERVER)) $(if $(BASE_URL),--base-url $(BASE_URL)) \
  $(if $(AGENT_BINARY),--agent-binary $(AGENT_BINARY)) $(if $(ARM),--arm $(ARM)) $(if $(RUN_ID),--run-id $(RUN_ID)) \
  $(if $(K),-k $(K)) $(if $(JOBS),-j $(JOBS)) $(EVAL_ARGS)
eval-risk: $(VENV)/.bootstrapped   ## record fresh evidence for the risk suite of what changed since main (AGENT=, MODEL=, MODEL_SERVER=, BASE_URL=, ...)
	$(NOX) -s eval-risk -- --base $(if $(BASE),$(BASE),$$(git merge-base HEAD main 2>/dev/null || echo HEAD)) $(strip $(EVAL_RISK_ARGS))

eval-full: $(VENV)/.bootstrapped
	$(VENV)/bin/skill-eval run --suite full
	$(VENV)/bin/skill-eval evidence compact

eval-dogfood: $(VENV)/.bootstrapped   ## re-record this repository's committed evidence (skill-agent and baseline arms): real Claude Code CLI, scripted model turns
	$(VENV)/bin/python scripts/install_agent_clis.py
	$(VENV)/bin/skill-eval run --suite risk --agent claude-code --model-server scripted:agent-evals/skills/model-scripts/careful -j 2
	$(VENV)/bin/skill-eval run --suite risk --arm baseline --agent claude-code --model-server scripted:agent-evals/skills/model-scripts/baseline -j 2
	$(VENV)/bin/skill-eval evidence compact   # docs/EVIDENCE_STORAGE.md: what is committed, ~20 KB a bundle

EXAMPLE := examples/towncrier-notes
eval-example: $(VENV)/.bootstrapped   ## re-record the example host's committed evidence: real Claude Code CLI, scripted model turns
	$(VENV)/bin/python scripts/install_agent_clis.py
	cd $(EXAMPLE) && $(CURDIR)/$(VENV)/bin/skill-eval run --suite full --agent claude-code \
	  --agent-binary $(CURDIR)/.cache/agent-clis/node_modules/.bin/claude \
	  --model-server scripted:agent-evals/skills/model-scripts/careful -j 2
	cd $(EXAMPLE) && $(CURDIR)/$(VENV)/bin/skill-eval pack
	cd $(EXAMPLE) && $(CURDIR)/$(VENV)/bin/skill-eval baseline update
	cd $(EXAMPLE) && $(CURDIR)/$(VENV)/bin/skill-eval evidence compact

# --report-only: this target renders the report (CI's artefact); `skill-eval scorecard` alone exits 1 on a failed
# cost gate. The committed scripted evidence fails it (skill-agent costs more than baseline), printed and labelled.
scorecard: $(VENV)/.bootstrapped   ## scorecard.json / .md / .html of the committed evidence, in build/scorecard/ (informational)
	$(VENV)/bin/skill-eval scorecard --out build/scorecard --report-only

# The picture in docs/ (docs/SCORECARD.md): headless Chromium's full-page screenshot of the committed evidence's scorecard,
# with docs/scorecard.png.json naming the sha256 of the scorecard.json it shows (tests/reporting/scorecard/test_scorecard_png.py
# fails when that is no longer the current one: re-run this after re-recording the evidence or changing the scorecard).
scorecard-png: $(VENV)/.bootstrapped   ## regenerate docs/scorecard.png (+ .json: the digest of the scorecard.json it was rendered from)
	$(VENV)/bin/python scripts/scorecard_png.py

release: $(VENV)/.bootstrapped   ## sealed release stage + worksheet in build/release/dogfood/ (WORKSHEET=... to resume)
	$(NOX) -s release $(if $(WORKSHEET),-- --worksheet $(WORKSHEET))

# What CI runs: stage -> resume with the committed example worksheet -> verify, signed with a throwaway key
# (CI holds none; the principal reads test-signed@skill-eval.invalid). Fails unless the outcome is INCOMPLETE (exit 1)
# for the scripted evidence's reasons. After re-recording the evidence: python scripts/release_rehearsal.py --write-worksheet
release-rehearsal: $(VENV)/.bootstrapped   ## the dogfood release end to end (stage, resume, verify), asserting INCOMPLETE
	$(VENV)/bin/python scripts/release_rehearsal.py

clean:
	rm -rf .nox .pytest_cache .ruff_cache .mypy_cache
