"""The installed sglang's own `Req`, subclassed per strategy (`--request-class sglang`).

The subclass applies a strategy's REQUEST_CLASS_FIELDS as class attributes and its
REQUEST_INIT_FIELDS after the real __init__, which it calls with minimal arguments: the request
id, an empty prompt text, the prompt's token ids, and SamplingParams(max_new_tokens=...).
sglang is not a dependency of this project: where it cannot be imported, one line says so.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

from strategies import Strategy


class SglangMissing(ImportError):
    """sglang cannot be imported here."""


def import_sglang() -> tuple[type, type]:
    """(Req, SamplingParams) of the installed sglang; SglangMissing with the reason otherwise.
    sglang's own import-time warnings (a CPU machine without its GPU kernels gets several
    UserWarnings, e.g. from its AWQ layer) are silenced here: they are not the harness's, and a
    caller that turns warnings into errors (pytest's filterwarnings) must not read them as
    "sglang missing"."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from sglang.srt.managers.schedule_batch import Req
            from sglang.srt.sampling.sampling_params import SamplingParams
    except Exception as exc:  # any import failure: missing package, missing GPU-only deps
        raise SglangMissing(
            f"--request-class sglang: sglang cannot be imported here "
            f"({type(exc).__name__}: {exc}); install it in this environment, or use "
            f"--request-model (python -m bench workload models)"
        ) from None
    return Req, SamplingParams


def sglang_version() -> str | None:
    """The installed sglang's version (its distribution metadata), or None."""
    from importlib import metadata  # lazy: 21 ms of imports no step or gate worker needs

    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError:
        try:  # a source tree on sys.path without metadata
            import sglang

            return str(getattr(sglang, "__version__", "unknown"))
        except Exception:
            return None


def importable() -> str | None:
    """None where --request-class sglang can build requests here, else why not (one line)."""
    try:
        import_sglang()
    except SglangMissing as exc:
        return str(exc).split(": ", 1)[-1]
    return None


def make_sglang_request_class(strategy: Strategy | None) -> type:
    req_cls, sampling_cls = import_sglang()
    init_fields = dict(strategy.request_init_fields) if strategy else {}
    class_fields = dict(strategy.request_class_fields) if strategy else {}

    base_init: Any = getattr(req_cls, "__init__")  # noqa: B009 (mypy: unsound on a type var)

    def __init__(self: Any, rid: str, input_ids: Any, max_new_tokens: int) -> None:
        base_init(
            self,
            rid=rid,
            origin_input_text="",
            origin_input_ids=input_ids,
            sampling_params=sampling_cls(max_new_tokens=max_new_tokens),
        )
        for name, value in init_fields.items():
            setattr(self, name, copy.copy(value))

    name = f"SglangReq_{strategy.name if strategy else 'plain'}"
    return type(name, (req_cls,), {"__init__": __init__, **class_fields})
