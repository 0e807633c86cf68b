"""The scheduler's sockets, as the driver sees them: requests in, outputs out.

The revision builds its real zmq sockets; the driver patches `zmq.Socket` at class level before
the Scheduler is built, so that:

- `bind`/`connect` record each socket's endpoint;
- `recv` on the socket bound to the scheduler's input endpoint hands out the bytes the driver
  queued for this iteration (encoded as the revision's tokenizer would send them, and decoded
  by the revision's own receive code), then raises zmq.Again as an empty socket does; on every
  other socket (RPC, metrics, the DP controller) it raises zmq.Again: nothing else ever arrives;
- `send` and `send_multipart` hand the bytes to a sink that counts messages and bytes: the
  revision still serialises every output (pickle or msgpack, in its own code, on the measured
  thread), the detokenizer never receives it.

The first receive of each poll is the iteration boundary: the loop (bench.real.driver.loop) is
called there, untimed, to queue the iteration's arrivals and to end the run.
"""

from __future__ import annotations

import pickle
from collections import deque
from collections.abc import Callable
from typing import Any


class Channel:
    """One scheduler's input queue and output sink."""

    def __init__(self) -> None:
        self.input_endpoint: str | None = None
        self.pending: deque[bytes] = deque()
        self.in_poll = False
        self.on_boundary: Callable[[], None] = lambda: None
        self.sent_messages = 0
        self.sent_bytes = 0
        self.endpoints: dict[int, str] = {}

    # -- what the patched socket methods do ---------------------------------------------------

    def recv(self, sock: Any) -> bytes:
        import zmq

        if self.input_endpoint is not None and self.endpoints.get(id(sock)) == self.input_endpoint:
            if not self.in_poll:
                self.in_poll = True
                self.on_boundary()
            if self.pending:
                return self.pending.popleft()
            self.in_poll = False
        raise zmq.Again()

    def sent(self, data: Any) -> None:
        self.sent_messages += 1
        try:
            self.sent_bytes += len(data)
        except TypeError:
            pass


def install(channel: Channel) -> list[str]:
    """Patch zmq.Socket for this process; returns what was patched (for the manifest)."""
    import zmq

    bind, connect = zmq.Socket.bind, zmq.Socket.connect

    def _bind(self: Any, addr: str, *args: Any, **kwargs: Any) -> Any:
        channel.endpoints[id(self)] = addr
        return bind(self, addr, *args, **kwargs)

    def _connect(self: Any, addr: str, *args: Any, **kwargs: Any) -> Any:
        channel.endpoints[id(self)] = addr
        return connect(self, addr, *args, **kwargs)

    def _recv(self: Any, flags: int = 0, copy: bool = True, track: bool = False) -> bytes:
        return channel.recv(self)

    def _recv_multipart(self: Any, flags: int = 0, copy: bool = True, track: bool = False) -> Any:
        return [channel.recv(self)]

    def _send(self: Any, data: Any, flags: int = 0, copy: bool = True, **kwargs: Any) -> None:
        channel.sent(data)

    def _send_multipart(self: Any, parts: Any, flags: int = 0, **kwargs: Any) -> None:
        for part in parts:
            channel.sent(part)

    patches = {
        "bind": _bind,
        "connect": _connect,
        "recv": _recv,
        "recv_multipart": _recv_multipart,
        "send": _send,
        "send_multipart": _send_multipart,
    }
    for name, func in patches.items():
        setattr(zmq.Socket, name, func)
    return [
        "zmq.Socket.recv: the scheduler's input socket reads the driver's queued requests; every "
        "other socket is empty",
        "zmq.Socket.send/send_multipart: outputs are serialised by the revision, then dropped "
        "into a sink that counts them",
    ]


class _Capture:
    """What the revision's tokenizer side would put on the wire for one object."""

    data: bytes = b""

    def send_pyobj(self, obj: Any, flags: int = 0, protocol: int = pickle.DEFAULT_PROTOCOL) -> None:
        self.data = pickle.dumps(obj, protocol)

    def send(self, data: Any, flags: int = 0, **kwargs: Any) -> None:
        self.data = bytes(data)


def encoder() -> Callable[[Any], bytes]:
    """The revision's own wire encoding of a request: io_struct.sock_send where it exists
    (msgpack or pickle, as the revision chooses), else pickle as `send_pyobj` does."""
    try:
        from sglang.srt.managers.io_struct import sock_send
    except ImportError:
        sock_send = None

    def encode(obj: Any) -> bytes:
        cap = _Capture()
        if sock_send is not None:
            sock_send(cap, obj)
        else:
            cap.send_pyobj(obj)
        return cap.data

    return encode
