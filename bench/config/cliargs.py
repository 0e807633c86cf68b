"""What every command's parser shares: argparse with one-line errors, and argument types."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.base.errors import UsageError, one_line


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


def _number(text: str, kind: Callable[[str], Any], words: str, ok: Callable[[Any], bool]) -> Any:
    """text read by `kind` and accepted by `ok`; else argparse's error saying `words`."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {words}, got {value}")
    return value


def positive_int(text: str) -> int:
    return int(_number(text, int, "a positive integer", lambda v: v > 0))


_DURATION_UNITS_S = {"h": 3600.0, "m": 60.0, "s": 1.0}


def duration_s(text: str) -> float | None:
    """'6m', '90s', '1h30m', '300' (seconds) -> seconds; 'off' or 'none' -> None."""
    raw = text.strip().lower()
    if raw in ("off", "none"):
        return None

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
    return float(
        _number(text.strip().rstrip("%"), float, "a percentage in (0, 100]", lambda v: 0 < v <= 100)
    )


def fraction(text: str) -> float:
    return float(_number(text, float, "a number in [0, 1]", lambda v: 0.0 <= v <= 1.0))


def csv_list(text: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


SubParsers = argparse._SubParsersAction  # what register(sub) functions take


@dataclass(frozen=True)
class SuiteFlag:
    """A flag a suite declares (its FLAGS) for `bench run`: `--option VALUE` sets the suite's
    option `field` (bench.suites.spec reads them; the run command adds them to its parser)."""

    option: str  # e.g. "--regime"
    field: str  # the suite's Options field it sets
    help: str
    type: Callable[[str], Any] = str
    metavar: str | None = None

    def dest(self, suite: str) -> str:
        """The argparse destination: unique per suite and field."""
        return f"suite_{suite}_{self.field}"


# A command's parser as data: each option is (flags, argparse keywords), or a function that adds
# a shared group of options (a suite's flags, the budget's) to the parser.
Option = tuple[tuple[str, ...], dict[str, Any]]
Adder = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its one-line help, its options, the function it runs."""

    name: str
    help: str
    options: tuple[Option | Adder, ...]
    func: Callable[[argparse.Namespace], int]
    description: str | None = None


def add_options(parser: argparse.ArgumentParser, options: tuple[Option | Adder, ...]) -> None:
    for option in options:
        if callable(option):
            option(parser)
        else:
            flags, keywords = option
            parser.add_argument(*flags, **keywords)


def register_commands(
    sub: SubParsers[argparse.ArgumentParser], commands: tuple[Command, ...]
) -> None:
    for command in commands:
        parser = sub.add_parser(command.name, help=command.help, description=command.description)
        add_options(parser, command.options)
        parser.set_defaults(func=command.func)
