"""Errors a user can cause. The CLI turns each into one line on stderr and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input: unknown name, impossible parameter, unusable file or device."""


class DataError(UsageError):
    """A result file that is missing, truncated, corrupt, foreign or incompatible."""


def one_line(text: str) -> str:
    """A message safe for one terminal line: control characters (newlines, escapes) shown
    escaped, so user input echoed in an error can neither break nor restyle the line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


EXIT_OK = 0
EXIT_FAILED = 1  # a strategy failed, or the gate found a regression
EXIT_USAGE = 2
