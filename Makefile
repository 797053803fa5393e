# Thin targets over nox; each bootstraps .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
NOX := $(VENV)/bin/nox

.PHONY: pr pr-example eval-example test lint typecheck e2e e2e-local e2e-local-smoke calibrate-local pack generate eval-risk eval-full eval-dogfood scorecard release clean

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

calibrate-local: $(VENV)/.bootstrapped   ## re-record the A/A calibration (agent-evals/skills/calibration/)
	$(NOX) -s calibrate-local

generate: $(VENV)/.bootstrapped   ## regenerate the published skill trees
	$(VENV)/bin/skill-eval generate

pack: $(VENV)/.bootstrapped   ## regenerate the published trees and the evaluation pack
	$(VENV)/bin/skill-eval generate
	$(VENV)/bin/skill-eval pack

eval-risk: $(VENV)/.bootstrapped   ## record fresh evidence for the risk suite of what changed since main
	$(VENV)/bin/skill-eval run --suite risk --base $$(git merge-base HEAD main 2>/dev/null || echo HEAD)

eval-full: $(VENV)/.bootstrapped
	$(VENV)/bin/skill-eval run --suite full

eval-dogfood: $(VENV)/.bootstrapped   ## re-record this repository's committed evidence (skill-agent and baseline arms): real Claude Code CLI, scripted model turns
	$(VENV)/bin/python scripts/install_agent_clis.py
	$(VENV)/bin/skill-eval run --suite risk --agent claude-code --model-server scripted:agent-evals/skills/model-scripts/careful -j 2
	$(VENV)/bin/skill-eval run --suite risk --arm baseline --agent claude-code --model-server scripted:agent-evals/skills/model-scripts/baseline -j 2

EXAMPLE := examples/towncrier-notes
eval-example: $(VENV)/.bootstrapped   ## re-record the example host's committed evidence: real Claude Code CLI, scripted model turns
	$(VENV)/bin/python scripts/install_agent_clis.py
	cd $(EXAMPLE) && $(CURDIR)/$(VENV)/bin/skill-eval run --suite full --agent claude-code \
	  --agent-binary $(CURDIR)/.cache/agent-clis/node_modules/.bin/claude \
	  --model-server scripted:agent-evals/skills/model-scripts/careful -j 2
	cd $(EXAMPLE) && $(CURDIR)/$(VENV)/bin/skill-eval pack
	cd $(EXAMPLE) && $(CURDIR)/$(VENV)/bin/skill-eval baseline update

scorecard: $(VENV)/.bootstrapped   ## scorecard.json / .md / .html of the committed evidence, in build/scorecard/
	$(VENV)/bin/skill-eval scorecard --out build/scorecard

release: $(VENV)/.bootstrapped   ## sealed release stage + worksheet in build/release/dogfood/ (WORKSHEET=... to resume)
	$(NOX) -s release $(if $(WORKSHEET),-- --worksheet $(WORKSHEET))

clean:
	rm -rf .nox .pytest_cache .ruff_cache .mypy_cache
