"""The run's interpreters: one live kernel per language, started on first use, replaced when
it dies or is reset, and stopped with the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio

import tether
from tether.contributions import collect
from tether.resources import forget_entry
from tether_eval.config import EvalConfig
from tether_eval.kernels import (
    Enclosure,
    Kernel,
    KernelContext,
    KernelDied,
    KernelSpec,
    KernelStartError,
)


def check_prestart(config: EvalConfig, languages: Sequence[str]) -> None:
    """The one rule bounds cannot say: prestart names languages that exist (bounds are checked
    by the core when the table is loaded)."""
    for index, language in enumerate(config.prestart):
        if language not in languages:
            raise tether.ConfigError(
                f"eval.prestart[{index}]: expected one of {', '.join(sorted(languages))}, "
                f"got {language!r}"
            )


def collect_kernels(pm: Any) -> dict[str, KernelSpec]:
    """Every plugin's ``tether_eval_kernels`` through the core's collector: a language offered
    twice keeps the first in call order (a harness's plugin before the built-ins) and reports
    the other plugin, a malformed spec is dropped and reported; eval keeps working."""
    found = collect(
        pm, "tether_eval_kernels", KernelSpec, key=lambda spec: spec.language, label="eval language"
    )
    return {language: contribution.item for language, contribution in found.items()}


class Interpreters:
    """The ``eval_interpreters`` resource."""

    def __init__(
        self, run: tether.Run, config: EvalConfig, specs: Mapping[str, KernelSpec]
    ) -> None:
        self.run = run
        self.config = config
        self.specs = dict(specs)
        self._live: dict[str, Kernel] = {}
        # Why a language's previous interpreter is gone, said once by the next call.
        self._lost: dict[str, str] = {}
        self._lock = anyio.Lock()
        self._closed = False
        self._prestarts: list[anyio.CancelScope] = []

    @property
    def languages(self) -> list[str]:
        return sorted(self.specs)

    def live(self, language: str) -> Kernel | None:
        return self._live.get(language)

    def enclosure(self) -> Enclosure | None:
        found = self.run.pm.hook.tether_eval_enclosure(run=self.run)
        if found is not None and not isinstance(found, Enclosure):
            raise tether.PluginError(
                f"tether_eval_enclosure returned {type(found).__name__}, which has no wrap()/name"
            )
        return found

    async def get(self, language: str) -> tuple[Kernel, list[str]]:
        """The live kernel for ``language`` (started if needed) and notes for the model."""
        async with self._lock:
            if self._closed:
                raise tether.ToolError("the run is closing; no interpreter can start")
            notes: list[str] = []
            kernel = self._live.get(language)
            if kernel is not None and not kernel.alive:
                tail = kernel.stderr_tail().strip()[-1500:]
                await kernel.aclose()
                forget_entry(self._live, language, kernel)
                self._lost[language] = "the previous interpreter had died" + (
                    f"; its last stderr:\n{tail}" if tail else ""
                )
                kernel = None
            if kernel is None:
                kernel = await self._start(language)
                if self._closed:  # the run closed while it started: nobody else will end it
                    with anyio.CancelScope(shield=True):
                        await kernel.aclose()
                    raise tether.ToolError("the run is closing; no interpreter can start")
                self._live[language] = kernel
                lost = self._lost.pop(language, None)
                if lost:
                    notes.append(
                        f"{lost}\nThis cell ran in a fresh {language} interpreter: variables, "
                        "imports and data from earlier cells are gone."
                    )
            return kernel, notes

    async def _start(self, language: str) -> Kernel:
        with tether.waiting("kernel start", language=language):
            return await self._start_unobserved(language)

    async def _start_unobserved(self, language: str) -> Kernel:
        spec = self.specs[language]
        settings = {"python": self.config.python, "node": self.config.node}
        ok, why = spec.available(settings)
        if not ok:
            raise tether.ToolError(f"{language} is not available here: {why}")
        ctx = KernelContext(
            spawn=self.run.spawn,
            workdir=self.run.workdir,
            enclosure=self.enclosure(),
            env=dict(self.config.env),
            start_timeout_s=self.config.start_timeout_s,
            settings=settings,
        )
        try:
            return await spec.start(ctx)
        except KernelStartError as exc:
            raise tether.ToolError(str(exc)) from exc

    async def discard(self, language: str, reason: str | None = None) -> bool:
        """Stop ``language``'s interpreter; ``reason`` is told to the next call. True if one ran."""
        kernel = self._live.pop(language, None)
        if kernel is None:
            return False
        with anyio.CancelScope(shield=True):
            await kernel.aclose()
        if reason:
            self._lost[language] = reason
        return True

    async def died(self, language: str, error: KernelDied) -> None:
        """Forget an interpreter that died mid-cell (and clean up after it)."""
        await self.discard(language, f"the previous interpreter died ({error})")

    def prestart(self, languages: Sequence[str]) -> None:
        """Start these interpreters in the run's task group, without waiting for them."""
        for language in languages:
            self.run.task_group.start_soon(self._prestart, language)

    async def _prestart(self, language: str) -> None:
        with anyio.CancelScope() as scope:
            self._prestarts.append(scope)
            try:
                await self.get(language)
            except tether.ToolError as exc:
                # The first call starts it again and reports the failure itself.
                import logging

                logging.getLogger(__name__).info(
                    "tether-eval: prestarting %s failed: %s", language, exc
                )

    async def aclose(self) -> None:
        self._closed = True
        for scope in self._prestarts:
            scope.cancel()
        with anyio.CancelScope(shield=True):
            async with self._lock:
                for language in list(self._live):
                    await self.discard(language)
