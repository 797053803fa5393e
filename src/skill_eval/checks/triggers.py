"""L1s static trigger check: do the descriptions cover *and* separate the labelled prompts?

Method (documented so a failure can be reasoned about): Okapi BM25 (k1=1.2, b=0.75)
of each corpus prompt against each skill's `name + description`, over normalized
tokens (lower-cased, split on non-alphanumerics, stop-words dropped, a light suffix
stemmer). Document frequencies come from the skill descriptions plus a fixed set of
generic software-task background documents, so words every engineering request uses
("compatibility", "check", "version") carry little weight. A prompt is predicted to the
top-scoring skill when its score reaches `trigger_min_score` and beats the runner-up by
`trigger_min_margin`; otherwise to no skill. Negatives count: a description that claims
everything pulls negative prompts and fails negative accuracy and precision.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from skill_eval.config import Config
from skill_eval.content import TriggerPrompt

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
)


def tokenize(text: str) -> list[str]:
    out = []
    for tok in re.findall(r"[a-z0-9]+", text.lower()):
        if tok in STOP or len(tok) < 2:
            continue
        out.append(stem(tok))
    return out


def stem(tok: str) -> str:
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if tok.endswith(suffix) and len(tok) - len(suffix) >= 3 and not tok.endswith("ss"):
            return tok[: -len(suffix)] + repl
    return tok


@dataclass
class Scorer:
    docs: dict[str, list[str]]
    df: Counter = field(default_factory=Counter)
    n_docs: int = 0
    avgdl: float = 1.0

    @classmethod
    def build(cls, skills: dict[str, str]) -> Scorer:
        docs = {name: tokenize(f"{name.replace('-', ' ')} {desc}") for name, desc in skills.items()}
        all_docs = list(docs.values()) + [tokenize(b) for b in BACKGROUND]
        df: Counter = Counter()
        for d in all_docs:
            df.update(set(d))
        avgdl = sum(len(d) for d in docs.values()) / max(1, len(docs))
        return cls(docs, df, len(all_docs), avgdl or 1.0)

    def idf(self, term: str) -> float:
        n = self.df.get(term, 0)
        return math.log(1 + (self.n_docs - n + 0.5) / (n + 0.5))

    def score(self, query: str) -> dict[str, float]:
        q = set(tokenize(query))
        out = {}
        for name, doc in self.docs.items():
            tf = Counter(doc)
            s = 0.0
            for term in q:
                f = tf.get(term, 0)
                if f:
                    s += self.idf(term) * f * (K1 + 1) / (f + K1 * (1 - B + B * len(doc) / self.avgdl))
            out[name] = round(s, 4)
        return out


@dataclass(frozen=True)
class Prediction:
    prompt_id: str
    expected: str | None
    predicted: str | None
    scores: dict[str, float]

    @property
    def correct(self) -> bool:
        return self.expected == self.predicted


def predict(scorer: Scorer, prompts: list[TriggerPrompt], min_score: float, min_margin: float) -> list[Prediction]:
    out = []
    for p in prompts:
        scores = scorer.score(p.prompt)
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        best, best_score = ranked[0] if ranked else (None, 0.0)
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        chosen = best if best_score >= min_score and best_score - second >= min_margin and best_score > 0 else None
        out.append(Prediction(p.id, p.expected_skill, chosen, scores))
    return out


def metrics(preds: list[Prediction], skills: list[str]) -> dict[str, object]:
    per_skill = {}
    for s in skills:
        tp = sum(1 for p in preds if p.predicted == s and p.expected == s)
        predicted = sum(1 for p in preds if p.predicted == s)
        expected = sum(1 for p in preds if p.expected == s)
        per_skill[s] = {
            "precision": (tp / predicted) if predicted else None,
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
            {"prompt": p.prompt_id, "expected": p.expected, "predicted": p.predicted, "scores": p.scores}
            for p in preds if not p.correct
        ],
    }


def gate(cfg: Config, m: dict[str, object]) -> list[str]:
    """Threshold failures; an unmeasurable metric (no prompts for a skill) fails closed."""
    t = cfg.thresholds
    problems = []
    for skill, row in m["per_skill"].items():  # type: ignore[union-attr]
        if row["expected"] == 0:
            problems.append(f"{skill}: the corpus has no positive prompt for it")
            continue
        prec = row["precision"] if row["precision"] is not None else 0.0
        if prec < t.trigger_min_precision:
            problems.append(f"{skill}: precision {prec:.2f} < {t.trigger_min_precision}")
        if row["recall"] < t.trigger_min_recall:
            problems.append(f"{skill}: recall {row['recall']:.2f} < {t.trigger_min_recall}")
    neg = m["negative_accuracy"]
    if neg is None:
        problems.append("the corpus has no negative prompts")
    elif neg < t.trigger_min_negative_accuracy:
        problems.append(f"negative accuracy {neg:.2f} < {t.trigger_min_negative_accuracy} (descriptions claim out-of-scope prompts)")
    return problems
