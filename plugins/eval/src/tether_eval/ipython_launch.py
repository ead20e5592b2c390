"""Kernel entry point (run with ``python -c``, never imported by the host).

ipykernel binds one TCP port on 127.0.0.1 for output of forked children (the IOPub "pipe").
This moves that pipe to an IPC socket next to the others, so the kernel opens no TCP port at
all; with an ipykernel whose internals differ, the pipe is left as it is.
"""

import os
import sys

import zmq
from ipykernel import iostream

_PIPE = os.environ.pop("TETHER_IOPUB_PIPE", "")


def _setup_pipe_in(self):
    pipe_in = self.socket.context.socket(zmq.PULL)
    pipe_in.linger = 0
    pipe_in.bind(_PIPE)
    self._pipe_uuid = os.urandom(16)
    self._pipe_port = 0
    self._pipe_in = iostream.ZMQStream(pipe_in, self.io_loop)
    self._pipe_in.on_recv(self._handle_pipe_msg)


def _setup_pipe_out(self):
    context = zmq.Context()
    pipe_out = context.socket(zmq.PUSH)
    pipe_out.linger = 3000
    pipe_out.connect(_PIPE)
    return context, pipe_out


_thread = getattr(iostream, "IOPubThread", None)
if _PIPE and all(
    hasattr(x, n)
    for x, n in [
        (iostream, "ZMQStream"),
        (_thread, "_setup_pipe_in"),
        (_thread, "_setup_pipe_out"),
        (_thread, "_handle_pipe_msg"),
    ]
):
    _thread._setup_pipe_in = _setup_pipe_in  # type: ignore[union-attr]
    _thread._setup_pipe_out = _setup_pipe_out  # type: ignore[union-attr]

if sys.path and sys.path[0] == "":
    del sys.path[0]  # as `python -m ipykernel_launcher` would not have the cwd first either

if __name__ == "__main__":  # `python -c` runs as __main__; importing this does nothing
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
