"""The eval family's own hooks: languages it can run, and where its kernels run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import tether

if TYPE_CHECKING:
    from tether_eval.kernels import Enclosure, KernelSpec


@tether.hookspec
def tether_eval_kernels() -> list[KernelSpec] | None:
    """Languages the ``eval`` tool can run: a list of :class:`tether_eval.KernelSpec`.

    A language may be registered by one plugin only.
    """


@tether.hookspec(firstresult=True)
def tether_eval_enclosure(run: tether.Run) -> Enclosure | None:
    """The conversation's enclosure (sandbox) in which kernels start, or None for the host.

    tether never starts an enclosure: the harness's plugin returns the one it already has.

    :param run: the run whose kernels are about to start.
    """
