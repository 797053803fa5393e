"""The two ways a command can fail, with the exit code each one maps to.

Every reader and check raises one of these with a one-line message that names the
file, the field and the fix; the CLI turns them into exit codes and never a traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2


class SkillEvalError(Exception):
    """Bad input or configuration: the user must fix something before a check can run (exit 2)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, source: object | None = None, fix: str | None = None):
        parts = [f"{source}: {message}" if source else message]
        if fix:
            parts.append(f"fix: {fix}")
        super().__init__(" — ".join(parts))


class ConfigError(SkillEvalError):
    """skill-eval.toml or a content file is invalid."""


class InputError(SkillEvalError):
    """A file could not be read strictly (bad UTF-8, duplicate keys, truncated, symlink...)."""


class CheckFailed(SkillEvalError):
    """A check ran and found a problem (exit 1)."""

    exit_code = EXIT_CHECK_FAILED
