"""SlimGrade: a Grade kept for the gates only, small enough that re-grading thousands of bundles
keeps memory flat (the evidence pass's text mode, `regrade.Pass(slim=True)`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any


class SlimGrade:
    """A Grade kept for the gates only: its statuses, failures and activation reasons, in a few
    interned tuples (~0.3 KiB instead of ~3 KiB), so re-grading thousands of bundles keeps memory
    flat. Anything that needs the full object (`meta`, `checks`, the query methods) gets a Grade
    rebuilt on the fly; reasons other than activation's are dropped (text output never shows them:
    `--json` keeps full grades)."""

    __slots__ = ("_bundle", "_prefix", "kind", "item", "_meta", "_checks", "zero_tolerance")
    _META_KEYS = ("arm", "skill", "k", "run_id", "agent", "model", "scenario", "prompt_id", "kind", "scripted", "model_source")
    KEEP_REASONS = ("activation", "oracle", "receipt:facts")  # the gates' messages quote these
    _bundle: str
    _prefix: str | None

    def __init__(self, grade: Any):
        self._bundle, self._prefix = grade.bundle, None
        self.kind = _intern(grade.kind)
        self.item = _intern(grade.item)
        self._meta = _share_meta(tuple(_intern(grade.meta.get(k)) for k in self._META_KEYS))
        self._checks = _share(tuple(_check_key(n, c.status, tuple(c.reasons) if n in self.KEEP_REASONS else ())
                                    for n, c in grade.checks.items()))
        self.zero_tolerance = _INTERNED.setdefault(tuple(grade.zero_tolerance), tuple(grade.zero_tolerance))

    @property
    def bundle(self) -> str:
        return self._bundle if self._prefix is None else f"{self._prefix}/{self._bundle}"

    def share_path(self, prefix: str, rel: str) -> None:
        """Keep the bundle path as a shared prefix + the caller's `rel` string (one copy per bundle)."""
        if self.bundle == f"{prefix}/{rel}":
            self._bundle, self._prefix = rel, sys.intern(prefix)

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.bundle, self.kind, self.item, _meta_values(self._meta), self._checks, self.zero_tolerance)

    def __setstate__(self, state: tuple[Any, ...]) -> None:  # re-intern after crossing a process boundary
        self._bundle, kind, item, meta, checks, zero = state
        self._prefix = None
        self.zero_tolerance = _INTERNED.setdefault(zero, zero)
        self.kind, self.item = _intern(kind), _intern(item)
        # most bundles repeat a meta summary and a status pattern already seen: found whole, not rebuilt
        try:
            common = _INTERNED.get(("meta", meta[:_K_AT] + meta[_K_AT + 2:]))
        except TypeError:  # an unhashable value (not in any schema-valid meta): rebuilt below, as before
            common = None
        self._meta = ((common, _intern(meta[_K_AT]), _intern(meta[_K_AT + 1])) if common is not None
                      else _share_meta(tuple(_intern(v) for v in meta)))
        shared = _INTERNED.get(("checks", checks))
        self._checks = shared if shared is not None else _share(tuple(_check_key(*c) for c in checks))

    def full(self) -> Any:
        from skill_eval.grading.graders import Check, Grade

        checks = {n: Check(n, st, list(reasons)) for n, st, reasons in self._checks}
        return Grade(self.bundle, self.kind, self.item, dict(zip(self._META_KEYS, _meta_values(self._meta), strict=True)), checks,
                     self.zero_tolerance)

    @property
    def meta(self) -> Mapping[str, Any]:
        """The meta summary as a read-only mapping over the packed tuple (the gates ask ~9 keys per
        grade: building a dict each time was most of their time)."""
        return _SlimMeta(self._meta)

    @property
    def checks(self) -> Mapping[str, Any]:
        """The checks as a read-only mapping over the compact tuples: `.get(name)` builds that one Check
        (the gates ask a few names per bundle; rebuilding the whole Grade each time cost more than the pass)."""
        return _SlimChecks(self._checks)

    # the queries the gates and text output make, answered from the compact tuples
    def failures(self) -> list[int | str]:
        failed = [n for n, st, _ in self._checks if st == "fail" and ":" not in n]  # sub-checks: graders.is_sub_check
        return [*sorted(int(n) for n in failed if n.isdigit()), *sorted(n for n in failed if not n.isdigit())]

    def failed_dimensions(self) -> list[int]:
        return sorted(int(n) for n, st, _ in self._checks if st == "fail" and n.isdigit())

    def status_of(self, name: str) -> str | None:
        for n, st, _ in self._checks:
            if n == name:
                return str(st)
        return None

    def zero_tolerance_failed(self) -> list[int]:
        return [d for d in self.failed_dimensions() if d in self.zero_tolerance]

    def incomplete(self) -> list[int]:
        return sorted(int(n) for n, st, _ in self._checks if st == "not_judged")

    def __getattr__(self, name: str) -> Any:  # failures(), failed_dimensions(), passed(), to_json()...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full(), name)


class _SlimChecks(Mapping[str, Any]):
    """name -> graders.Check, built on access from SlimGrade's (name, status, reasons) tuples."""

    __slots__ = ("_rows",)

    def __init__(self, rows: tuple[tuple[str, str, tuple[str, ...]], ...]):
        self._rows = rows

    def get(self, name: str, default: Any = None) -> Any:
        for n, st, reasons in self._rows:
            if n == name:
                return _check_class()(n, st, list(reasons))
        return default

    def __getitem__(self, name: str) -> Any:
        c = self.get(name, _ABSENT)
        if c is _ABSENT:
            raise KeyError(name)
        return c

    def __iter__(self) -> Iterator[str]:
        return (n for n, _, _ in self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _, _ in self._rows)


class _SlimMeta(Mapping[str, Any]):
    """SlimGrade.meta: what dict(zip(_META_KEYS, values)) answers, read from (common, k, run_id)."""

    __slots__ = ("_packed",)

    def __init__(self, packed: tuple[Any, ...]):
        self._packed = packed

    def __getitem__(self, key: str) -> Any:
        i = _META_AT[key]
        common, k, run_id = self._packed
        return common[i] if i < _K_AT else k if i == _K_AT else run_id if i == _K_AT + 1 else common[i - 2]

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in _META_AT else default

    def __iter__(self) -> Iterator[str]:
        return iter(SlimGrade._META_KEYS)

    def __len__(self) -> int:
        return len(SlimGrade._META_KEYS)

    def __contains__(self, key: object) -> bool:
        return key in _META_AT

    def __repr__(self) -> str:
        return repr(dict(self))


_ABSENT = object()
_CHECK: list[Any] = []


def _check_class() -> Any:
    if not _CHECK:
        from skill_eval.grading.graders import Check

        _CHECK.append(Check)
    return _CHECK[0]


_INTERNED: dict[Any, Any] = {}


def _intern(value: Any) -> Any:
    if isinstance(value, str):
        return sys.intern(value)
    return _INTERNED.setdefault(value, value) if isinstance(value, int) and not isinstance(value, bool) else value


_META_AT = {key: i for i, key in enumerate(SlimGrade._META_KEYS)}
_K_AT = SlimGrade._META_KEYS.index("k")  # k and run_id are adjacent: the two fields every bundle has its own of
assert SlimGrade._META_KEYS[_K_AT + 1] == "run_id"


def _share_meta(meta: tuple[Any, ...]) -> tuple[Any, ...]:
    """The meta summary as (shared tuple of the fields the bundles of one item have in common, k, run_id):
    ~100 bytes less per bundle kept."""
    common = meta[:_K_AT] + meta[_K_AT + 2:]
    try:
        common = _INTERNED.setdefault(("meta", common), common)
    except TypeError:  # an unhashable value (not in any schema-valid meta): kept as it is
        pass
    return (common, meta[_K_AT], meta[_K_AT + 1])


def _meta_values(packed: tuple[Any, ...]) -> tuple[Any, ...]:
    common, k, run_id = packed
    return (*common[:_K_AT], k, run_id, *common[_K_AT:])


def _share(checks: tuple[Any, ...]) -> tuple[Any, ...]:
    """One shared tuple per distinct status pattern (most bundles have one of a handful)."""
    if any(reasons for _, _, reasons in checks):
        return checks
    shared: tuple[Any, ...] = _INTERNED.setdefault(("checks", checks), checks)
    return shared


def _check_key(name: str, status: str, reasons: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]]:
    key = (sys.intern(name), sys.intern(status), reasons)
    return _INTERNED.setdefault(key, key) if not reasons else key
