"""Strict readers for every file format skill-eval consumes.

Evidence is checked, never trusted, so a reader must refuse anything ambiguous:
duplicate keys (which value would a grader see?), a BOM, invalid UTF-8, NaN and
infinities (they turn every threshold comparison false), trailing data, truncated
documents. It must also refuse anything that costs more to read than the file is
worth: files over MAX_FILE_BYTES, nesting deeper than MAX_DEPTH, YAML anchors and
aliases (a 324-byte alias bomb expands to gigabytes), integers longer than
MAX_INT_DIGITS, strings holding lone surrogates (they cannot be written back out).
Each refusal is an InputError naming the file (and, where known, the line), so a
bad file is one line of output and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from skill_eval.core.errors import InputError

if TYPE_CHECKING:  # at run time: imported, and the loaders built, by the first YAML read (_build_yaml_loaders)
    import yaml

    _StrictLoader: type[yaml.SafeLoader]
    _CStrictLoader: type[yaml.SafeLoader] | None

_BOM = b"\xef\xbb\xbf"

MAX_FILE_BYTES = 32 * 1024 * 1024  # the one default cap (config `evals.max_bundle_file_bytes` may lower it)
MAX_DEPTH = 64  # containers inside containers; no format skill-eval reads needs more than ~8
MAX_INT_DIGITS = 30  # far beyond any count, size or exit code; keeps bignums out of arithmetic

_T = TypeVar("_T")


def decode_utf8(data: bytes, source: object) -> str:
    """Decode bytes as UTF-8, refusing a BOM and invalid sequences."""
    if data.startswith(_BOM):
        raise InputError("starts with a UTF-8 byte-order mark", source=source, fix="save the file as UTF-8 without BOM")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"invalid UTF-8 at byte {exc.start}", source=source, fix="save the file as UTF-8"
        ) from None


# What to do when a content file is missing (every "missing file" error names its fix).
_MISSING_FIX = {
    "trigger_corpus.yaml": "add labelled prompts, negatives included (format: `skill-eval explain corpus`; "
                           "`skill-eval init --force` drafts one for every skill)",
    "scenarios.yaml": "add behaviour scenarios (schema: scenarios.schema.json), then record them with `skill-eval run`",
    "ground_truth.json": "add the ground-truth cases the scenarios cite (schema: ground_truth.schema.json)",
    "rubric.yaml": "add the rubric of dimensions 1-6 (schema: rubric.schema.json; skill-eval's templates/init has one)",
    "skill-eval-pack.json": "run `skill-eval pack` and commit the result",
}


def read_bytes(path: Path, *, max_bytes: int | None = None) -> bytes:
    """Read a regular file, refusing symlinks, directories and oversized files (MAX_FILE_BYTES by default)."""
    limit = MAX_FILE_BYTES if max_bytes is None else max_bytes
    try:
        if path.is_symlink():
            raise InputError("is a symlink; symlinks are refused", source=path, fix="replace it with a regular file")
        if not path.is_file():
            raise InputError("missing or not a regular file", source=path, fix=_MISSING_FIX.get(
                path.name, "check the path: create the file, or correct the option or config field that names it"))
        if path.stat().st_size > limit:
            raise InputError(f"larger than the {limit}-byte cap", source=path, fix="shrink the file")
        with path.open("rb") as fh:
            data = fh.read(limit + 1)  # the file may grow between stat and read
        if len(data) > limit:
            raise InputError(f"larger than the {limit}-byte cap", source=path, fix="shrink the file")
        return data
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or type(exc).__name__})", source=_short_path(path)) from None
    except ValueError as exc:  # embedded NUL in the path
        raise InputError(f"is not a usable path ({exc})", source=_short_path(path)) from None


def _short_path(path: object) -> str:
    """A path as a locator, shortened so an over-long path still gives a one-line error."""
    text = str(path)
    return text if len(text) <= 300 else f"{text[:150]}...{text[-100:]}"


def read_text(path: Path, *, max_bytes: int | None = None) -> str:
    return decode_utf8(read_bytes(path, max_bytes=max_bytes), path)


def check_value(value: _T, source: object, *, max_depth: int = MAX_DEPTH) -> _T:
    """Walk a parsed document (iteratively): refuse deep nesting, non-finite floats, huge
    integers and strings that are not valid Unicode (lone surrogates), naming the field."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        field = (where if len(where) <= 80 else where[:60] + "...") or None
        if isinstance(item, dict | list):
            if depth >= max_depth:
                raise InputError(f"nested deeper than {max_depth} levels", source=source, fix="flatten the document")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str):
                    _check_string(key, source, field)
                stack.append((child, f"{where}.{key}" if where else str(key), depth + 1))
        elif isinstance(item, str):
            _check_string(item, source, field)
        elif isinstance(item, float) and not math.isfinite(item):
            raise InputError(f"number {item} is not finite", source=source, field=field, fix="use a finite number")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 10 ** MAX_INT_DIGITS:
            raise InputError(f"integer has more than {MAX_INT_DIGITS} digits", source=source, field=field,
                             fix="use a smaller number")
    return value


def _check_string(text: str, source: object, field: str | None) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("string holds a lone surrogate (not valid Unicode)", source=source, field=field,
                         fix="remove the \\uD8xx-\\uDFxx escape") from None


class _Duplicate(Exception):  # noqa: N818 - a private signal, never shown
    """Raised by the decoders' duplicate-key hook; loads_json words it (naming the file)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's dict, refusing a repeated key: dict() at C speed; only a collision (rare) walks
    the pairs to name the first repeated key (no source here: the decoders are built once)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"non-standard JSON constant {name}")


_LONG_DIGITS = re.compile(rf"\d{{{MAX_INT_DIGITS + 1}}}")


# bytes.translate + a substring search: ~20x cheaper than the regex above over a document
_ASCII_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_RUN = b"0" * (MAX_INT_DIGITS + 1)


def _utf8(text: str) -> bytes | None:
    """`text` as UTF-8, or None when it cannot be encoded (it holds a lone surrogate)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _long_digit_run(data: bytes | None) -> bool:
    """Could the document (`_utf8` of its text) hold an integer with more than MAX_INT_DIGITS digits?
    True when it has a run of more ASCII digits than that anywhere (JSON integers are ASCII digits),
    and when it could not be encoded (then the hook decides, as it always may: the hook only refuses
    what is too long)."""
    if data is None:
        return True
    return len(data) > MAX_INT_DIGITS and _DIGIT_RUN in data.translate(_ASCII_DIGITS)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer has more than {MAX_INT_DIGITS} digits")
    return int(text)


def loads_json(text: str, source: object) -> Any:
    """Parse one strict JSON document (no duplicates at any depth, no NaN, no trailing data),
    then apply check_value's limits."""
    if text.startswith("\ufeff"):
        raise InputError("starts with a byte-order mark", source=source, fix="remove the BOM")
    data = _utf8(text)  # once, for the integer precheck and the limits' fast answer
    try:
        # no run of more than MAX_INT_DIGITS digits anywhere: no integer can be too long, so the C parser's
        # own int() stands in for the per-integer Python hook (which words the refusal when there is one)
        value = _decode(text, _DECODERS[1] if _long_digit_run(data) else _DECODERS[0])
    except _Duplicate as dup:
        raise InputError(f"duplicate JSON key {dup.key!r}", source=source, fix="keep exactly one entry per key") from None
    except InputError:
        raise
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source
        ) from None
    except RecursionError:
        raise InputError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels", source=source,
                         fix="flatten the document") from None
    except ValueError as exc:
        raise InputError(f"invalid JSON: {exc}", source=source) from None
    if _plainly_within_limits(text, value, data is not None):
        return value
    return check_value(value, source)


def _careful_parse(text: str) -> Any:
    """What loads_json's parse step was before the shared decoders (the reference
    tests/grading/test_perf_paths.py compares `_decode` with, refusals included)."""
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant,
                      parse_float=_finite_float, parse_int=_bounded_int if _LONG_DIGITS.search(text) else None)


def _strict_decoder(parse_int: Callable[[str], int] | None) -> json.JSONDecoder:
    return json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_reject_constant,
                            parse_float=_finite_float, parse_int=parse_int)


_WS = re.compile(r"[ \t\n\r]*")  # json.decoder.WHITESPACE


def _decode(text: str, decoder: json.JSONDecoder) -> Any:
    """`decoder.decode(text)` (what json.loads does), calling the C scanner directly in the common
    case: a str starting with its value, followed by nothing or whitespace. Anything else (leading
    whitespace, no value, trailing data, not a str) takes `decode` itself, which raises exactly what
    json.loads raised; an exception inside the scan is the one `decode` would raise (it only wraps
    StopIteration)."""
    if type(text) is not str or not text or text[0] in " \t\n\r":
        return decoder.decode(text)
    try:
        value, end = decoder.scan_once(text, 0)  # type: ignore[attr-defined]  # set in JSONDecoder.__init__
    except StopIteration:
        return decoder.decode(text)
    if end != len(text):
        tail = _WS.match(text, end)
        if tail is None or tail.end() != len(text):
            return decoder.decode(text)
    return value


# A \uXXXX escape of a UTF-16 surrogate (D800-DFFF): the only way a lone surrogate gets into a parsed string.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _plainly_within_limits(text: str, value: Any, encodable: bool) -> bool:
    """True when check_value cannot find anything in what loads_json parsed from `text`, decided
    from the text at C speed (check_value walks every value in Python: most of re-grading's time).

    loads_json's own hooks already refuse non-finite floats and over-long integers; what is left
    is depth (at most the number of opening brackets; else a walk over containers only) and lone
    surrogates (from a surrogate escape, or already in `text`, which then cannot be encoded:
    `encodable` is False).
    Anything else takes the full walk, which words the error exactly as before.
    """
    if not encodable or ("\\u" in text and _SURROGATE_ESCAPE.search(text)):
        return False
    return text.count("{") + text.count("[") < MAX_DEPTH or _shallow(value)


def _shallow(value: Any) -> bool:
    """No container nested MAX_DEPTH deep (check_value's depth rule, without visiting scalars)."""
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_DEPTH):
        if not level:
            return True
        nxt = []
        for item in level:
            for child in (item.values() if type(item) is dict else item):
                if type(child) is dict or type(child) is list:
                    nxt.append(child)
        level = nxt
    return not level


def loads_jsonl(text: str, source: object) -> list[Any]:
    """Parse JSON Lines: one strict JSON value per line. A blank line (anywhere but after the
    final newline) is refused — a writer never produces one, so it marks an edit."""
    fast = _plain_lines(text)
    if fast is not None:
        return fast
    return _loads_lines(text, source)


def _plain_lines(text: str) -> list[Any] | None:
    """The common case of loads_jsonl, or None for the line-by-line path (which then words every refusal
    exactly as before). What loads_json checks per document is asked once of the whole text (a BOM, a
    lone surrogate, a long digit run: any of them anywhere sends every line the careful way), and each
    line is scanned in place by the C scanner. A line must be exactly one value, starting at its first
    character and ending at its newline (not before, not after); anything else (blank, padded, deep,
    duplicate keys, NaN, ...) is left to the careful path."""
    if type(text) is not str or "\ufeff" in text or ("\\u" in text and _SURROGATE_ESCAPE.search(text)):
        return None
    data = _utf8(text)
    if data is None or _long_digit_run(data):
        return None
    scan = _DECODERS[0].scan_once  # type: ignore[attr-defined]  # set in JSONDecoder.__init__
    out: list[Any] = []
    pos, size = 0, len(text)
    try:
        while pos < size:
            if text[pos] in " \t\n\r":
                return None
            value, end = scan(text, pos)
            # one line, one value: nothing after it but the newline, and no newline inside it (JSON strings
            # hold none raw: one there is whitespace between tokens, which split the value over lines)
            if (end != size and text[end] != "\n") or text.find("\n", pos, end) != -1:
                return None
            if text.count("{", pos, end) + text.count("[", pos, end) >= MAX_DEPTH:
                return None
            out.append(value)
            pos = end + 1
    except Exception:  # noqa: BLE001 - any refusal (or StopIteration): the careful path words it
        return None
    return out


def _loads_lines(text: str, source: object) -> list[Any]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    out = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            raise InputError(f"line {i} is blank", source=source, fix="remove the blank line")
        out.append(loads_json(line, f"{source} line {i}"))
    return out


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is not finite")
    return value


# Built once (json.loads with hooks builds a decoder and its C scanner per document); [1] has the integer hook.
_DECODERS = (_strict_decoder(None), _strict_decoder(_bounded_int))


def load_json(path: Path, *, max_bytes: int | None = None) -> Any:
    return loads_json(read_text(path, max_bytes=max_bytes), path)


def dumps_json(value: Any) -> str:
    """The project's one JSON writer: sorted keys, 2-space indent, trailing newline."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def _build_yaml_loaders() -> None:
    """Import PyYAML and define _StrictLoader and _CStrictLoader, on the first YAML document read:
    the import costs ~7 ms that a command reading only JSON and TOML (every command reads the TOML
    config) never needs. `strict._StrictLoader` from outside builds them too (module __getattr__)."""
    global yaml, _StrictLoader, _CStrictLoader
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """SafeLoader that refuses duplicate mapping keys, anchors and aliases, and deep nesting.

        Dates stay strings (no implicit timestamp type): a schema decides what a field holds, and
        an impossible date like 2020-02-31 is then an ordinary schema error, not a crash.
        """

        _depth = 0

        def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
            event = self.peek_event()  # type: ignore[no-untyped-call]  # Parser.peek_event is unannotated in types-PyYAML
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise yaml.composer.ComposerError(
                    None, None, "anchors and aliases (&name, *name) are not allowed", event.start_mark)
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise yaml.composer.ComposerError(
                        None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    # Drop the implicit timestamp resolver (keep every other SafeLoader resolver).
    StrictLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    # (the stubs type this unbound method's self as SafeConstructor, which add_constructor's loader bound excludes)
    StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)  # type: ignore[type-var]
    # Types JSON cannot hold would reach graders and writers that only know JSON types.
    for tag in ("binary", "set", "omap", "pairs"):
        StrictLoader.add_constructor(f"tag:yaml.org,2002:{tag}", _refuse_tag)
    c_loader = None
    if getattr(yaml, "__with_libyaml__", False):  # else: PyYAML built without libyaml
        # the stubs do not declare yaml.cyaml.CParser (it exists whenever __with_libyaml__ is true)
        class CStrictLoader(yaml.cyaml.CParser, StrictLoader):  # type: ignore[misc,name-defined]
            """_StrictLoader with libyaml's C scanner and parser underneath (~10x faster on our files).

            Only the event stream comes from C: composing (with the strict checks) and constructing
            stay _StrictLoader's own Python code. `loads_yaml` re-parses with _StrictLoader whenever
            this loader raises, so every error message is the pure-Python one.
            """

            get_node = yaml.composer.Composer.get_node
            check_node = yaml.composer.Composer.check_node
            get_single_node = yaml.composer.Composer.get_single_node

            def __init__(self, stream):  # type: ignore[no-untyped-def]
                yaml.cyaml.CParser.__init__(self, stream)  # type: ignore[attr-defined]  # not in the stubs (see above)
                yaml.composer.Composer.__init__(self)
                yaml.constructor.SafeConstructor.__init__(self)
                yaml.resolver.Resolver.__init__(self)

        c_loader = CStrictLoader
    _CStrictLoader = c_loader
    _StrictLoader = StrictLoader  # last: its presence means both are built (_yaml_ready)


def _yaml_ready() -> None:
    if "_StrictLoader" not in globals():
        _build_yaml_loaders()


if not TYPE_CHECKING:  # (hidden from mypy, which would otherwise type every unknown strict.x as Any)
    def __getattr__(name: str) -> Any:
        if name in ("_StrictLoader", "_CStrictLoader"):
            _yaml_ready()
            return globals()[name]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "unhashable mapping key", key_node.start_mark
            ) from None
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    digits = str(node.value).lstrip("+-").replace("_", "")
    if len(digits) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"integer has more than {MAX_INT_DIGITS} digits", node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None, None, f"tag {node.tag} is not allowed (only JSON types: mappings, lists, strings, numbers, "
        "booleans, null)", node.start_mark)


# Parsed documents by their exact text (pure-Python YAML costs ~2 ms per KiB; one `pr` reads
# scenarios.yaml, the rubric and the golden manifest several times). Only documents that passed
# every check are kept, and callers get their own copy, so a hit is indistinguishable from a parse.
_YAML_MEMO: dict[str, Any] = {}
_YAML_MEMO_MAX = 64
_YAML_MEMO_TEXT_MAX = 1 << 20


def _copy(value: Any) -> Any:
    """A deep copy of a parsed document (dicts, lists and immutable scalars only)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def loads_yaml(text: str, source: object) -> Any:
    """Parse exactly one YAML document with safe types, no duplicate keys, no anchors or
    aliases, then apply check_value's limits."""
    if text in _YAML_MEMO:
        return _copy(_YAML_MEMO[text])
    value = _loads_yaml(text, source)
    if len(text) <= _YAML_MEMO_TEXT_MAX:
        if len(_YAML_MEMO) >= _YAML_MEMO_MAX:
            _YAML_MEMO.pop(next(iter(_YAML_MEMO)))
        _YAML_MEMO[text] = _copy(value)
    return value


def _loads_yaml(text: str, source: object) -> Any:
    _yaml_ready()
    if _CStrictLoader is not None:
        try:
            docs = list(yaml.load_all(text, Loader=_CStrictLoader))  # noqa: S506 - strict SafeLoader subclass
            if len(docs) == 1:
                return check_value(docs[0], source)
        except Exception:  # noqa: BLE001,S110 - any refusal: the pure-Python loader words it
            pass
    try:
        docs = list(yaml.load_all(text, Loader=_StrictLoader))  # noqa: S506 - strict SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML{where}: {problem}", source=source) from None
    except RecursionError:
        raise InputError(f"invalid YAML: nested deeper than {MAX_DEPTH} levels", source=source) from None
    except (ValueError, OverflowError, TypeError) as exc:  # a constructor refusing a scalar
        raise InputError(f"invalid YAML value: {exc}", source=source) from None
    if len(docs) != 1:
        raise InputError(f"expected exactly one YAML document, found {len(docs)}", source=source)
    return check_value(docs[0], source)


def load_yaml(path: Path) -> Any:
    return loads_yaml(read_text(path), path)


def loads_toml(text: str, source: object) -> dict[str, Any]:
    """Parse TOML, refusing nan/inf (TOML allows them), then apply check_value's limits."""
    try:
        value = tomllib.loads(text, parse_float=_finite_float)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", source=source) from None
    except RecursionError:
        raise InputError(f"invalid TOML: nested deeper than {MAX_DEPTH} levels", source=source) from None
    except ValueError as exc:
        raise InputError(f"invalid TOML: {exc}", source=source, fix="use a finite number") from None
    return check_value(value, source)


def load_toml(path: Path) -> dict[str, Any]:
    return loads_toml(read_text(path), path)
