"""A stand-in KV transfer backend for the prefill node of a disaggregated deployment.

The prefill node refuses SGLang's fake backend at start-up (python/sglang/srt/arg_groups/
pd_disaggregation_hook.py:102 at sgl-project/sglang d55f1c28e2), and its real backends
(mooncake, nixl) start a transfer engine that needs RDMA hardware. The revision looks its
backend's classes up by name in `get_kv_class` (python/sglang/srt/disaggregation/utils.py:630
there), where the fake one is registered too; the driver puts its stand-in under the name the
server arguments give (`mooncake`, the default), in that function and wherever a module of the
revision imported it by name:

- the manager, the receiver and the KV arguments are the fake backend's own (no engine starts,
  nothing is registered, nothing is sent); the manager also holds, empty, the per-room table of
  the hidden-row metadata decode nodes send, which a real backend's manager keeps and the
  prefill node of bytedance-iaas/sglang 32990a0560 reads for every request
  (req_to_pd_hidden_meta: python/sglang/srt/disaggregation/common/conn.py:203 and
  prefill.py:378, 394 there; the fake manager lacks it): no decode node asks for hidden rows;
- the sender is the fake one's, with the timing of a healthy deployment: the handshake is done
  by the first poll (per-rank logs show `#unbootstrapped-req 0`, sgl-project/sglang#11648), and
  a request's KV transfer, which starts when its last chunk is sent, succeeds at the next
  iteration's poll (a ~60 ms transfer, PR #7236, is shorter than one prefill forward).

So the node's own bootstrap queue, chunked prefill, KV sends and inflight queue run as they do
in production; only the bytes do not move.
"""

from __future__ import annotations

import sys
from typing import Any

BACKEND = "nixl"  # a real backend's name that starts no shared engine at bootstrap (mooncake does)
TRANSFER_POLLS = 1  # polls a request's transfer stays in flight after its last chunk is sent


def install() -> list[str]:
    from sglang.srt.disaggregation import utils as du
    from sglang.srt.disaggregation.base import KVArgs, KVPoll
    from sglang.srt.disaggregation.fake import FakeKVManager, FakeKVReceiver, FakeKVSender

    class StandInManager(FakeKVManager):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if not hasattr(self, "req_to_pd_hidden_meta"):
                self.req_to_pd_hidden_meta: dict[int, dict[str, Any]] = {}

    class StandInSender(FakeKVSender):
        conclude_state: Any
        has_sent: bool

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.polls_after_send = 0

        def poll(self) -> Any:
            if self.conclude_state is not None:
                return self.conclude_state
            if not self.has_sent:
                return KVPoll.WaitingForInput
            self.polls_after_send += 1
            if self.polls_after_send <= TRANSFER_POLLS:
                return KVPoll.Transferring
            self.conclude_state = KVPoll.Success
            return KVPoll.Success

    original = du.get_kv_class
    stand_in = du.TransferBackend(BACKEND)
    classes = {
        du.KVClassType.KVARGS: KVArgs,
        du.KVClassType.MANAGER: StandInManager,
        du.KVClassType.SENDER: StandInSender,
        du.KVClassType.RECEIVER: FakeKVReceiver,
    }

    def get_kv_class(transfer_backend: Any, class_type: Any) -> Any:
        if transfer_backend == stand_in:
            return classes.get(class_type)
        return original(transfer_backend, class_type)

    rebound = []
    for name, module in list(sys.modules.items()):
        if name.startswith("sglang") and module is not None:
            if getattr(module, "get_kv_class", None) is original:
                setattr(module, "get_kv_class", get_kv_class)  # noqa: B010 (rebinding a name)
                rebound.append(name)
    return [
        f"the KV transfer backend '{BACKEND}' (get_kv_class in {', '.join(sorted(rebound))}): "
        "the fake backend's manager and receiver, a sender whose handshake is done at once and "
        f"whose transfer succeeds {TRANSFER_POLLS} poll after the last chunk is sent; no bytes move"
    ]
