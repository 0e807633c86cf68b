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


_DURATION_UNITS_S = {"h": 3600.0, "m": 60.0, "s": 1.0}


def duration_s(text: str) -> float | None:
    """'6m', '90s', '1h30m', '300' (seconds) -> seconds; 'off' or 'none' -> None."""
    raw = text.strip().lower()
    if raw in ("off", "none"):
        return None
    import re

    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", raw)
    if not raw or parts is None:
        raise argparse.ArgumentTypeError(
            f"expected a duration like 6m, 90s, 1h30m or off, got {text!r}"
        )
    seconds = sum(
        float(v) * _DURATION_UNITS_S[u]
        for v, u in zip(parts.groups(), ("h", "m", "s"), strict=True)
        if v
    )
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return seconds


def percent(text: str) -> float:
    """A percentage in (0, 100]: '15' or '15%'."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage in (0, 100], got {text!r}")
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
