"""`skill-eval explain [TERM]`: the vocabulary of skill-eval, in one place.

Without TERM, lists every term; with one, prints its explanation (case-insensitive; a
prefix that names one term is enough). The same text is the `skill-eval --help` epilog.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from skill_eval.core.errors import SkillEvalError
from skill_eval.core.output import emit

if TYPE_CHECKING:
    from skill_eval.checks.rules import RuleDoc

CORPUS_FORMAT = """\
corpus format — <evals root>/trigger_corpus.yaml (schema: trigger_corpus.schema.json):

  schema_version: 1
  prompts:
    - id: pos-fix-flaky-test          # a-z, 0-9 and '-', unique
      prompt: "CI fails on test_upload about one run in five, can you find out why?"
      expected_skill: systematic-debugging   # a skill folder name
    - id: neg-rename-variable
      prompt: "Rename userId to accountId across the repo."
      expected_skill: null             # a negative: no skill should claim it (negatives are required)
      notes: "optional free text"
      draft: true                      # drafted by `init`: not counted until you edit it and delete this line

Write prompts the way your users ask (their words, not the description's); give each skill a few
positives and the corpus several negatives. `check-triggers --explain` shows why each one matched."""

TERMS: dict[str, str] = {
    "L0": "structural check (`check-skills`): Agent Skills frontmatter rules, every link and every path the skill "
          "points the agent at (\"See references/x.md\", `python scripts/x.py`; never a prose example) resolves "
          "inside the published skill, subject commands/flags are real (with a [subject]), published copies are "
          "byte-identical to the source. Findings carry stable ids (`explain suppress`). Runs in pre-commit and `pr`.",
    "L1s": "static trigger check (`check-triggers`): BM25 of each labelled corpus prompt against every skill "
           "description; predicts a skill only with enough matched terms, gates precision/recall/negative accuracy. "
           "`--explain` shows the matched terms. On when <evals>/trigger_corpus.yaml exists.",
    "L1l": "live trigger evidence: real agents given each corpus prompt, recorded off-CI as trigger bundles and "
           "graded on whether the right skill (or none) activated.",
    "L2": "behaviour: recorded runs of a skill-equipped agent on scenarios, graded deterministically on the "
          "dimensions from the bundle's artifacts (never the agent's word).",
    "L3": "lift: arms x k runs, paired by scenario, with a bootstrap CI and a sign test; does the skill help, at "
          "what cost.",
    "L4": "meta check (`golden`): golden good and bad bundles must grade to exactly their expected failure sets, so "
          "a grader change that stops catching a bad answer fails. On when <evals>/golden/manifest.yaml exists.",
    "arm": "what the agent is given in a run: skill-agent (skill offered, progressive disclosure), skill (body "
           "injected), docs, baseline (no skill), released:<ref> (a prior release's skill bytes), siblings (every "
           "skill installed).",
    "dimension": "one graded property of a behavioural run (rubric.yaml): 1 workflow chosen, 2 uncertainty "
                 "preserved (zero tolerance), 3 evidence obtained, 4 root cause and 5 remediation (judged, release), "
                 "6 no claim without evidence (zero tolerance). 2 and 6 apply to skills with a verdict [subject].",
    "pack": "skill-eval-pack.json: committed content digests (per skill, scenario, corpus, harness) that freshness "
            "compares evidence against. `make pack` / `skill-eval pack` regenerates it; `pack --check` fails when stale.",
    "freshness": "a bundle is fresh when every digest in its meta.json equals the current pack; stale evidence fails "
                 "exactly like missing evidence.",
    "evidence": "transcript bundles under <evals>/evidence/, recorded by `skill-eval run` and re-graded by `pr`; "
                "the evidence gate demands the complete expected set for the risk suite.",
    "pending": "evidence-pending.yaml lists expected evidence not recorded yet, each with a reason: printed loudly, "
               "excuses only a missing bundle in the merge stage, and can only shrink. Stale evidence being re-recorded "
               "goes in evidence-rerecord.yaml (`skill-eval freshness --defer REASON`): bound to the current digest, "
               "expiring within 30 days, merge stage only, listed as pending in every summary.",
    "subject": "an optional CLI your skills drive ([subject] in skill-eval.toml; only `name` is required). Its optional "
               "verdict profile (verdict ladder, exit codes, report fields; `verdict_skills` to limit it to some skills) "
               "makes dimensions 2 and 6 possible; without one, scenarios are category `oracle`, graded by their "
               "command oracle over runner-recorded facts (`skill-eval registry` checks them). A `surface` reference "
               "enables the command/flag check.",
    "tier": "how activation was observed: tier 1 the agent reported it (Claude Skill tool, Gemini activate_skill), "
            "tier 2 only reads of the installed skill files (Codex), manual otherwise.",
    "adopt": "`skill-eval init PATH` finds the repository's SKILL.md folders, writes a config for them (no subject, no "
             "published copy unless one exists), nox/Make/pre-commit entries on the real paths and the pack; `pr` then "
             "runs only the checks that apply and names how to turn on each of the others.",
    "k": "runs per (scenario, arm) (default 3); zero-tolerance dimensions use pass^k: every run must pass.",
    "oracle": "a scenario's command oracle: `actions` the runner executes after the agent (after the fixture's "
              "seed.json recipe and `setup` before it), and assertions over the facts it records (facts.json): "
              "command-exit-zero, validation-pass, git-worktree-clean, git-managed-paths-only, file-contains, "
              "git-head-unchanged. A "
              "category `oracle` scenario is graded by it alone (no verdict: dimensions 2, 3 and 6 do not apply). A "
              "receipt that does not match the declared actions or seed fails the bundle; a `zero_tolerance` "
              "assertion must hold in all k runs; others are baseline-gated as the `oracle` rate.",
    "corpus": CORPUS_FORMAT,
    "suppress": "an L0 finding prints its stable id in [brackets] (rule:file:subject, no line number). Accept one with "
                "a reason: inline, on its line or the line before, `<!-- skill-eval: ignore[RULE] why it is fine -->`; "
                "in the config, `[[checks.ignore]]` id = \"ID\" (fnmatch wildcards), reason = \"...\"; or adopt a "
                "repository with known debt by `check-skills --write-baseline` (only new findings fail after it).",
    "publish": "[checks] publish (per source: [[skills.sources]] publish): `plugin` when the skills ship together, so "
               "a link into a sibling skill is a portability warning; `standalone` when each skill is installed alone, "
               "so such a link is an error. `init` picks standalone when skills are installed one by one (marketplace "
               "entries that are single skills, a licence or manifest in most skill folders, README install lines naming "
               "single skills), else plugin when it finds a plugin manifest (.claude-plugin/ ...) or skills linking to "
               "their siblings, else standalone; it prints why and the line to change.",
}


# check-skills' named rules: `explain rules` lists them, `explain RULE` prints one's page (not in the --help
# epilog, which cli.py keeps as a literal)
RULES_TERM = ("check-skills' named rules beyond structure, each with a page (`skill-eval explain RULE`) and suppressible "
             "like any finding (`explain suppress`): name-reserved, file-unreferenced, reference-no-toc, command-unpinned "
             "(checks.hygiene, warnings), and the security rules kept as data in checks/security_rules.yaml "
             "(security-*: instruction overrides, hidden Unicode, encoded payloads run, curl | sh, credential and "
             "environment reads, secrets sent to a URL). An error-level security finding fails check-skills, pr and the "
             "release's security gate.")


def epilog() -> str:
    """The --help epilog: one line per term."""
    return "terms (`skill-eval explain TERM` for more): " + ", ".join(TERMS)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("term", nargs="?", default=None, help="the term to explain (default: list all)")


def rule_pages() -> dict[str, RuleDoc]:
    """Every named rule's page: the hygiene rules, and the security rules from their data file."""
    from skill_eval.checks import rules, security

    out = dict(rules.HYGIENE)
    for rule in security.load_rules():
        out[rule.id] = rules.RuleDoc(rule.id, rule.severity, rule.message, rule.why, rule.fix)
    return out


def lookup(term: str) -> tuple[str, str]:
    by_lower = {k.lower(): k for k in TERMS}
    t = term.lower()
    if t == "rules":
        return "rules", RULES_TERM + " The rules: " + ", ".join(sorted(rule_pages())) + "."
    if t in by_lower:
        return by_lower[t], TERMS[by_lower[t]]
    hits = [k for low, k in by_lower.items() if low.startswith(t)]
    if len(hits) == 1:
        return hits[0], TERMS[hits[0]]
    pages = rule_pages()  # a rule id: its page
    if t in pages:
        return t, pages[t].page()
    raise SkillEvalError(f"no term {term!r}" + (f" (ambiguous: {', '.join(hits)})" if hits else ""),
                         fix=f"use one of {', '.join(TERMS)}, or a rule id (`skill-eval explain rules`)")


def run(args: argparse.Namespace) -> int:
    if args.term is None:
        terms = {**TERMS, "rules": RULES_TERM}
        emit(args, [f"{k:10} {v}" for k, v in terms.items()], {"terms": terms})
        return 0
    name, text = lookup(args.term)
    emit(args, [f"{name}: {text}"], {"term": name, "text": text})
    return 0
