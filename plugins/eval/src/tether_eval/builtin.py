"""The two languages tether-eval ships: Python (ipykernel) and JavaScript (node)."""

from __future__ import annotations

from tether_eval.ipython import IPythonKernel, python_available
from tether_eval.kernels import KernelSpec
from tether_eval.node import NodeKernel, node_available


def builtin_kernels() -> list[KernelSpec]:
    return [
        KernelSpec(
            language="python",
            start=IPythonKernel.start,
            description="IPython kernel (ipykernel over IPC sockets)",
            available=python_available,
        ),
        KernelSpec(
            language="javascript",
            start=NodeKernel.start,
            description="node with a persistent vm context",
            available=node_available,
        ),
    ]
