"""Errors a user can cause. The CLI turns each into one line on stderr and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input: unknown name, impossible parameter, unusable file or device."""


class DataError(UsageError):
    """A result file that is missing, truncated, corrupt, foreign or incompatible."""


EXIT_OK = 0
EXIT_FAILED = 1  # a strategy failed, or the gate found a regression
EXIT_USAGE = 2
