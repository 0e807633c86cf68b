"""Lines of the strategy modules the target layer writes (materialize.py: a revision as written;
homes.py: a group in a candidate home): the functions every such module ends with, shared."""

from __future__ import annotations


def functions(*blocks: list[str]) -> list[str]:
    """Top-level blocks separated by two blank lines, as a formatter would write them."""
    out: list[str] = []
    for block in blocks:
        if out:
            out += ["", ""]
        out += block
    return out


def get_is_req(note: str = "") -> list[str]:
    """get() returns the request itself (the fields are its attributes); peek is get."""
    return functions(["def get(req):", f"    return req{note}"], ["peek = get"])


def ending(release: str, live: str = "0") -> list[str]:
    """release(req) with its one body line, then live_states() returning `live`."""
    return functions(
        ["def release(req):", f"    {release}"], ["def live_states():", f"    return {live}"]
    )


def lazy_get(read: str, attr: str, make: str, *, var: str = "s", note: str = "") -> list[str]:
    """get() creating the state on first access into req.<attr>, then peek() reading it."""
    return functions(
        [
            f"def get(req):{note}",
            f"    {var} = {read}",
            f"    if {var} is None:",
            f"        {var} = {make}()",
            f"        req.{attr} = {var}",
            f"    return {var}",
        ],
        ["def peek(req):", f"    return {read}"],
    )
