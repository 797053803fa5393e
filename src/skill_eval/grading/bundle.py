"""Loading a transcript bundle strictly, without ever raising on its content.

A bundle is evidence recorded by a runner we do not trust blindly, so every file is
read through one guarded accessor: paths must stay inside the bundle (no `..`, no
absolute paths, no symlinks), files are capped in size (`evals.max_bundle_file_bytes`),
JSON is strict (duplicate keys, bad UTF-8, NaN refused). A problem never becomes an
exception: it becomes a `Problem` naming the file and the reason, and the graders turn
problems into failed dimensions. The result is a typed `Bundle`; graders read nothing
else from disk except through `Bundle.read_captured`.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.core import formats, fsio, hashing, schemas, stored, strict
from skill_eval.core.errors import SkillEvalError, message_of

# Files each kind must carry (DESIGN §6; judgments.json and facts.json are optional:
# absent judgments are "not judged", facts are required only when the scenario has actions).
REQUIRED = {
    "behavioral": ("meta.json", "prompt.txt", "events.jsonl", "calls.jsonl", "final.md", "claim.json", "usage.json"),
    "trigger": ("meta.json", "prompt.txt", "events.jsonl", "final.md", "usage.json"),
}
# Which checks a broken file poisons ("*": all). A file the graders cannot trust fails every
# check that would have read it, never more (so failure sets stay meaningful) and never
# fewer; a problem no applicable check reads fails the bundle-level check.
FILE_CHECKS: dict[str, tuple[str, ...]] = {
    "meta.json": ("*",),
    "prompt.txt": ("bundle",),
    "usage.json": ("bundle",),
    "events.jsonl": ("1", "activation"),
    "calls.jsonl": ("1", "2", "3", "6"),
    "final.md": ("2", "6", "activation"),
    "claim.json": ("2", "6"),
    "judgments.json": ("4", "5"),
    "facts.json": ("oracle",),
}
# The schema of each file `load` validates (a .jsonl file: of each line).
SCHEMAS = {"meta.json": "meta", "events.jsonl": "event", "calls.jsonl": "call", "claim.json": "claim_file",
           "usage.json": "usage", "judgments.json": "judgments", "facts.json": "facts"}
DEFAULT_MAX_BYTES = strict.MAX_FILE_BYTES  # one source for the 32 MiB default
# The names `load` reads: plain one-part relative paths, which `_fast_read` opens without its checks
# (they hold no "/", NUL or backslash and are not "", "." or "..").
_PLAIN_NAMES = frozenset(FILE_CHECKS)
assert all(n and "/" not in n and "\x00" not in n and "\\" not in n and n not in (".", "..") for n in _PLAIN_NAMES)


@dataclass(frozen=True)
class Problem:
    """One reason a bundle file could not be trusted."""

    file: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


@dataclass(frozen=True)
class StreamRef:
    """A captured stdout/stderr stream of one call: where it lies in the bundle, its digest and size."""

    path: str
    sha256: str
    bytes: int


@dataclass(frozen=True)
class Output:
    """One report output a call asked for (`-o FORMAT=PATH` or stdout), and the runner's snapshot of it."""

    option: str
    format: str | None
    requested: str
    kind: str  # file | dir | stdout
    snapshot: str | None
    sha256: str | None
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Input:
    """One file argument the subject read, digested by the runner before and after the call (call v2)."""

    arg: int
    path: str  # sandbox-relative, or "<outside-sandbox>"
    kind: str  # file | dir | missing
    sha256: str | None
    stable: bool


@dataclass(frozen=True)
class Call:
    """One recorded subject invocation (a calls.jsonl line)."""

    call: int
    status: str
    argv: tuple[str, ...]
    cwd: str
    exit_code: int | None
    signal: int | None
    stdout: StreamRef | None
    stderr: StreamRef | None
    outputs: tuple[Output, ...]
    substitutions: dict[str, int]
    raw: dict[str, Any]
    # None: no input evidence (a v1 record, upgraded on read) — such a call can carry no verdict.
    inputs: tuple[Input, ...] | None = None


@dataclass
class Bundle:
    """One bundle directory, read strictly: each file parsed and validated once, problems listed, never raised."""

    root: Path
    max_bytes: int
    meta: dict[str, Any] | None = None
    kind: str | None = None
    calls: tuple[Call, ...] = ()
    events: tuple[dict[str, Any], ...] = ()
    final_text: str | None = None
    claim_file: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    judgments: dict[str, Any] | None = None
    facts: dict[str, Any] | None = None
    present: frozenset[str] = frozenset()
    problems: list[Problem] = field(default_factory=list)
    # The caller walked the whole bundle directory just before loading it and met no symlink (the
    # evidence pass: fsio.scan_below): a nested read need not lstat its directories again.
    linkfree: bool = False

    # -- guarded access -----------------------------------------------------------------
    def resolve(self, rel: str) -> Path:
        """The path of `rel` inside the bundle; raises SkillEvalError if it could escape."""
        return safe_path(self.root, rel)

    def read_bytes(self, rel: str) -> bytes:
        data = _fast_read(self.root, rel, self.max_bytes, self.linkfree)
        if isinstance(data, bytes):
            return data
        if data is _MISSING or (data is None and _plain_rel(rel) and not os.path.lexists(f"{self.root}/{rel}")):
            kept = self._read_stored(rel)  # compact evidence: a gzip raw stream, or a shared artifact (core.stored)
            if kept is not None:
                return kept
            raise SkillEvalError(f"{rel} is missing")
        path = self.resolve(rel)
        data = _read_regular(path, self.max_bytes)
        if data is not None:
            return data
        try:
            return strict.read_bytes(path, max_bytes=self.max_bytes)
        except SkillEvalError as exc:
            reason = message_of(exc)
            prefix = f"{path}: "
            raise SkillEvalError(f"{rel}: {reason[len(prefix):] if reason.startswith(prefix) else reason}") from None

    def _read_stored(self, rel: str) -> bytes | None:
        try:
            return stored.read(self.root, rel, self.max_bytes)
        except (SkillEvalError, OSError) as exc:
            raise SkillEvalError(message_of(exc) if isinstance(exc, SkillEvalError) else f"{rel}: {exc}") from None

    def read_captured(self, rel: str, expected_sha256: str | None = None) -> bytes:
        """Read a captured artifact, verifying its recorded digest (tampering fails closed)."""
        data = self.read_bytes(rel)
        if expected_sha256 is not None and hashing.sha256_bytes(data) != expected_sha256:
            raise SkillEvalError(f"{rel}: sha256 does not match the call record (artifact changed after recording)")
        return data


_MISSING = fsio.MISSING  # `_fast_read`'s answer for a file that does not exist while every directory above it does


def _fast_read(root: Path, rel: str, max_bytes: int, linkfree: bool = False) -> bytes | fsio.Missing | None:
    """The common case of `Bundle.read_bytes` in as few syscalls as possible, or None for the
    careful path (which then words every refusal exactly as before).

    Why: re-grading reads ~10 files per bundle over thousands of bundles, and the careful path
    builds Path objects and lstat()s every component. Here a plain relative name is checked by
    string ops, intermediate directories are lstat()ed (they must not be symlinks), and the file
    itself is opened with O_NOFOLLOW (a symlink fails the open, and the careful path explains it).
    Returns `_MISSING` when the file does not exist but every directory above it does.
    `linkfree`: the bundle directory holds no symlink at all (walked just before): the directories
    are not lstat()ed (a missing one fails the open as a missing file, worded as the careful path does).
    """
    base = os.fspath(root)
    if type(rel) is str and rel in _PLAIN_NAMES:  # a bundle file's own name (load reads these): nothing to check, no directory above it
        return fsio.open_plain(f"{base}/{rel}", max_bytes)
    if not _plain_rel(rel):
        return None
    parts = rel.split("/")
    for i in range(1, 1 if linkfree else len(parts)):
        try:
            if not stat.S_ISDIR(os.lstat(f"{base}/{'/'.join(parts[:i])}").st_mode):
                return None
        except OSError:
            return None
    return fsio.open_plain(f"{base}/{rel}", max_bytes)


def _plain_rel(rel: object) -> bool:
    """A relative path `_fast_read` may answer without the
    careful path: a str, not empty, not absolute, no NUL, no backslash, no empty, "." or ".." part.
    Anything else goes through `safe_path`, which refuses it by name."""
    if type(rel) is not str or not rel or "\x00" in rel or "\\" in rel or rel[0] == "/":
        return False
    parts = rel.split("/")
    return "" not in parts and "." not in parts and ".." not in parts


def _read_regular(path: Path, max_bytes: int) -> bytes | None:
    """One open + fstat for the common case (a regular file within the cap); None sends the caller
    to strict.read_bytes, which words every refusal (symlink, not a file, too large, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO must not hang
    except OSError:
        return None
    return fsio.read_open(fd, max_bytes)


def safe_path(root: Path, rel: str) -> Path:
    """Resolve a bundle-relative path, refusing traversal, absolute paths and symlinks."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or "\\" in rel:
        raise SkillEvalError(f"path {rel!r} is not a plain relative path")
    if rel.startswith("/"):
        raise SkillEvalError(f"path {rel!r} is absolute; bundle paths must be relative")
    # the parts PurePosixPath(rel) would give, by string ops (this runs for every file of every bundle)
    parts = [p for p in rel.split("/") if p and p != "."]
    if ".." in parts:
        raise SkillEvalError(f"path {rel!r} contains '..'; bundle paths may not leave the bundle")
    current = os.fspath(root)
    for part in parts:
        current = f"{current}/{part}"
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            raise SkillEvalError(f"{rel} is missing") from None
        except OSError as exc:
            raise SkillEvalError(f"{rel} cannot be read ({exc.strerror})") from None
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(current)
            inside = os.path.commonpath([os.path.realpath(root), target]) == os.path.realpath(root)
            where = "inside" if inside else "outside"
            raise SkillEvalError(f"{rel} is a symlink (pointing {where} the bundle); bundles may not contain symlinks")
    return Path(current) if parts else root


def _parse_jsonl(text: str, name: str, schema: str) -> list[dict[str, Any]]:
    out = []
    for i, value in enumerate(strict.loads_jsonl(text, name), start=1):
        if schema in formats.FORMATS:  # version check + upgrade before validation
            value = formats.upgrade(value, schema, f"{name}:{i}")
        errs = schemas.errors(value, schema)
        if errs:
            raise SkillEvalError(f"line {i}: {errs[0]}")
        out.append(value)
    return out


def _to_call(rec: dict[str, Any]) -> Call:
    def stream(v: dict[str, Any] | None) -> StreamRef | None:
        return None if v is None else StreamRef(v["path"], v["sha256"], v["bytes"])

    outputs = tuple(
        Output(o["option"], o["format"], o["requested"], o["kind"], o["snapshot"], o.get("sha256"), dict(o.get("files", {})))
        for o in rec["outputs"]
    )
    return Call(
        call=rec["call"], status=rec["status"], argv=tuple(rec["argv"]), cwd=rec["cwd"],
        exit_code=rec["exit_code"], signal=rec["signal"], stdout=stream(rec["stdout"]), stderr=stream(rec["stderr"]),
        outputs=outputs, substitutions=dict(rec["substitutions"]), raw=rec, inputs=_inputs(rec.get("inputs")),
    )


def _inputs(value: list[dict[str, Any]] | None) -> tuple[Input, ...] | None:
    if value is None:
        return None
    return tuple(Input(i["arg"], i["path"], i["kind"], i["sha256"], i["stable"]) for i in value)


def _check_call_paths(call: Call) -> None:
    """Captured paths must belong to their own call number (a renumbered record cannot borrow another call's files)."""
    n = call.call
    for name, ref, want in (("stdout", call.stdout, f"captured/{n}.out"), ("stderr", call.stderr, f"captured/{n}.err")):
        if ref is not None and ref.path != want:
            raise SkillEvalError(f"call {n}: {name} path {ref.path!r} is not {want!r}")
    for out in call.outputs:
        if out.snapshot is not None and not out.snapshot.startswith(f"captured/{n}.out.d/"):
            raise SkillEvalError(f"call {n}: snapshot {out.snapshot!r} is not under captured/{n}.out.d/")


OUTSIDE_SANDBOX = "<outside-sandbox>"  # the recorder's name for an operand outside the sandbox (never digested)
_HEX = frozenset("0123456789abcdef")


def is_sha256(value: object) -> bool:
    """64 lowercase hex digits (what every digest field of a bundle holds)."""
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


def _operand(arg: str) -> str | None:
    """The path an argv token may name, as the recorder reads it: an operand, or VALUE of --opt=VALUE."""
    if arg.startswith("-"):
        return arg.split("=", 1)[1] if "=" in arg else None
    return arg


def _check_inputs(call: Call) -> None:
    """Every field of every input entry, against the recorder's rules (DESIGN §6, call v2 `inputs`).

    `<outside-sandbox>` was never digested (sha256 null, stable false); a `missing` operand has no
    digest; a file or dir inside the sandbox has one; a path is the operand `arg` names, resolved
    against the call's cwd — never a placeholder, an absolute path or one leaving the sandbox."""
    n, seen = call.call, set[int]()
    for j, i in enumerate(call.inputs or ()):
        where = f"call {n}: inputs[{j}]"
        if i.arg in seen:
            raise SkillEvalError(f"{where}: argument {i.arg} has a second input entry; the recorder writes one per operand")
        seen.add(i.arg)
        token = _operand(call.argv[i.arg]) if i.arg < len(call.argv) else None
        if token is None:
            raise SkillEvalError(f"{where}: arg {i.arg} names no operand of argv {list(call.argv)}; an input entry "
                                 f"belongs to an argv operand (or --opt=VALUE)")
        if i.path == OUTSIDE_SANDBOX:
            if i.kind == "missing" or i.sha256 is not None or i.stable:
                raise SkillEvalError(f"{where}: path {OUTSIDE_SANDBOX} with kind {i.kind!r}, sha256 {i.sha256!r}, stable "
                                     f"{i.stable}; the runner never digests a file outside the sandbox: it records kind "
                                     f"file/dir, sha256 null and stable false")
            continue
        if i.path.startswith("<"):
            raise SkillEvalError(f"{where}: path {i.path!r} is a placeholder; only {OUTSIDE_SANDBOX} is one, anything "
                                 f"else is a sandbox-relative path")
        if i.kind == "missing":
            if i.sha256 is not None:
                raise SkillEvalError(f"{where}: kind missing with sha256 {i.sha256[:12]}…; a missing operand has "
                                     f"sha256 null")
            continue
        parts = i.path.split("/")
        if i.path.startswith("/") or ".." in parts or "" in parts or "\\" in i.path:
            raise SkillEvalError(f"{where}: path {i.path!r} is not a plain sandbox-relative path (absolute, empty part "
                                 f"or '..'); a {i.kind} input lies inside the sandbox")
        if not is_sha256(i.sha256):
            raise SkillEvalError(f"{where}: a {i.kind} inside the sandbox with sha256 {i.sha256!r}; the runner records "
                                 f"the 64-hex digest of what the subject read")
        if not token.startswith("/") and call.cwd != OUTSIDE_SANDBOX:
            named = {_norm(call.cwd, token)} | ({_norm(call.cwd, token[1:])} if token.startswith("@") else set())
            if i.path not in named:
                raise SkillEvalError(f"{where}: path {i.path!r} is not what argument {i.arg} ({token!r}, cwd "
                                     f"{call.cwd!r}) names; the path is the operand resolved against cwd")


def _norm(cwd: str, value: str) -> str:
    return posixpath.normpath(posixpath.join(cwd or ".", value))


def _check_outputs(call: Call) -> None:
    """One entry per output request, each at its own index: `captured/N.out.d/<i>[/<name>]` (DESIGN §6)."""
    n, seen = call.call, dict[tuple[str, str], int]()
    for j, out in enumerate(call.outputs):
        key = (out.option, out.requested)
        if key in seen:
            raise SkillEvalError(f"call {n}: outputs[{j}] repeats outputs[{seen[key]}] ({out.option} {out.requested!r}); "
                                 f"the recorder writes one entry per output request")
        seen[key] = j
        if out.snapshot is not None:
            base = f"captured/{n}.out.d/{j}"
            want = base if out.kind == "dir" else f"{base}/{posixpath.basename(out.requested) or 'output'}"
            if out.kind == "stdout" or out.snapshot != want:
                raise SkillEvalError(f"call {n}: outputs[{j}] ({out.kind}) has snapshot {out.snapshot!r}, not {want!r}"
                                     + ("; a stdout output has snapshot null" if out.kind == "stdout" else
                                        "; each output is snapshotted at its own index (a duplicated entry cannot share one)"))
        if not _requested_in_argv(call.argv, out):
            raise SkillEvalError(f"call {n}: outputs[{j}] says {out.option} {out.requested!r} was requested, but argv "
                                 f"{list(call.argv)} asks for no such output; the recorder lists the outputs argv requests")


def _requested_in_argv(argv: tuple[str, ...], out: Output) -> bool:
    """Whether argv requests this output in a form the recorder parses (runner.outputs.parse_outputs):
    `OPT VALUE`, `--long=VALUE` or a short `-oVALUE`, VALUE being `requested` or `FORMAT=requested`."""
    values = {out.requested} | ({f"{out.format}={out.requested}"} if out.format else set())
    tokens = list(argv[1:])
    if "--" in tokens:
        tokens = tokens[: tokens.index("--")]
    for i, tok in enumerate(tokens):
        if tok == out.option and i + 1 < len(tokens) and tokens[i + 1] in values:
            return True
        if tok.startswith(out.option) and tok != out.option:
            rest = tok[len(out.option):]
            if out.option.startswith("--") and rest.startswith("=") and rest[1:] in values:
                return True
            if len(out.option) == 2 and not out.option.startswith("--") and rest in values:
                return True
    return False


def _check_call_numbers(calls: list[Call]) -> None:
    for c in calls:
        _check_call_paths(c)
        _check_inputs(c)
        _check_outputs(c)
    numbers = sorted(c.call for c in calls)
    if len(set(numbers)) != len(numbers):
        dup = sorted({n for n in numbers if numbers.count(n) > 1})
        raise SkillEvalError(f"duplicate call number(s) {dup}")
    if numbers != list(range(1, len(numbers) + 1)):
        raise SkillEvalError(f"call numbers {numbers} are not 1..{len(numbers)}: a record was lost or invented")


def _unusable(bundle: Bundle, root: Path, linkfree: bool, names: Collection[str] | None) -> Problem | None:
    """Why `root` cannot be loaded as a bundle directory (None: it can). `root` as the caller named it."""
    if linkfree or names is not None:
        return None  # the caller's walk listed this very directory (a directory, not a link) a moment ago
    try:  # one lstat: what `is_symlink() or not is_dir()` answered, errors included (pathlib ignores these four)
        st = os.lstat(bundle.root)
        usable = not stat.S_ISLNK(st.st_mode) and stat.S_ISDIR(st.st_mode)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return Problem("meta.json", f"{root} cannot be read ({exc.strerror})")
        usable = False
    return None if usable else Problem("meta.json", f"{root} is not a bundle directory")


class _Reader:
    """`load`'s reading of one bundle's files: each read once, a problem recorded on the bundle, never raised."""

    __slots__ = ("bundle", "names", "max_bytes", "present")

    def __init__(self, bundle: Bundle, names: Collection[str] | None, max_bytes: int):
        self.bundle, self.names, self.max_bytes = bundle, names, max_bytes
        self.present: set[str] = set()

    def text(self, name: str) -> str | None:
        if self.names is not None and name not in self.names:
            return None  # absent, as _fast_read's _MISSING says (optional judgments/facts, or a required file: reported below)
        bundle = self.bundle
        fast = _fast_read(bundle.root, name, self.max_bytes)
        if fast is _MISSING:  # absent (optional judgments/facts, or a required file: reported below)
            return None
        try:
            data = fast if isinstance(fast, bytes) else bundle.read_bytes(name)
            self.present.add(name)
            return strict.decode_utf8(data, name)
        except SkillEvalError as exc:
            if _missing(bundle.root, name):
                return None
            bundle.problems.append(Problem(name, _short(exc, name)))
            self.present.add(name)
            return None

    def json_file(self, name: str) -> Any:
        raw = self.text(name)
        if raw is None:
            return None
        schema = SCHEMAS[name]
        try:
            value = strict.loads_json(raw, name)
            if schema in formats.FORMATS:  # version check + upgrade before validation
                value = formats.upgrade(value, schema, name)
        except SkillEvalError as exc:
            self.bundle.problems.append(Problem(name, _short(exc, name)))
            return None
        errs = schemas.errors(value, schema)
        if errs:
            self.bundle.problems.append(Problem(name, f"does not match schemas/{schema}.schema.json: {errs[0]}"))
            return None
        return value

    def events(self) -> None:
        raw = self.text("events.jsonl")
        if raw is None:
            return
        try:
            self.bundle.events = tuple(_parse_jsonl(raw, "events.jsonl", SCHEMAS["events.jsonl"]))
        except SkillEvalError as exc:
            self.bundle.problems.append(Problem("events.jsonl", _short(exc, "events.jsonl")))

    def calls(self) -> None:
        raw = self.text("calls.jsonl")
        if raw is None:
            return
        try:
            calls = [_to_call(r) for r in _parse_jsonl(raw, "calls.jsonl", SCHEMAS["calls.jsonl"])]
            _check_call_numbers(calls)
            self.bundle.calls = tuple(sorted(calls, key=lambda c: c.call))
        except SkillEvalError as exc:
            self.bundle.problems.append(Problem("calls.jsonl", _short(exc, "calls.jsonl")))


def load(root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, linkfree: bool = False,
         names: Collection[str] | None = None) -> Bundle:
    """Load every file of the bundle at `root`. Never raises on bundle content.
    `linkfree`: the caller just walked `root` whole and met no symlink (Bundle.linkfree);
    `names`: the names of root's entries it listed then (a file not among them is absent: no open)."""
    bundle = Bundle(root=root if isinstance(root, Path) else Path(root), max_bytes=max_bytes, linkfree=linkfree)
    refused = _unusable(bundle, root, linkfree, names)
    if refused is not None:
        bundle.problems.append(refused)
        return bundle
    read = _Reader(bundle, names, max_bytes)
    bundle.meta = read.json_file("meta.json")
    bundle.kind = bundle.meta["kind"] if bundle.meta else None
    kind = bundle.kind or "behavioral"
    read.events()
    read.calls()
    bundle.final_text = read.text("final.md")
    read.text("prompt.txt")
    bundle.claim_file = read.json_file("claim.json")
    bundle.usage = read.json_file("usage.json")
    # judgments.json is not read here: only grading/judgments.read_judgments reads it, and only verified
    # entries reach a grade (bundle.judgments is set by judgments.graded)
    bundle.facts = read.json_file("facts.json")
    bundle.present = frozenset(read.present)
    for name in REQUIRED.get(kind, ()):
        if name not in read.present:
            bundle.problems.append(Problem(name, f"missing (required for a {kind} bundle)"))
    return bundle


def _missing(root: Path, name: str) -> bool:
    try:
        (root / name).lstat()
        return False
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _short(exc: Exception, name: str) -> str:
    message = message_of(exc)
    for prefix in (f"{name}: ", f"{name} "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    return message
