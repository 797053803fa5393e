"""The trust policy, read from the base, never from the change (issue 34 item 1).

What decides whether evidence counts as signed — the `allowed_signers` file, `[evals] signatures`, the
path `[evals] allowed_signers` names and `[evals] release_sources` — is read from git objects at the base
(core/gitrepo.resolve_base), so a pull request cannot vouch for itself: a key it adds, a policy it loosens,
a source it admits take effect only once merged. A change to any of them is its own finding (`findings`),
shown by the evidence gate.

Two rules hold whatever `signatures` says:
- once the base names a key, every bundle the change adds or modifies must be signed by a base key
  (a bundle signed at the base cannot become unsigned: deleting its seal modifies it);
- with no allowed_signers at the base, nothing verifies as signed (core/seal.NO_TRUST_ROOT): under
  `require` that fails with "no trust root at <base>: land allowed_signers alone first".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.config import CONFIG_NAME, Config
from skill_eval.core import formats, gitrepo, seal, strict
from skill_eval.core.errors import ConfigError, InputError, SkillEvalError, message_of

LAYOUT_DEPTH = 5  # skill/arm/run/item/k below the evidence root (= regrade.LAYOUT_DEPTH)
SOURCES = ("remote", "local-endpoint")
RELEASE_WHY = "the release stage requires signed evidence"


@dataclass(frozen=True)
class Settings:
    """The trust settings of one config: `[evals] signatures`, the allowed_signers path (host-relative),
    `[evals] release_sources`."""

    signatures: str = "warn"
    allowed_signers: str = "agent-evals/skills/allowed_signers"
    release_sources: tuple[str, ...] = ("remote",)


@dataclass
class Policy:
    """The trust policy in force: read at `base` (None: no base, so no trust root)."""

    base: gitrepo.Base | None
    settings: Settings
    signers: tuple[seal.Signer, ...]
    findings: tuple[str, ...] = ()
    no_base: str = ""  # why there is no base (outside a repository, or no branch to compare with)
    _root: Path | None = None
    _evidence_top: str = ""  # repository-relative evidence tree ('' without a base)
    _changed: set[str] | None = field(default=None, repr=False)

    @property
    def signatures(self) -> str:
        return self.settings.signatures

    @property
    def release_sources(self) -> tuple[str, ...]:
        return self.settings.release_sources

    @property
    def label(self) -> str:
        return self.base.label if self.base else f"no base ({self.no_base})"

    def no_root_reason(self) -> str:
        """Why nothing verifies as signed here."""
        if self.base is None:
            return (f"no trust root: {self.no_base}; pass --base REF (or set {gitrepo.BASE_ENV}) to read "
                    "allowed_signers from a commit")
        return f"no trust root at {self.base.ref}: land allowed_signers alone first"

    def changed_bundles(self) -> set[str]:
        """Bundles (paths below the evidence root) the change adds or modifies against the base."""
        if self._changed is None:
            self._changed = set()
            if self.base is not None and self._root is not None:
                top = self._evidence_top.rstrip("/") + "/"
                for path in gitrepo.changed_since(self._root, self.base.commit, top):
                    parts = path[len(top):].split("/") if path.startswith(top) else []
                    if len(parts) > LAYOUT_DEPTH and not parts[0].startswith("."):
                        self._changed.add("/".join(parts[:LAYOUT_DEPTH]))
        return self._changed

    def unsigned_problem(self, rel: str, stage: str, reason: str | None = None) -> str | None:
        """Why an unsigned bundle at `rel` (below the evidence root) fails, or None when it is counted."""
        if reason == seal.NO_TRUST_ROOT and (self.signatures == "require" or stage == "release"):
            return self.no_root_reason()
        if stage == "release":
            return RELEASE_WHY
        if self.signatures == "require":
            return f'evals.signatures = "require" at {self.base.ref if self.base else "the base"}'
        if self.signers and rel in self.changed_bundles():
            return (f"the base ({self.base.ref if self.base else '?'}) names a key, so every bundle a change adds "
                    "or modifies must be signed by one, whatever evals.signatures says")
        return None


# ----------------------------------------------------------------------------- reading


def _settings(raw: Mapping[str, Any], where: str) -> Settings:
    """The trust settings of a parsed config (defaults where absent); InputError naming the field."""
    evals = raw.get("evals") if isinstance(raw.get("evals"), dict) else {}
    assert isinstance(evals, dict)
    signatures = evals.get("signatures", "warn")
    if signatures not in ("require", "warn"):
        raise InputError(f"signatures = {signatures!r} is not require or warn", source=where, field="evals.signatures")
    root = evals.get("root", "agent-evals/skills")
    path = evals.get("allowed_signers") or f"{root}/allowed_signers"
    sources = evals.get("release_sources", ["remote"])
    if not isinstance(path, str) or not isinstance(root, str):
        raise InputError("is not a path", source=where, field="evals.allowed_signers")
    if not (isinstance(sources, list) and sources and all(s in SOURCES for s in sources)):
        raise InputError(f"release_sources = {sources!r}", source=where, field="evals.release_sources",
                         fix=f"list some of {', '.join(SOURCES)}")
    return Settings(signatures, path.strip("/"), tuple(sources))


def _base_config(root: Path, top: str, base: gitrepo.Base, source: Path) -> dict[str, Any]:
    """The host's config at the base (the same file the work tree's comes from; {} when absent there)."""
    name = source.name if source.name in (CONFIG_NAME, "pyproject.toml") else CONFIG_NAME
    where = f"{base.ref}:{top}{name}"
    data = gitrepo.blob(root, base.commit, f"{top}{name}")
    if data is None:
        return {}
    raw = strict.loads_toml(strict.decode_utf8(data, where), where)
    if name == "pyproject.toml":
        tool = raw.get("tool")
        table = tool.get("skill-eval") if isinstance(tool, dict) else None
        raw = table if isinstance(table, dict) else {}
    upgraded: dict[str, Any] = formats.upgrade(raw, "config", where)
    return upgraded


def _work_settings(cfg: Config) -> Settings:
    return Settings(cfg.signatures, cfg.allowed_signers or f"{cfg.evals_root}/allowed_signers", cfg.release_sources)


def load(cfg: Config, explicit: str | None = None, env: Mapping[str, str] | None = None) -> Policy:
    """The policy at the base of `cfg`'s repository (ConfigError: an unresolvable named base, or CI with none)."""
    work = _work_settings(cfg)
    base = gitrepo.resolve_base(cfg.root, explicit, env)
    if base is None:
        why = "the host is not in a git repository" if gitrepo.prefix(cfg.root) is None else \
            "no upstream default branch and no local main or master"
        # no base, no trust root: the work tree may only tighten (require), never admit a key or a source
        return Policy(None, Settings("require" if work.signatures == "require" else "warn", work.allowed_signers),
                      (), no_base=why)
    top = gitrepo.prefix(cfg.root) or ""
    try:
        settings = _settings(_base_config(cfg.root, top, base, cfg.source), f"{base.ref}:{top}{cfg.source.name}")
    except InputError as exc:
        raise ConfigError(f"the base's trust settings cannot be read: {message_of(exc)}", source=cfg.source,
                          fix="fix the configuration on the base branch") from None
    where = f"{base.ref}:{top}{settings.allowed_signers}"
    data = gitrepo.blob(cfg.root, base.commit, f"{top}{settings.allowed_signers}")
    signers = tuple(seal.parse_allowed_signers(data, where)) if data is not None else ()
    policy = Policy(base, settings, signers, _root=cfg.root, _evidence_top=f"{top}{cfg.evidence_rel}")
    policy.findings = tuple(changes(policy, cfg, work))
    return policy


def changes(policy: Policy, cfg: Config, work: Settings) -> list[str]:
    """The change's edits of the trust policy against the base, one finding each (they take effect once merged)."""
    base = policy.settings
    out = []
    if work.signatures != base.signatures:
        how = "loosened" if work.signatures == "warn" else "tightened"
        out.append(f"evals.signatures {base.signatures} -> {work.signatures} ({how})")
    if work.allowed_signers != base.allowed_signers:
        out.append(f"evals.allowed_signers {base.allowed_signers} -> {work.allowed_signers} (the trust root moved)")
    added = sorted(set(work.release_sources) - set(base.release_sources))
    removed = sorted(set(base.release_sources) - set(work.release_sources))
    out += [f"evals.release_sources admits {s} (loosened)" for s in added]
    out += [f"evals.release_sources drops {s}" for s in removed]
    path = cfg.allowed_signers_path  # the work tree's file: compared, never trusted
    try:
        mine = seal.load_allowed_signers(path) if path.is_file() else []
    except SkillEvalError as exc:
        return [*out, f"allowed_signers does not parse in the work tree: {message_of(exc)}"]
    before = {(s.fingerprint(), s.principal): s.describe() for s in policy.signers}
    after = {(s.fingerprint(), s.principal): s.describe() for s in mine}
    for key in sorted(set(before) | set(after)):
        if key not in before:
            out.append(f"allowed_signers adds {after[key]} key {key[0]}")
        elif key not in after:
            out.append(f"allowed_signers removes {before[key]} key {key[0]}")
        elif before[key] != after[key]:
            out.append(f"allowed_signers changes {before[key]} -> {after[key]} key {key[0]} (validity or namespaces)")
    return out


# ----------------------------------------------------------------------------- the policy in force

_POLICIES: list[tuple[Config, Policy]] = []  # per loaded Config (a command loads its config once)


def policy(cfg: Config) -> Policy:
    """The policy for `cfg` (read once per loaded config; `cfg.base_ref` is --base)."""
    for known, found in _POLICIES:
        if known is cfg:
            return found
    found = load(cfg, cfg.base_ref, os.environ)
    _POLICIES.append((cfg, found))
    del _POLICIES[:-8]
    return found
