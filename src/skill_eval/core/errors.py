"""The ways a command can fail, with the exit code each one maps to (one table, one place).

Every reader and check raises a SkillEvalError whose parts stay separate fields (message,
source, field, fix), the way pip keeps an error's parts: the CLI renders them as one line of
text or as a JSON object, and code that needs only the message reads `exc.message` instead of
splitting a rendered string apart. This module is a leaf: it imports nothing from skill_eval.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)

if TYPE_CHECKING:
    from typing import Any

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2  # usage, configuration or bad input
EXIT_INTERNAL = 3  # a bug in skill-eval: traceback written to a log file, its path printed


class SkillEvalError(Exception):
    """Bad input or configuration: the user must fix something before a check can run (exit 2)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, source: object | None = None, field: str | None = None,
                 fix: str | None = None):
        self.message = message
        self.source = None if source is None else str(source)
        self.field = field
        self.fix = fix
        super().__init__(self.render())

    @property
    def where(self) -> str:
        """`source` and `field` as one locator (`file: field`), or '' when neither is known."""
        if self.source and self.field:
            return f"{self.source}: {self.field}"
        return self.source or self.field or ""

    def headline(self) -> str:
        """`where: message`, without the fix (what a grader quotes as a reason)."""
        return f"{self.where}: {self.message}" if self.where else self.message

    def render(self) -> str:
        """The one-line text form: `where: message — fix: ...`."""
        return f"{self.headline()} — fix: {self.fix}" if self.fix else self.headline()

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (`--json`): every part a field, plus the kind and exit code."""
        return {"kind": type(self).__name__, "message": self.message, "source": self.source, "field": self.field,
                "fix": self.fix, "exit_code": self.exit_code}


class ConfigError(SkillEvalError):
    """skill-eval.toml or a content file is invalid."""


class InputError(SkillEvalError):
    """A file could not be read strictly (bad UTF-8, duplicate keys, truncated, symlink...)."""


class NotApplicable(InputError):
    """A feature the host has not turned on (no scenarios.yaml, nothing recorded): the command has
    nothing to do, says how to turn the feature on, and exits 0 — as `pr` reports the step."""

    exit_code = EXIT_OK


class UsageError(SkillEvalError):
    """The command line itself is wrong: unknown command, bad option value, out-of-range number."""


class CheckFailed(SkillEvalError):
    """A check ran and found a problem (exit 1)."""

    exit_code = EXIT_CHECK_FAILED


def message_of(exc: BaseException) -> str:
    """An exception as a reason: a SkillEvalError's `where: message` (no fix), else str()."""
    return exc.headline() if isinstance(exc, SkillEvalError) else str(exc)
