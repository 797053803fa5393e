"""Re-signed mutants: one recorded fact changed at a time behind a valid seal, then graded again (issue 34 item 7).

A seal proves who recorded a bundle, not that the graders read what it records. Here each committed bundle is
copied out plain (`stored.materialize`), one recorded fact is changed — an event kind or field, a call's argv or
digest, a report field, a meta field — the bundle is re-sealed with a test key (an allowed_signers of its own),
and judged as the evidence gate judges one bundle: the seal, its place (path against meta), its matrix cell,
freshness, a control arm's isolation and every graded check. The unmutated copy, re-sealed the same way, is
judged first; a mutant is **caught** when its judgement holds a problem the original's does not.

Every mutation class names the recorded fact it changes (a `grading.readers` key) and whether that fact is
graded. A **meaningful pass** is a mutant of a graded class that is not caught: the graders missed a recorded
fact. Informational classes (the agent's narration, timing, cost accounting, release-only facts) are run too,
and listed with their reason. `scripts/mutate_bundles.py` runs it over a sample or everything;
`tests/grading/test_mutants.py` runs a bounded sample and demands 0 meaningful passes.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config, cell_of
from skill_eval.core import seal, stored
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading import evidence, isolation, regrade
from skill_eval.grading.graders import Catalog, grade_bundle
from skill_eval.grading.mutations import BY_NAME, CLASSES, Files, MutationClass, Source

__all__ = ["BY_NAME", "CLASSES", "Judge", "MutationClass", "Source", "Tally", "load_source", "run", "sample", "signers_for"]

# ----------------------------------------------------------------------------- judging


class Judge:
    """The evidence gate's view of one bundle, as a set of problem lines (empty: it passes)."""

    def __init__(self, cfg: Config, signers: list[seal.Signer]):
        self.cfg, self.signers = cfg, signers
        self.catalog = Catalog(cfg)
        self.fresh = regrade.default_freshness(cfg)
        self.cells = cfg.cells("merge")

    def __call__(self, path: Path, rel: str, cell: str | None = None) -> frozenset[str]:
        out: set[str] = set()
        v = seal.verify(path, rel, self.signers)
        if v.state != "signed":
            out.add(f"seal: {v.state}: {v.reason}")
        b = bundle_mod.load(path, max_bytes=self.cfg.max_bundle_file_bytes)
        meta = b.meta
        if meta is None:
            return frozenset(out | {f"unreadable: {p}" for p in b.problems} | {"unreadable meta.json"})
        try:
            slot = evidence.slot_of(meta)
            out |= {f"place: {p}" for p in evidence._path_problems(tuple(rel.split("/")), slot, str(meta.get("run_id")))}
        except (KeyError, TypeError) as exc:
            out.add(f"place: meta has no slot ({exc})")
        out |= {f"stale: {p}" for p in self.fresh(meta)}
        if isolation.is_control(meta.get("arm")):
            out |= {f"contaminated: {p}" for p in regrade.contamination(self.cfg, b)}
        here = cell_of((meta.get("agent") or {}).get("name"), meta.get("model"), meta.get("scripted"))
        if self.cells and here not in self.cells:
            out.add(f"cell: {here} is not a matrix cell")
        if cell is not None and here != cell:
            out.add(f"cell: moved from {cell} to {here} (its slot is missing there)")
        g = grade_bundle(path, self.catalog, loaded=b)
        for name, c in g.checks.items():
            if c.failed:
                out.add(f"{name}: failed")
                out |= {f"{name}: {r}" for r in c.reasons}
        return frozenset(out)


# ----------------------------------------------------------------------------- running


@dataclass
class Tally:
    """What a run found: mutants per class, the caught and the missed (meaningful passes), and samples."""

    bundles: int = 0
    skipped: list[str] = field(default_factory=list)  # bundles whose unmutated re-sealed copy could not be judged
    mutants: dict[str, int] = field(default_factory=dict)
    caught: dict[str, int] = field(default_factory=dict)
    missed: dict[str, list[str]] = field(default_factory=dict)  # class -> bundles a graded mutant passed in

    def meaningful(self) -> int:
        return sum(len(v) for k, v in self.missed.items() if BY_NAME[k].graded)

    def to_json(self) -> dict[str, Any]:
        classes = {}
        for c in CLASSES:
            n = self.mutants.get(c.name, 0)
            classes[c.name] = {"fact": c.fact, "graded": c.graded, "mutants": n, "caught": self.caught.get(c.name, 0),
                               "passed": len(self.missed.get(c.name, [])), "why": c.why,
                               "passed_in": self.missed.get(c.name, [])[:5]}
        return {"bundles": self.bundles, "skipped": self.skipped, "mutants": sum(self.mutants.values()),
                "meaningful_passes": self.meaningful(),
                "informational_passes": sum(len(v) for k, v in self.missed.items() if not BY_NAME[k].graded),
                "classes": classes}


def signers_for(public_key: str) -> list[seal.Signer]:
    """The allowed signers naming only the throwaway key a run re-seals with (never the repository's)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="skill-eval-signers-") as tmp:
        path = Path(tmp) / "allowed_signers"
        path.write_text(f'mutants@skill-eval namespaces="{seal.NAMESPACE}" {public_key}\n')
        return seal.load_allowed_signers(path)


def load_source(cfg: Config, bundle: Path, rel: str, scratch: Path) -> Source:
    plain = scratch / "plain"
    if plain.exists():
        shutil.rmtree(plain)
    stored.materialize(bundle, plain, cfg.max_bundle_file_bytes)
    files = {p.relative_to(plain).as_posix(): p.read_bytes() for p in sorted(plain.rglob("*")) if p.is_file()}
    for name in (seal.SEAL, seal.SIG):
        files.pop(name, None)

    def rows(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in files.get(name, b"").decode().splitlines() if line.strip()]
    return Source(rel, files, json.loads(files["meta.json"]), rows("events.jsonl"), rows("calls.jsonl"), cfg)


def _write_sealed(files: Files, dest: Path, rel: str, key: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    for name, data in files.items():
        p = dest / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    seal.seal_tree(dest, rel, None, key, signed_at="2026-12-01T00:00:00Z")


def run(cfg: Config, bundles: list[tuple[Path, str]], workdir: Path, key: tuple[Path, list[seal.Signer]], *,
        classes: Iterable[MutationClass] = CLASSES, progress: Callable[[str], None] | None = None) -> Tally:
    """Mutate each bundle (path, place in the evidence tree) once per applicable class; judge every mutant.
    `key`: a throwaway signing key (ssh-keygen made) and `signers_for` its public key."""
    key_path, signers = key
    judge = Judge(cfg, signers)
    tally = Tally()
    classes = tuple(classes)
    for n, (path, rel) in enumerate(bundles, 1):
        src = load_source(cfg, path, rel, workdir)
        dest = workdir / "evidence" / rel  # the same place for the original and every mutant: same reasons
        _write_sealed(src.files, dest, rel, key_path)
        cell = cell_of((src.meta.get("agent") or {}).get("name"), src.meta.get("model"), src.meta.get("scripted"))
        original = judge(dest, rel)
        if any(p.startswith(("seal:", "unreadable")) for p in original):
            tally.skipped.append(f"{rel}: {sorted(original)[0]}")
            continue
        tally.bundles += 1
        for c in classes:
            files = c.make(src)
            if files is None:
                continue
            _write_sealed(files, dest, rel, key_path)
            got = judge(dest, rel, cell)
            tally.mutants[c.name] = tally.mutants.get(c.name, 0) + 1
            if got - original:
                tally.caught[c.name] = tally.caught.get(c.name, 0) + 1
            else:
                tally.missed.setdefault(c.name, []).append(rel)
        if progress is not None and n % 20 == 0:
            progress(f"mutants: {n}/{len(bundles)} bundles, {sum(tally.mutants.values())} mutants, "
                     f"{tally.meaningful()} meaningful passes")
    return tally


def sample(root: Path, count: int | None, seed: int = 34) -> list[tuple[Path, str]]:
    """Bundles of an evidence tree (path, place), every one or `count` drawn by seed across kinds and arms."""
    found = sorted((m.parent, m.parent.relative_to(root).as_posix()) for m in root.rglob("meta.json")
                   if len(m.parent.relative_to(root).parts) == stored.TREE_DEPTH
                   and not any(p.startswith(".") for p in m.parent.relative_to(root).parts))
    if count is None or count >= len(found):
        return found
    groups: dict[tuple[str, str], list[tuple[Path, str]]] = {}
    for b in found:
        parts = b[1].split("/")
        groups.setdefault(("trigger" if parts[0] == "trigger" else "behavioral", parts[1]), []).append(b)
    rng = random.Random(seed)  # noqa: S311 - a reproducible sample, not a secret
    picked: list[tuple[Path, str]] = []
    pools = [rng.sample(g, len(g)) for _, g in sorted(groups.items())]
    while len(picked) < count and any(pools):
        for pool in pools:
            if pool and len(picked) < count:
                picked.append(pool.pop())
    return sorted(picked)
