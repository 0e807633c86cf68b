"""What every command's parser shares: argparse with one-line errors, and argument types."""

from __future__ import annotations

import argparse
import re

from bench.errors import UsageError, one_line


class Parser(argparse.ArgumentParser):
    """argparse that reports errors in one line and exits 2 (its default, kept explicit)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(one_line(f"{self.prog}: {message}"))


def model_name(text: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", text):
        raise argparse.ArgumentTypeError(
            f"a model name is lowercase letters, digits, . _ -; got {text!r}"
        )
    return text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {value}")
    return value


def csv_list(text: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


SubParsers = argparse._SubParsersAction  # what register(sub) functions take
