"""A built-in storage strategy (strategies/) as a revision's PD-hidden state home, where the
revision keeps that state behind a getter the driver can replace: the side table of
bytedance-iaas/sglang's PR #652 (python/sglang/srt/disaggregation/hidden_state.py at
32990a0560: `get_pd_hidden_req_state(req)` and the capture-layer scan
`get_pd_hidden_capture_layer_ids(reqs)` that ForwardBatch.init_new runs on every forward).

Both functions are replaced, in that module and wherever a module of the revision imported them
by name, before the Scheduler is built: the getter by the strategy's get-or-create, the scan by
the same loop as written (first request with capture layers wins, an empty list is unset, a new
list is returned), reading each request's state through the strategy. The strategy's request
fields (REQUEST_INIT_FIELDS, REQUEST_CLASS_FIELDS: the fat request's ten attributes, a declared
slot) are put on the revision's own Req; its release() runs, untimed, at the iteration boundary
after a request finishes (the PR's code has no release: its table empties as requests are
collected), so a table keyed by request id does not grow. A revision without that module cannot
take a strategy: the driver says so and the run fails.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

MODULE = "sglang.srt.disaggregation.hidden_state"
GETTER = "get_pd_hidden_req_state"
SCAN = "get_pd_hidden_capture_layer_ids"


class CannotInject(RuntimeError):
    pass


def install(strategy_module: str) -> tuple[Any, list[str]]:
    """Replace the revision's PD-hidden state home with the strategy's; (the strategy module,
    what was replaced)."""
    try:
        home = importlib.import_module(MODULE)
    except ImportError:
        raise CannotInject(
            f"this revision has no {MODULE}: its PD hidden state has no getter to replace"
        ) from None
    if not callable(getattr(home, GETTER, None)) or not callable(getattr(home, SCAN, None)):
        raise CannotInject(f"{MODULE} at this revision has no {GETTER} and {SCAN}")
    strategy = importlib.import_module(strategy_module)
    get = strategy.get

    def scan(reqs: Any) -> list[int] | None:
        for req in reqs:
            layer_ids = get(req).capture_layer_ids
            if layer_ids:
                return [int(x) for x in layer_ids]
        return None

    originals = {getattr(home, GETTER): get, getattr(home, SCAN): scan}
    rebound = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("sglang") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            new = originals.get(value) if callable(value) else None
            if new is not None:
                setattr(module, attr, new)
                rebound.append(f"{name}.{attr}")
    from sglang.srt.managers.schedule_batch import Req

    init_fields = dict(getattr(strategy, "REQUEST_INIT_FIELDS", {}) or {})
    for attr, value in (getattr(strategy, "REQUEST_CLASS_FIELDS", {}) or {}).items():
        setattr(Req, attr, value)
    if init_fields:
        original = Req.__dict__["__init__"]

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            for attr, value in init_fields.items():
                setattr(self, attr, value)

        setattr(Req, "__init__", __init__)  # noqa: B010 (the revision's own method, replaced)
    return strategy, [
        f"the PD hidden state home: {strategy.NAME} ({strategy.DESCRIPTION}) instead of the "
        f"revision's side table, in {', '.join(sorted(rebound))}; its release() called at the "
        "boundary after a request finishes (untimed: the revision has no release of its own)"
    ]
