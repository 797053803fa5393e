"""Credentials in evidence: which values are secret, every form they can take, redaction, the seal-time scan.

Why it works on exact values: the runner knows precisely which credential values it put into the
agent's environment (its adapter's key, a passthrough token), and an agent that reads them —
from its environment or from /proc — can print them in any encoding. So redaction is keyed on
those exact values, of any length, and looks for each in every form an agent (or a tool) can
trivially produce: raw, JSON-escaped (once and twice), base64 and base64url at all three byte
alignments (a value embedded at offset 0, 1 or 2 of a longer base64 stream encodes differently),
hex (lower and upper), URL-encoded (quote, plus-form, every byte percent-encoded in either case),
reversed — and each of those line-folded (split by newlines, `\\r\\n`, JSON `\\n` escapes and
indentation, e.g. base64 wrapped at 76 columns).

Length policy (documented in docs/ARCHITECTURE.md):
* a value the runner *injects* must have at least MIN_SECRET_LEN (4) characters —
  `check_injectable` refuses a shorter one before the agent starts (a 3-character value cannot be
  told apart from ordinary text, so it could be neither redacted nor detected reliably);
* every occurrence of every form of a value of >= 4 characters is redacted to `[REDACTED:NAME]`;
* the bundle writer holds a bundle back (never seals it) if any value had to be redacted, if any
  form remains after redaction, or if it was handed a value shorter than 4 characters;
* credential-named variables in the runner's own environment (readable through /proc when the agent
  runs unisolated) are redacted when >= AMBIENT_MIN_LEN (8) characters: they were not injected, and a CI
  machine's `SOME_TOKEN=true` must not hold back every run; a real credential is longer.

Detection is one pass per file: the file is read once, a "folded" view is built with two C-level
byte operations (collapse escaped backslashes, drop newline escapes, delete whitespace), and each
precomputed needle (folded the same way) is searched with `bytes.find` — no per-byte Python and
no regex alternation (measured: a 10 MiB file with three credentials scans in well under a second).
The fold-aware regex used for *replacing* a folded occurrence is compiled only for needles the
scan actually found.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

from skill_eval.core.errors import CheckFailed, ConfigError

CREDENTIAL_PATTERNS = ("*API_KEY*", "*APIKEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*")
MIN_SECRET_LEN = 4  # shortest value the runner injects, and the shortest it can redact without noise
AMBIENT_MIN_LEN = 8  # credential-named variables of the runner's own environment that it did not inject

FILE_IO_HELPERS = ("scan_tree", "scan_fd")  # they read the bundle being sealed, never a repository input
_WS = b" \t\r\n"
_ESCAPES = (b"\\r", b"\\n", b"\\t")


class SecretLeak(CheckFailed):
    """A credential value is (or was) present in a bundle; sealing is refused."""


# ----------------------------------------------------------------------------- which values


def is_credential_name(name: str, extra_names: Iterable[str] = ()) -> bool:
    return name in set(extra_names) or any(fnmatch.fnmatchcase(name.upper(), p) for p in CREDENTIAL_PATTERNS)


def secret_values(environ: Mapping[str, str] | None = None, extra_names: Iterable[str] = (), *,
                  min_len: int = AMBIENT_MIN_LEN) -> dict[str, str]:
    """Credential variables (name matches CREDENTIAL_PATTERNS, or listed) -> value, >= min_len characters.

    The default is the ambient threshold; what the runner injects comes from `injected_secrets` (any length).
    """
    env = os.environ if environ is None else environ
    wanted = set(extra_names)
    return {name: value for name, value in env.items()
            if is_credential_name(name, wanted) and len(value) >= max(1, min_len)}


def injected_secrets(env: Mapping[str, str], extra_names: Iterable[str] = ()) -> dict[str, str]:
    """Every non-empty credential value in the environment the runner hands the agent, any length."""
    return secret_values(env, extra_names, min_len=1)


def check_injectable(secrets: Mapping[str, str]) -> None:
    """Refuse (ConfigError, exit 2) to inject a credential too short to redact; names it, never its value."""
    short = sorted(name for name, value in secrets.items() if 0 < len(value) < MIN_SECRET_LEN)
    if short:
        raise ConfigError(f"credential variable(s) {', '.join(short)} have fewer than {MIN_SECRET_LEN} characters; "
                          "such a value cannot be redacted from evidence reliably",
                          field=short[0], fix=f"use a credential of at least {MIN_SECRET_LEN} characters, or unset it")


# ----------------------------------------------------------------------------- forms


def _b64_slices(data: bytes, alphabet: str) -> list[tuple[str, bytes]]:
    """The part of base64(prefix + data + suffix) that depends only on data, for prefixes of 0, 1, 2 bytes."""
    out = []
    for offset in range(3):
        enc = base64.b64encode(b"\0" * offset + data)
        if alphabet == "url":
            enc = enc.translate(bytes.maketrans(b"+/", b"-_"))
        start = -(-8 * offset // 6)  # first character made only of data bits
        end = 8 * (offset + len(data)) // 6  # characters after this one mix in what follows
        out.append((f"{'base64url' if alphabet == 'url' else 'base64'}@{offset}", enc[start:end]))
    return out


def _forms(value: str) -> list[tuple[str, bytes]]:
    """(kind, bytes) for every form of value a bundle file may contain, longest first, deduplicated."""
    raw = value.encode("utf-8", "surrogatepass")
    esc = json.dumps(value)[1:-1]
    forms = [("raw", raw), ("json", esc.encode()), ("json", json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")),
             ("json2", json.dumps(esc)[1:-1].encode()), ("reversed", value[::-1].encode("utf-8", "surrogatepass")),
             ("hex", raw.hex().encode()), ("HEX", raw.hex().upper().encode()),
             ("url", quote(raw, safe="").encode()), ("url+", quote_plus(raw, safe="").encode()),
             ("url%", "".join(f"%{b:02X}" for b in raw).encode()), ("url%", "".join(f"%{b:02x}" for b in raw).encode())]
    for kind, enc in _b64_slices(raw, "std"):
        forms += [(kind, enc), (kind, enc.replace(b"/", b"\\/"))]
    forms += _b64_slices(raw, "url")
    seen: set[bytes] = set()
    out = []
    for kind, needle in sorted(forms, key=lambda f: -len(f[1])):
        if needle and needle not in seen:
            seen.add(needle)
            out.append((kind, needle))
    return out


def fold(data: bytes) -> bytes:
    """The view line-folding cannot hide from: escaped backslashes collapsed, newline escapes and whitespace gone."""
    data = data.replace(b"\\\\", b"\\").replace(b"\\\\", b"\\")
    for esc in _ESCAPES:
        data = data.replace(esc, b"")
    return data.translate(None, _WS)


_GAP = rb"(?:[ \t\r\n]|\\+[rnt])*"  # what may separate two characters of a folded form


@lru_cache(maxsize=256)
def _folded_regex(folded: bytes) -> re.Pattern[bytes]:
    return re.compile(_GAP.join(re.escape(folded[i:i + 1]) for i in range(len(folded))))


def marker(name: str) -> str:
    return f"[REDACTED:{name}]"


_marker = marker  # the name runner.sandbox re-exports


@dataclass(frozen=True)
class Needle:
    name: str  # the variable
    kind: str  # which form (raw, base64@1, hex, ...)
    raw: bytes
    folded: bytes


@dataclass(frozen=True)
class Hit:
    name: str
    kind: str


class Scanner:
    """Every needle of a secret map, precomputed once per bundle."""

    def __init__(self, secrets: Mapping[str, str]):
        self.secrets = dict(secrets)
        self.too_short = sorted(n for n, v in self.secrets.items() if 0 < len(v) < MIN_SECRET_LEN)
        needles = []
        for name, value in self.secrets.items():
            if len(value) < MIN_SECRET_LEN:
                continue
            for kind, form in _forms(value):
                folded = fold(form)
                if len(folded) >= MIN_SECRET_LEN:
                    needles.append(Needle(name, kind, form, folded))
        self.needles = sorted(needles, key=lambda n: (-len(n.raw), n.name, n.kind))
        self._by_fold: dict[bytes, list[Needle]] = {}
        for n in self.needles:
            self._by_fold.setdefault(n.folded, []).append(n)
        # A needle holding whitespace or a backslash may not survive folding intact: search it raw too.
        self._raw_too = [n for n in self.needles if n.raw != n.folded or b"\\" in n.raw]

    def __bool__(self) -> bool:
        return bool(self.needles)

    def scan(self, data: bytes) -> list[Hit]:
        """Which (variable, form) pairs occur in data, folded or not."""
        if not self.needles:
            return []
        view = fold(data)
        hits: dict[tuple[str, str], None] = {}
        for folded, group in self._by_fold.items():
            if folded in view:
                hits.update(((n.name, n.kind), None) for n in group)
        for n in self._raw_too:
            if (n.name, n.kind) not in hits and n.raw in data:
                hits[(n.name, n.kind)] = None
        return [Hit(name, kind) for name, kind in hits]

    def redact_bytes(self, data: bytes) -> tuple[bytes, list[Hit]]:
        """data with every found form replaced by its marker, and what was replaced."""
        found = self.scan(data)
        if not found:
            return data, []
        wanted = {(h.name, h.kind) for h in found}
        for n in self.needles:
            if (n.name, n.kind) not in wanted:
                continue
            mark = marker(n.name).encode()
            data = data.replace(n.raw, mark)
            if n.folded in fold(data):
                data = _folded_regex(n.folded).sub(mark, data)
        return data, found

    def redact(self, data: Any) -> Any:
        """Redact bytes, str, or JSON-like containers (keys included)."""
        if not self.needles:
            return data
        if isinstance(data, bytes):
            return self.redact_bytes(data)[0]
        if isinstance(data, str):
            return self.redact_bytes(data.encode("utf-8", "surrogatepass"))[0].decode("utf-8", "surrogatepass")
        if isinstance(data, dict):
            return {self.redact(k): self.redact(v) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return type(data)(self.redact(v) for v in data)
        return data


@lru_cache(maxsize=16)
def _scanner(items: frozenset[tuple[str, str]]) -> Scanner:
    return Scanner(dict(items))


def scanner(secrets: Mapping[str, str]) -> Scanner:
    return _scanner(frozenset(secrets.items()))


def redact(data: Any, secrets: Mapping[str, str]) -> Any:
    """Replace every form of every credential value in data (bytes, str, or JSON-like containers)."""
    return scanner(secrets).redact(data) if secrets else data


def assert_no_secrets(bundle_dir: os.PathLike[str] | str, secrets: Mapping[str, str]) -> None:
    """Refuse (SecretLeak) if any file below bundle_dir, or any file name, holds a credential in any form.

    The message names the file, the variable and the form, never the value.
    """
    found = scan_tree(bundle_dir, secrets)
    if found:
        rel, hits = found[0]
        raise SecretLeak(f"contains {describe(hits)}", source=rel,
                         fix="redact it before sealing (runner.secrets.redact)")


def scan_tree(bundle_dir: os.PathLike[str] | str, secrets: Mapping[str, str]) -> list[tuple[str, list[Hit]]]:
    """(relative path, hits) for every file whose name or bytes hold a credential form; no symlink followed."""
    sc = scanner(secrets)
    if not sc:
        return []
    out = []
    root_fd = os.open(bundle_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        out = scan_fd(root_fd, sc)
    finally:
        os.close(root_fd)
    return out


def scan_fd(root_fd: int, sc: Scanner) -> list[tuple[str, list[Hit]]]:
    """scan_tree on an open directory (the bundle writer's temp dir); symlinks are reported as leaks."""
    out = []
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=root_fd, follow_symlinks=False):
        dirnames.sort()
        base = "" if dirpath == "." else dirpath[2:] + "/"
        for d in dirnames:
            hits = sc.scan(d.encode("utf-8", "surrogateescape"))
            if hits:
                out.append((base + d + "/", hits))
        for fname in sorted(filenames):
            rel = base + fname
            hits = sc.scan(fname.encode("utf-8", "surrogateescape"))
            try:
                fd = os.open(fname, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                out.append((rel, [*hits, Hit("<symlink or unreadable>", "not a regular file")]))
                continue
            with os.fdopen(fd, "rb") as fh:
                hits += [h for h in sc.scan(fh.read()) if h not in hits]
            if hits:
                out.append((rel, hits))
    return out


def describe(hits: Iterable[Hit]) -> str:
    """`a form of NAME (raw, base64@1)` for each variable: names and forms, never a value."""
    by_name: dict[str, list[str]] = {}
    for h in hits:
        by_name.setdefault(h.name, []).append(h.kind)
    return "; ".join(f"a form of {name} ({', '.join(sorted(set(kinds)))})" for name, kinds in sorted(by_name.items()))
