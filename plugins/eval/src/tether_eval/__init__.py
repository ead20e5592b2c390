"""tether-eval: persistent Python and JavaScript interpreters whose cells can call the run's tools.

Add a language from your own plugin by returning a :class:`KernelSpec` from
``tether_eval_kernels``; run the kernels inside your sandbox by returning an :class:`Enclosure`
from ``tether_eval_enclosure(run)``::

    import tether

    class MySandbox:
        name = "my-sandbox"

        def wrap(self, argv, *, cwd, env, reachable):
            return ["my-sandbox", "--rw", *map(str, reachable), "--", *argv]

    class HarnessPlugin:
        @tether.hookimpl
        def tether_eval_enclosure(self, run: tether.Run) -> MySandbox:
            return MySandbox()
"""

from tether_eval.config import EvalConfig
from tether_eval.kernels import (
    Bridge,
    Enclosure,
    Kernel,
    KernelContext,
    KernelDied,
    KernelSpec,
    KernelStartError,
)
from tether_eval.output import CellOutput

__all__ = [
    "Bridge",
    "CellOutput",
    "Enclosure",
    "EvalConfig",
    "Kernel",
    "KernelContext",
    "KernelDied",
    "KernelSpec",
    "KernelStartError",
]
