"""L1s static trigger check: do the descriptions cover *and* separate the labelled prompts?

Method (documented so a failure can be reasoned about): Okapi BM25 (k1=1.2, b=0.75)
of each corpus prompt against each skill's `name + description`, over normalized
tokens (lower-cased, split on non-alphanumerics, stop-words dropped, one stemmer for a word and its
inflections: image/images/imaging, merge/merging/merged). A description's negated clauses ("Don't use
for Firestore, Auth ...") are left out: the words it excludes claim nothing. Document frequencies come
from the skill descriptions plus a fixed set of generic task requests (BACKGROUND), so words every
request uses ("write", "code", "fix", "log", "check") carry little weight, and so a term's weight barely
depends on how many skills the repository has (the background outnumbers small skill sets). A prompt
that says a skill's whole name as a phrase ("grill me" for grill-me, "tdd") adds the name as one more
matched term (`named:<skill>`, weighted NAME_BONUS idfs of the name's rarest word).

A prompt is predicted to the top-scoring skill when (1) its score reaches
`trigger_min_score`, (2) it beats the runner-up by `trigger_min_margin` (an exact tie is reported as
a tie: the descriptions do not separate the prompt, whatever the margin), and (3) enough
distinct terms of the prompt match that skill's description: `min_terms(n_skills)`, which
adapts to the number of skills. Few descriptions (< MANY_SKILLS) cover few words, so one
shared term is evidence; many descriptions cover most common words, so a single shared
word is coincidence and a prediction needs MIN_TERMS (a prompt with at most MIN_TERMS
content words still needs only one, and so does a distinctive word of the skill's own name that no
other description or background request uses, like "pdf" for a skill named pdf; a common word
(COMMON: "action", "git", "finish", "review") is no such evidence). Just MIN_TERMS matched words that
all occur in the BACKGROUND requests and none in the skill's name ("file", "environment") are
coincidence too. Otherwise the prompt is predicted to no skill.
Calibration: with these defaults a 17-skill, 50-prompt corpus shaped like public skills
repositories (tests/data/triggers17/) classifies every prompt correctly, where the
single-term rule claimed 9 of its 14 negatives on one generic word each ("write", "log",
"commit", "plan", "fix"). Negatives count: a description
that claims everything pulls negative prompts and fails negative accuracy and precision.
`--explain` prints, per prompt, the matched terms and their weights for the top skills and for the
expected skill (always, wherever it ranks), and the prompt's words when no term matched.
A missed positive whose words its expected skill's description lacks (fewer matched terms than a
prediction needs) is a `trigger-description-gap` finding at that SKILL.md's `description:` line,
naming the prompt's missing words, most specific first: what to add to the description, not only
that the check failed.

Fused scorer (`[triggers] scorer = "fused"`, extra skill-eval[semantic]): BM25 misses paraphrase
("500 only in production" shares no term with "Use when encountering any bug"), so each skill also
gets a semantic score from a packaged embedding model (skill_eval.checks.semantic): the cosine of the
sentence vectors and a token-level (late-interaction) match of the description's words to the
prompt's, each minus the skill's prior (its mean over the BACKGROUND requests). Per skill:
`semantic = (1 - token_weight) * cosine + token_weight * tokens` and
`fused = (1 - semantic_weight) * bm25' / (bm25' + bm25_saturation) + semantic_weight * semantic`,
where bm25' is the BM25 score when it rests on enough matched terms (the min-terms rule above, without
its own-name exception) and 0 when it does not (one shared generic word is no evidence in a large
skill set).
A prompt goes to the top fused skill when that reaches `fused_min_score` and beats the runner-up by
`fused_min_margin`; otherwise to no skill. Only name and description are read, as an agent choosing a
skill reads them; the SKILL.md body is not. Defaults (semantic_weight 0.85, token_weight 0.7,
bm25_saturation 16, fused_min_score 0.08, fused_min_margin 0) and how they were chosen and held out:
docs/TRIGGERS.md and tests/data/triggers/README.md.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skill_eval.checks.findings import Finding  # the one finding record, L0 and triggers alike
from skill_eval.content.config import Config, Triggers
from skill_eval.content.evals import TriggerPrompt

K1 = 1.2
B = 0.75
STOP = frozenset(
    """a an the and or but if then else of to in on for with without from by at as is are was were be been being
    this that these those it its i me my we our you your he she they them their what which who whom whose when where
    why how can could should would will shall may might must do does did done have has had not no yes so than too very
    just also into onto over under about after before between through during up down out off again further once here
    there all any both each few more most other some such only own same can't don't please want need help tell let us
    use using used make sure get got one two new old""".split()
)
# Generic engineering requests: only used for document frequencies (see module docstring).
BACKGROUND = (
    "check compatibility of a change before release and report the result",
    "review a pull request for breaking changes and version bumps",
    "upgrade a dependency version and check what breaks",
    "write a report of test results for the release",
    "compare two versions of a file and summarize the differences",
    "debug a failing build in continuous integration",
    "check an API for breaking changes between versions",
    "plan a release with semantic versioning",
    "migrate a database schema and check data compatibility",
    "analyze logs to find the root cause of a failure",
    "review code quality and suggest fixes",
    "generate documentation for a library and its functions",
    "check which applications are affected by a change",
    "run tests across several platforms and targets",
    "write code to fix a bug and add a test for it",
    "explain what this code does line by line",
    "add a new feature to the project and update the docs",
    "create a new file and write the output to it",
    "log the error message and retry the failed request",
    "read the input file and print a summary",
    "make a plan for the week and list the tasks",
    "write a short summary of the text",
    "find and fix the problem in this script",
    "build and run the project on my machine",
    "answer a question about the data in this table",
    "draft a message to the team about the change",
    "convert this file to another format",
    "search for information and give me the answer",
    "set up the development environment and install the tools",
    "improve the performance of this function",
)
MIN_TERMS = 2
MANY_SKILLS = 5


def min_terms(n_skills: int) -> int:
    """Distinct matched terms a prediction needs, for a repository with n_skills skills."""
    return MIN_TERMS if n_skills >= MANY_SKILLS else 1


def tokenize(text: str) -> list[str]:
    out = []
    for tok in re.findall(r"[a-z0-9]+", text.lower()):
        if tok in STOP or len(tok) < 2:
            continue
        out.append(stem(tok))
    return out


_VOWELS = frozenset("aeiou")
_KEEP = frozenset({"embed", "shred", "hundred"})  # words ending in -ed that are no past tense


@functools.lru_cache(maxsize=65536)
def stem(tok: str) -> str:
    """One stem for a word and its inflections: image/images/imaging -> imag, merge/merging/merged -> merg,
    library/libraries -> librari, branch/branches -> branch, string/strings -> string (plural first, then
    -ing/-ed, then a final e, or y -> i). Words of 3 letters or fewer are kept as they are. Known limit: a
    consonant doubled before -ing/-ed stays (tagging -> tagg, tag -> tag); undoubling it was measured and
    changed no corpus figure but let "tag it" claim "before tagging a release" in a 3-skill repository.
    The previous stemmer split image (image) from images (imag) and merge from merging (merg)."""
    if len(tok) <= 3 or not tok.isalpha() or tok in _KEEP:
        return tok
    w = tok
    if w.endswith("ies") and len(w) >= 5:
        w = w[:-3] + "i"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("es") and w[:-2].endswith(("s", "x", "z", "ch", "sh")) and not w.endswith("ses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) >= 4:
        w = w[:-1]
    if w in _KEEP:
        return w
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("eed") \
                and any(c in _VOWELS for c in w[: -len(suffix)]):
            w = w[: -len(suffix)]
            break
    if w.endswith("e") and len(w) >= 4:
        w = w[:-1]
    elif w.endswith("y") and len(w) >= 4 and w[-2] not in _VOWELS:
        w = w[:-1] + "i"
    return w


# Words too common in requests for a skill name that contains them to claim a prompt on that word alone
# (the name shortcut below): everyday verbs and nouns of software work. "pdf", "docx", "crashlytics",
# "brainstorm" are not in it; "action", "git", "finish", "review", "test" are.
COMMON = frozenset(stem(w) for w in """
    action actions add agent agents analysis analyze api app apps application apply architecture article ask audit
    automate automation basic basics best branch bug bugs build builder cache change check ci clean cli client cloud
    code codebase command commit config configuration configure connect content context convert copy create custom
    data database debug deploy deployment design develop development diff doc docs document documentation edit
    error example execute file files find finish fix flow format frontend backend generate get git github guide
    handle help image import improve install integration issue issues job key learn lint list load log make manage
    management message migrate migration model module monitor new note open optimize output package page parallel
    pattern patterns performance plan plugin policy post practice practices process production project pull push
    query quality read record refactor release report repo repository request research resource resources review
    rule rules run scan schema script search security server service session set setup share site skill skills
    source spec start state style system task tasks team template test testing tests text tool tools track update
    upload use user validate verify version view web website work workflow write writing
    remote local environment day week time home point people world money price life email phone call meeting
    question answer idea plan list table number line name word page book story game music photo video picture
""".split())
NAMED = "named:"  # the pseudo-term of a prompt that names a skill: "named:grill-me"
NAME_BONUS = 2.0  # its weight, in idfs of the name's rarest word
_NEGATED = re.compile(
    r"(?i)(?:\b(?:do not|don't|never|not) use (?:this skill |it |this )?(?:for|when|with|if|on|to)\b"
    r"|(?:^|(?<=[.;:]\s))not for\b)[^.;]*")


def in_scope(description: str) -> str:
    """The description without its negated clauses ("Don't use for Firebase Hosting, Auth, ..."): words a
    description names to exclude must not claim the prompts that use them."""
    return _NEGATED.sub(" ", description)


@dataclass
class Scorer:
    docs: dict[str, list[str]]
    df: Counter[str] = field(default_factory=Counter)
    n_docs: int = 0
    avgdl: float = 1.0
    names: dict[str, set[str]] = field(default_factory=dict)  # skill -> tokens of its own name
    name_seq: dict[str, list[str]] = field(default_factory=dict)  # skill -> its name's tokens, in order
    generic: frozenset[str] = frozenset()  # terms of the BACKGROUND requests

    @classmethod
    def build(cls, skills: dict[str, str]) -> Scorer:
        names = {name: tokenize(name.replace("-", " ")) for name in skills}
        docs = {name: names[name] + tokenize(in_scope(desc)) for name, desc in skills.items()}
        all_docs = list(docs.values()) + [tokenize(b) for b in BACKGROUND]
        df: Counter[str] = Counter()
        for d in all_docs:
            df.update(set(d))
        avgdl = sum(len(d) for d in docs.values()) / max(1, len(docs))
        generic = frozenset(t for b in BACKGROUND for t in tokenize(b))
        return cls(docs, df, len(all_docs), avgdl or 1.0, {n: set(t) for n, t in names.items()}, names, generic)

    def names_only(self, term: str, skill: str) -> bool:
        """A distinctive term of the skill's own name that no other description or background request uses
        ("pdf"); a common word ("action", "git", "finish") is no evidence on its own, name or not."""
        return term in self.names.get(skill, ()) and self.df.get(term, 0) == 1 and term not in COMMON

    def coincidence(self, terms: Mapping[str, float], skill: str, needed: int) -> bool:
        """Just `needed` matched terms, every one a word of the ordinary BACKGROUND requests and none a word of
        the skill's name ("file" and "environment" for terraform-stacks): no more evidence than one word."""
        own = self.names.get(skill, set())
        return len(terms) == needed and all(t in self.generic and t not in own for t in terms)

    def idf(self, term: str) -> float:
        n = self.df.get(term, 0)
        return math.log(1 + (self.n_docs - n + 0.5) / (n + 0.5))

    def contributions(self, query: str) -> dict[str, dict[str, float]]:
        """Per skill, each matched prompt term and the weight it adds (BM25 term score); a prompt that names
        the skill (every word of its name, "grill me" for grill-me) adds the name as one more term."""
        seq = tokenize(query)
        q = set(seq)
        out: dict[str, dict[str, float]] = {}
        for name, doc in self.docs.items():
            tf = Counter(doc)
            terms: dict[str, float] = {}
            for term in sorted(q):
                f = tf.get(term, 0)
                if f:
                    terms[term] = round(self.idf(term) * f * (K1 + 1) / (f + K1 * (1 - B + B * len(doc) / self.avgdl)), 4)
            own = self.name_seq.get(name, [])
            if own and own[0] in q and _contains(seq, own):
                terms[f"{NAMED}{name}"] = round(NAME_BONUS * max(self.idf(t) for t in own), 4)
            out[name] = terms
        return out

    def score(self, query: str) -> dict[str, float]:
        return {name: round(sum(terms.values()), 4) for name, terms in self.contributions(query).items()}


@dataclass(frozen=True)
class Semantic:
    """The semantic scorer's evidence for one (prompt, skill): prior-corrected cosine and token match,
    and the description words that matched best ("merging~merge 0.72")."""

    cosine: float
    tokens: float
    pairs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prediction:
    prompt_id: str
    expected: str | None
    predicted: str | None
    scores: dict[str, float]
    matched: dict[str, dict[str, float]] = field(default_factory=dict)  # top skills' matched terms -> weight
    reason: str = ""  # why the top skill was or was not predicted
    tokens: list[str] = field(default_factory=list)  # the prompt's content words, as written (what BM25 looked for)
    semantic: dict[str, float] = field(default_factory=dict)  # fused scorer: semantic score per skill
    bm25: dict[str, float] = field(default_factory=dict)  # fused scorer: BM25 per skill (scores holds the fused)
    # fused scorer, for the skills in `matched`: cosine, tokens, bm25_counted (1/0); and closest word pairs
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    pairs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.expected == self.predicted


def predict(scorer: Scorer, prompts: list[TriggerPrompt], min_score: float, min_margin: float,
            terms_needed: int | None = None) -> list[Prediction]:
    terms_needed = min_terms(len(scorer.docs)) if terms_needed is None else terms_needed
    out = []
    for p in prompts:
        contrib = scorer.contributions(p.prompt)
        scores = {name: round(sum(t.values()), 4) for name, t in contrib.items()}
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        best, best_score = ranked[0] if ranked else (None, 0.0)
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        needed = _needed(p.prompt, terms_needed)
        n_terms = len(contrib.get(best, {})) if best else 0
        if best is None or best_score <= 0:
            chosen, reason = None, "no term of the prompt is in any description"
        elif best_score < min_score:
            chosen, reason = None, f"best score {best_score:.2f} < trigger_min_score {min_score}"
        elif best_score == second:
            chosen, reason = None, _tie(ranked, best_score)
        elif best_score - second < min_margin:
            chosen, reason = None, f"{best} does not beat the runner-up by trigger_min_margin {min_margin}"
        elif needed > 1 and scorer.coincidence(contrib[best], best, needed):
            chosen, reason = None, (f"{best} matched only {n_terms} words of ordinary requests "
                                    f"({', '.join(sorted(contrib[best]))}), none of them in its name: coincidence")
        elif n_terms < needed and not (n_terms == 1 and scorer.names_only(next(iter(contrib[best])), best)):
            chosen, reason = None, f"only {n_terms} matched term(s) for {best}; a prediction needs {needed}"
        elif n_terms < needed:
            chosen, reason = best, f"1 matched term, {next(iter(contrib[best]))!r}, names {best} and no other skill"
        else:
            chosen, reason = best, f"{n_terms} matched terms, score {best_score:.2f}, margin {best_score - second:.2f}"
        out.append(Prediction(p.id, p.expected_skill, chosen, scores, _evidence(contrib, ranked, p.expected_skill),
                              reason, sorted(set(_surface(p.prompt).values()))))
    return out


def _contains(seq: list[str], part: list[str]) -> bool:
    """`part` occurs in `seq` as consecutive tokens (a prompt that says the skill's name as a phrase)."""
    n = len(part)
    return any(seq[i:i + n] == part for i in range(len(seq) - n + 1))


def _tie(ranked: list[tuple[str, float]], top: float) -> str:
    """An exact tie at the top: no skill is predicted, and the reason says which skills the descriptions fail to
    separate (no margin setting would pick one of them)."""
    tied = [name for name, sc in ranked if sc == top]
    return f"tie: {', '.join(tied)} score the same ({top:.2f}); their descriptions do not separate this prompt"


def _needed(prompt: str, terms_needed: int) -> int:
    """Matched terms a prediction needs for this prompt: a prompt of few content words needs one."""
    return 1 if len(set(tokenize(prompt))) <= terms_needed else terms_needed


def _evidence(contrib: dict[str, dict[str, float]], ranked: list[tuple[str, float]],
              expected: str | None, positive_only: bool = True) -> dict[str, dict[str, float]]:
    """Matched terms of the top 3 skills (BM25: those scoring > 0) and, always, of the expected skill."""
    show = [name for name, sc in ranked[:3] if sc > 0 or not positive_only]
    if expected is not None and expected in contrib and expected not in show:
        show.append(expected)
    return {n: contrib[n] for n in show}


def fuse(bm25: float, semantic: Semantic | float, t: Triggers) -> float:
    """One skill's fused score: saturated BM25 (0..1) and the semantic score, weighted by semantic_weight.
    `semantic` is the scorer's evidence, or an already combined semantic score."""
    sem = semantic if isinstance(semantic, float | int) else combine(semantic, t)
    return round((1 - t.semantic_weight) * bm25 / (bm25 + t.bm25_saturation) + t.semantic_weight * sem, 4)


def combine(s: Semantic, t: Triggers) -> float:
    return round((1 - t.token_weight) * s.cosine + t.token_weight * s.tokens, 4)


def predict_fused(scorer: Scorer, semantic: Sequence[Mapping[str, Semantic | float]],
                  prompts: list[TriggerPrompt], t: Triggers) -> list[Prediction]:
    """BM25 fused with the semantic scores (one dict per prompt, same order): see the module docstring."""
    out = []
    terms_needed = min_terms(len(scorer.docs))
    for p, sem in zip(prompts, semantic, strict=True):
        contrib = scorer.contributions(p.prompt)
        bm25 = {name: round(sum(terms.values()), 4) for name, terms in contrib.items()}
        needed = _needed(p.prompt, terms_needed)
        counted = {name: len(contrib[name]) >= needed for name in bm25}  # the min-terms rule, no name exception
        parts = {name: (s if isinstance(s, Semantic) else Semantic(float(s), float(s))) for name, s in sem.items()}
        combined = {name: combine(s, t) if isinstance(s, Semantic) else float(s) for name, s in sem.items()}
        fused = {name: fuse(bm25[name] if counted[name] else 0.0, combined.get(name, 0.0), t) for name in bm25}
        ranked = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
        best, best_score = ranked[0] if ranked else (None, 0.0)
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        if best is None:
            chosen, reason = None, "no skill"
        elif best_score < t.fused_min_score:
            chosen, reason = None, f"best fused score {best_score:.2f} ({best}) < fused_min_score {t.fused_min_score}"
        elif best_score == second:
            chosen, reason = None, _tie(ranked, best_score)
        elif best_score - second < t.fused_min_margin:
            chosen, reason = None, f"{best} does not beat the runner-up by fused_min_margin {t.fused_min_margin}"
        else:
            chosen, reason = best, (f"fused {best_score:.2f} (bm25 {bm25[best]:.2f}, semantic {combined.get(best, 0.0):.2f}), "
                                    f"margin {best_score - second:.2f}")
        shown = _evidence(contrib, ranked, p.expected_skill, positive_only=False)  # fused scores can be < 0
        out.append(Prediction(
            p.id, p.expected_skill, chosen, fused, shown, reason, sorted(set(_surface(p.prompt).values())), combined, bm25,
            {n: {"cosine": parts[n].cosine, "tokens": parts[n].tokens, "bm25_counted": float(counted[n])}
             for n in shown if n in parts},
            {n: list(parts[n].pairs) for n in shown if n in parts}))
    return out


NONE = "(none)"
GAP_RULE = "trigger-description-gap"
MISSING_SHOWN = 6  # missing words named per finding, most specific first


def description_gaps(scorer: Scorer, preds: list[Prediction], prompts: Sequence[TriggerPrompt],
                     where: Mapping[str, tuple[str, int]]) -> list[Finding]:
    """A missed positive whose words the expected skill's description does not share (fewer matched terms than a
    prediction needs): the description, not the scorer, is what to fix. One finding per such prompt, at the
    expected skill's description line (`where`: skill -> (SKILL.md path, line)), naming the prompt's words its
    description lacks, most specific first, and whether another description uses them."""
    text = {p.id: p.prompt for p in prompts}
    terms_needed = min_terms(len(scorer.docs))
    out = []
    for p in preds:
        if p.expected is None or p.correct or p.expected not in scorer.docs or p.prompt_id not in text:
            continue
        prompt = text[p.prompt_id]
        contrib = scorer.contributions(prompt)
        shared = [t for t in contrib[p.expected] if not t.startswith(NAMED)]
        if len(shared) >= _needed(prompt, terms_needed):
            continue  # the description has the words; the miss is a ranking between descriptions (see --explain)
        missing = _missing_words(scorer, prompt, p.expected)
        if not missing:
            continue
        elsewhere = sorted({n for n, ts in contrib.items() if n != p.expected and any(w in ts for _, w in missing)})
        path, line = where.get(p.expected, (p.expected, 0))
        words = ", ".join(surface for surface, _ in missing[:MISSING_SHOWN])
        written = _surface(prompt)
        has = f" ({', '.join(written.get(t, t) for t in shared)})" if shared else ""
        others = (f"; {', '.join(elsewhere[:3])} {'uses' if len(elsewhere) == 1 else 'use'} some of them"
                  if elsewhere else "; no description uses them")
        out.append(Finding(
            "warning", path,
            f"{p.expected}: its description does not cover prompt {p.prompt_id} ({prompt!r}): it shares "
            f"{len(shared)} of the prompt's words{has}, a prediction needs "
            f"{_needed(prompt, terms_needed)}. Missing: {words}{others}. Add the words its users would use to the "
            "description, if the skill is meant for such requests",
            GAP_RULE, f"{p.expected}:{p.prompt_id}", line))
    return out


_CONTRACTED = frozenset({"ve", "ll", "re", "don", "doesn", "isn", "won", "didn", "can"})  # I've, we'll, don't


def _surface(prompt: str) -> dict[str, str]:
    """stem -> the prompt's first word with that stem, as written (lower-cased)."""
    out: dict[str, str] = {}
    for word in re.findall(r"[a-z0-9]+", prompt.lower()):
        if word not in STOP and word not in _CONTRACTED and len(word) >= 2:
            out.setdefault(stem(word), word)
    return out


def _missing_words(scorer: Scorer, prompt: str, skill: str) -> list[tuple[str, str]]:
    """(word as written, its stem) for each content word of the prompt not in the skill's document, the rarest
    (highest idf: the most specific) first."""
    doc = set(scorer.docs.get(skill, ()))
    seen = {t: w for t, w in _surface(prompt).items() if t not in doc}
    return [(w, t) for t, w in sorted(seen.items(), key=lambda kv: (-scorer.idf(kv[0]), kv[1]))]


def metrics(preds: list[Prediction], skills: list[str]) -> dict[str, Any]:
    per_skill = {}
    for s in skills:
        tp = sum(1 for p in preds if p.predicted == s and p.expected == s)
        predicted = sum(1 for p in preds if p.predicted == s)
        expected = sum(1 for p in preds if p.expected == s)
        per_skill[s] = {
            "precision": (tp / predicted) if predicted else None,  # None: never predicted (not "0.00")
            "recall": (tp / expected) if expected else None,
            "predicted": predicted,
            "expected": expected,
            "true_positives": tp,
        }
    negatives = [p for p in preds if p.expected is None]
    neg_ok = sum(1 for p in negatives if p.predicted is None)
    return {
        "per_skill": per_skill,
        "negative_accuracy": (neg_ok / len(negatives)) if negatives else None,
        "negatives": len(negatives),
        "accuracy": sum(p.correct for p in preds) / len(preds) if preds else None,
        "confusions": [
            {"prompt": p.prompt_id, "expected": p.expected, "predicted": p.predicted, "scores": p.scores,
             "matched": p.matched, "reason": p.reason}
            for p in preds if not p.correct
        ],
        "matrix": confusion_matrix(preds),
        "competing": competing(preds),
    }


def confusion_matrix(preds: list[Prediction]) -> dict[str, dict[str, int]]:
    """expected skill (or "(none)") -> predicted skill (or "(none)") -> prompt count (non-zero cells)."""
    matrix: dict[str, dict[str, int]] = {}
    for p in preds:
        row = matrix.setdefault(p.expected or NONE, {})
        key = p.predicted or NONE
        row[key] = row.get(key, 0) + 1
    return {k: dict(sorted(v.items())) for k, v in sorted(matrix.items())}


def competing(preds: list[Prediction], ratio: float = 0.8) -> list[dict[str, object]]:
    """Pairs of skills whose descriptions compete: a prompt of one went to the other, or the
    runner-up scored within `ratio` of the winner on a positive prompt. Sorted by count."""
    pairs: Counter[tuple[str, ...]] = Counter()
    for p in preds:
        ranked = sorted(p.scores.items(), key=lambda kv: (-kv[1], kv[0]))
        if p.expected and p.predicted and p.predicted != p.expected:
            pairs[tuple(sorted((p.expected, p.predicted)))] += 1
        elif p.expected and len(ranked) > 1 and ranked[0][1] > 0 and ranked[1][1] >= ratio * ranked[0][1]:
            pairs[tuple(sorted((ranked[0][0], ranked[1][0])))] += 1
    return [{"skills": list(k), "prompts": n} for k, n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))]


def gate(cfg: Config, m: dict[str, Any]) -> list[str]:
    """Threshold failures; an unmeasurable metric (no prompts for a skill) fails closed."""
    return [f.message for f in gate_findings(cfg, m)]


def gate_findings(cfg: Config, m: dict[str, Any], where: Mapping[str, tuple[str, int]] | None = None,
                  corpus: str = "") -> list[Finding]:
    """The threshold failures as error findings: a skill's recall or precision at its description line
    (`where`: skill -> (SKILL.md, line)), a skill without positives and the negatives at the corpus file."""
    t = cfg.thresholds
    where = where or {}
    out: list[Finding] = []

    def add(rule: str, message: str, subject: str = "negatives", at: tuple[str, int] | None = None) -> None:
        path, line = at or (corpus, 0)
        out.append(Finding("error", path, message, rule, subject, line))

    for skill, row in m["per_skill"].items():
        desc = where.get(skill, (corpus, 0))
        if row["expected"] == 0:
            add("trigger-no-positive", f"{skill}: the corpus has no positive prompt for it", skill)
            continue
        if row["predicted"] == 0:
            add("trigger-recall", f"{skill}: never predicted — recall 0.00 < {t.trigger_min_recall} "
                "(its description shares too few terms with its prompts; see --explain)", skill, desc)
            continue
        if row["precision"] < t.trigger_min_precision:
            add("trigger-precision", f"{skill}: precision {row['precision']:.2f} < {t.trigger_min_precision}", skill, desc)
        if row["recall"] < t.trigger_min_recall:
            add("trigger-recall", f"{skill}: recall {row['recall']:.2f} < {t.trigger_min_recall}", skill, desc)
    neg = m["negative_accuracy"]
    if neg is None:
        add("trigger-negative-accuracy", "the corpus has no negative prompts")
    elif neg < t.trigger_min_negative_accuracy:
        add("trigger-negative-accuracy", f"negative accuracy {neg:.2f} < {t.trigger_min_negative_accuracy} "
            "(descriptions claim out-of-scope prompts)")
    return out
