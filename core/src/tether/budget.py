"""The result budget: every result measured against ``[core.result_budget]`` and, when larger,
cut on line (or the tool's item) boundaries, with a notice saying what was cut and how to get
the rest.

It runs in the call pipeline after every ``tether_process_result`` implementation (they see the
uncut result), so what the model receives is bounded whatever a family returned. Only text is
measured: an image is passed on as it is (its size is the tool's to bound). The notice is one
text block at the end; a tool says how to get the rest with ``ToolSpec.continuation``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from tether.text import plural

if TYPE_CHECKING:
    from tether.config import ResultBudget
    from tether.tools import CallContext, ToolResult

#: room kept for the notice inside the budget, so a cut result stays within it
NOTICE_ROOM = 600


@attrs.frozen
class Cut:
    """What the budget cut from one call's result, as a tool's continuation sees it."""

    #: the budget in characters, and the configuration key it comes from
    budget: int
    source: str
    #: characters of text the result had, and how many were kept
    total_chars: int
    shown_chars: int
    #: the text kept of each text block, in order: the tool's own output first, what
    #: post-processors added after it
    kept: tuple[str, ...]
    #: items (lines, or the tool's separator) kept and in all, over every text block
    items_shown: int
    items_total: int
    separator: str = "\n"
    #: whole items kept of each text block
    whole: tuple[int, ...] = ()
    #: each text block as it was before the cut
    texts: tuple[str, ...] = ()

    def items_kept(self, block: int = 0) -> int:
        """How many whole items of text block ``block`` (0: the tool's own output) were kept:
        the offset of the first item the model has not seen whole."""
        return self.whole[block] if block < len(self.whole) else 0


@attrs.frozen
class Continuation:
    """How a tool's result is cut and continued (``ToolSpec.continuation``).

    ``separator``: the boundary between the tool's items (``"\\n"``: lines; ``"\\n\\n"``: blocks
    separated by a blank line), so a cut never splits one. ``next``: how to get the rest — a
    text, or a function ``(call, cut) -> str | Mapping | None`` whose mapping is the arguments of
    the next call (shown to the model as a ready call: ``{"offset": 58}`` merged into this
    call's arguments). None, or a function that returns None: the generic advice to ask for less.
    """

    next: str | Callable[[CallContext, Cut], str | Mapping[str, Any] | None] | None = None
    separator: str = "\n"


GENERIC_NEXT = "ask for less (a narrower path, query, range or fewer results)"


def budget_for(config: ResultBudget, tool: str, surface: str) -> tuple[int, str]:
    """The budget of a call (0: none) and the key it comes from: the tool's entry, else
    ``max_chars``; a surface's entry lowers it further."""
    if tool in config.tools:
        budget, source = config.tools[tool], f"[core.result_budget.tools] {tool}"
    else:
        budget, source = config.max_chars, "[core.result_budget] max_chars"
    by_surface = config.surfaces.get(surface)
    if by_surface and (not budget or by_surface < budget):
        budget, source = by_surface, f"[core.result_budget.surfaces] {surface}"
    return budget, source


def _caps(lengths: list[int], budget: int) -> int:
    """The largest per-block cap with ``sum(min(length, cap)) <= budget``: short blocks (a
    post-processor's note, diagnostics) are kept whole and the long ones share the rest."""
    remaining = budget
    ordered = sorted(lengths)
    for index, length in enumerate(ordered):
        share = remaining // (len(ordered) - index)
        if length > share:
            return share
        remaining -= length
    return max(ordered, default=0)


def _cut_text(text: str, cap: int, separator: str) -> tuple[str, int, int, bool]:
    """``text`` cut to at most ``cap`` characters at the last ``separator`` (else the last line
    end) inside it: (kept, whole items kept, items in all, an item was split)."""
    items_total = text.count(separator) + (0 if text.endswith(separator) else 1)
    if len(text) <= cap:
        return text, items_total, items_total, False
    head = text[:cap]
    end = head.rfind(separator)
    whole = head[:end].count(separator) + 1 if end > 0 else 0
    if end > cap // 2:
        return head[:end], whole, items_total, False
    # the next item alone would leave most of the share unused (one huge line, an answer):
    # its beginning is kept too, up to a line end or a space, and said as cut mid-way
    start = end + len(separator) if end > 0 else 0
    for boundary in ("\n", " "):
        stop = head.rfind(boundary, start)
        if stop > start:
            return head[:stop], whole, items_total, True
    return head, whole, items_total, True


def apply_budget(ctx: CallContext, result: ToolResult) -> ToolResult:
    """``result`` within the call's budget: itself when it fits, else cut with a notice block
    and ``meta["budget"]`` (``budget``, ``source``, ``total_chars``, ``shown_chars``). The
    notice counts too: a budget smaller than the notice alone keeps only the notice."""
    from tether.tools import Text

    budget, source = budget_for(ctx.run.core.result_budget, ctx.tool, ctx.surface)
    texts = [c.text for c in result.content if isinstance(c, Text)]
    total = sum(len(t) for t in texts)
    if not budget or total <= budget:
        return result
    continuation = ctx.spec.continuation or Continuation()
    room = min(NOTICE_ROOM, budget // 2)
    for _ in range(3):  # the notice's length depends on the cut (its figures, the next call)
        content, cut, notice = _cut(ctx, result, texts, budget, source, room, continuation)
        used = cut.shown_chars + len(notice)
        if used <= budget or room >= budget:
            break
        room = min(budget, room + used - budget)
    content.append(Text(notice))
    meta = {
        "budget": budget,
        "source": source,
        "total_chars": total,
        "shown_chars": cut.shown_chars,
    }
    return attrs.evolve(result, content=tuple(content)).with_meta(budget=meta)


def _cut(
    ctx: CallContext,
    result: ToolResult,
    texts: list[str],
    budget: int,
    source: str,
    room: int,
    continuation: Continuation,
) -> tuple[list[Any], Cut, str]:
    """The content blocks cut to ``budget - room``, the cut, and its notice."""
    from tether.tools import Text

    cap = _caps([len(t) for t in texts], budget - room)
    content: list[Any] = []
    kept_texts: list[str] = []
    items_shown = items_total = 0
    whole: list[int] = []
    split = False
    for block in result.content:
        if not isinstance(block, Text):
            content.append(block)
            continue
        kept, shown, in_all, was_split = _cut_text(block.text, cap, continuation.separator)
        items_shown += shown
        items_total += in_all
        whole.append(shown)
        split |= was_split
        kept_texts.append(kept)
        if kept:
            content.append(Text(kept))
    cut = Cut(
        budget=budget,
        source=source,
        total_chars=sum(len(t) for t in texts),
        shown_chars=sum(len(t) for t in kept_texts),
        kept=tuple(kept_texts),
        items_shown=items_shown,
        items_total=items_total,
        separator=continuation.separator,
        whole=tuple(whole),
        texts=tuple(texts),
    )
    noun = "line" if continuation.separator == "\n" else "item"
    what = (
        f"{cut.shown_chars} of {cut.total_chars} characters shown "
        f"({items_shown} of {plural(items_total, noun)}"
        + (", one cut mid-way" if split else "")
        + ")"
    )
    notice = (
        f"[tether cut this result to its budget: {what}; the budget is {source} = {budget}. "
        f"To get the rest: {_next(ctx, cut, continuation)}]"
    )
    return content, cut, notice


def _next(ctx: CallContext, cut: Cut, continuation: Continuation) -> str:
    step = continuation.next
    try:
        hint = step(ctx, cut) if callable(step) else step
    except Exception as exc:  # a plugin's continuation failed: the cut still says what it did
        hint = None
        failure = f" (the tool's continuation failed: {type(exc).__name__}: {exc})"
    else:
        failure = ""
    if isinstance(hint, Mapping):
        return ready_call(ctx, hint)
    return (hint or GENERIC_NEXT) + failure


def ready_call(ctx: CallContext, changes: Mapping[str, Any]) -> str:
    """``call TOOL with {ARGS}``: this call's arguments with ``changes``, as the model sends them."""
    args = {key: value for key, value in {**ctx.raw_args, **changes}.items() if value is not None}
    return f"call {ctx.tool} with {json.dumps(args, ensure_ascii=False)}"


# `path:line` (and `path:line:column`) at the start of a line: how results name a place
_PLACE = re.compile(r"^[ \t]*(?P<path>[^\s:]+):\d+\b", re.M)


def next_file(field: str = "path", listed: int = 8) -> Callable[[CallContext, Cut], str | None]:
    """A continuation step for a result that lists places (``path:line…`` at a line's start)
    and a tool whose ``field`` argument narrows it to one file or directory: the files whose
    places were cut, and the ready call for the first of them (None: no place was cut)."""

    def step(ctx: CallContext, cut: Cut) -> str | None:
        uncut = cut.texts[0] if cut.texts else ""
        kept = cut.kept[0] if cut.kept else ""
        places = [m.group("path") for m in _PLACE.finditer(kept)]
        # the file of the last place kept may have more places after the cut
        cut_paths = dict.fromkeys(m.group("path") for m in _PLACE.finditer(uncut, len(kept)))
        rest = [p for p in cut_paths if p not in places or p == places[-1]]
        if not rest:
            return None
        more = f" and {len(rest) - listed} more" if len(rest) > listed else ""
        return (
            f"{ready_call(ctx, {field: rest[0]})}, then the next file "
            f"({plural(len(rest), 'file')} not shown whole: {', '.join(rest[:listed])}{more})"
        )

    return step


def narrower_path(field: str = "path") -> Continuation:
    """The continuation of a tool whose result lists places and whose ``field`` narrows it
    (:func:`next_file`)."""
    return Continuation(next=next_file(field))


__all__ = [
    "Continuation",
    "Cut",
    "apply_budget",
    "budget_for",
    "narrower_path",
    "next_file",
    "ready_call",
]
