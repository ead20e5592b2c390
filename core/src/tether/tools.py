"""Tool specs, call contexts and results."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from tether.tiers import Tier

if TYPE_CHECKING:
    from tether.budget import Continuation
    from tether.resources import ResourceKey
    from tether.run import Run


@attrs.frozen
class Text:
    """A text content block."""

    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@attrs.frozen
class Image:
    """An image content block (raw bytes; base64 only on the wire)."""

    data: bytes
    mime_type: str = "image/png"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "image",
            "mime_type": self.mime_type,
            "data": base64.b64encode(self.data).decode("ascii"),
        }


Content = Text | Image


def _content_tuple(blocks: Iterable[Content]) -> tuple[Content, ...]:
    return tuple(blocks)


def _paths(values: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(values)


def _names(values: Iterable[str | ResourceKey[Any]]) -> tuple[str, ...]:
    """Resource names, from names or :class:`~tether.resources.ResourceKey` objects."""
    return tuple(value if isinstance(value, str) else value.name for value in values)


def _tier(value: Tier | str) -> Tier:
    return Tier.parse(value)


@attrs.frozen
class ToolResult:
    """What every call returns: content blocks, an error flag and metadata."""

    content: tuple[Content, ...] = attrs.field(converter=_content_tuple, factory=tuple)
    is_error: bool = False
    meta: Mapping[str, Any] = attrs.field(factory=dict)
    #: absolute paths of the files this call wrote, set by the core (from its writers, and from
    #: the tool's ``ToolSpec.writes``); post-processors key on it
    written: tuple[Path, ...] = attrs.field(converter=_paths, default=())
    #: what each written file held before the call (None: the call created it), set by the core
    #: when it saw it (its writers, a ``ToolSpec.writes`` argument); a file missing here was
    #: written by means it did not see
    before: Mapping[Path, bytes | None] = attrs.field(factory=dict)

    @classmethod
    def text(cls, text: str, **meta: Any) -> ToolResult:
        return cls(content=(Text(text),), meta=meta)

    @classmethod
    def error(cls, text: str, **meta: Any) -> ToolResult:
        return cls(content=(Text(text),), is_error=True, meta=meta)

    @property
    def text_content(self) -> str:
        """Every text block joined by newlines."""
        return "\n".join(c.text for c in self.content if isinstance(c, Text))

    def with_text_appended(self, text: str) -> ToolResult:
        return attrs.evolve(self, content=(*self.content, Text(text)))

    def with_meta(self, **meta: Any) -> ToolResult:
        return attrs.evolve(self, meta={**self.meta, **meta})

    def to_json(self) -> dict[str, Any]:
        return {
            "is_error": self.is_error,
            "content": [c.to_json() for c in self.content],
            "meta": dict(self.meta),
        }

    # --- the result in the formats the model SDKs take (beside run.schemas(format=...)) -----
    # ``meta`` is for the harness and never goes to the model.

    def to_anthropic(self, tool_use_id: str) -> dict[str, Any]:
        """An Anthropic Messages ``tool_result`` block (put it in the next user message's
        ``content``): text and image blocks (base64 source), ``is_error``. An image of a type
        the API does not take becomes a text note."""
        blocks: list[dict[str, Any]] = []
        for c in self.content:
            if isinstance(c, Text):
                blocks.append({"type": "text", "text": c.text})
            elif c.mime_type in ANTHROPIC_IMAGE_TYPES:
                source = {"type": "base64", "media_type": c.mime_type, "data": _b64(c.data)}
                blocks.append({"type": "image", "source": source})
            else:
                blocks.append({"type": "text", "text": _image_note(c, "Anthropic")})
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": blocks,
            "is_error": self.is_error,
        }

    def to_openai(self, tool_call_id: str) -> list[dict[str, Any]]:
        """OpenAI Chat Completions messages to append: the ``tool`` message (text parts only:
        the API has no images and no error flag there, so an error's text starts with
        ``Error:``), then, when the result has images, a ``user`` message carrying them."""
        texts = [{"type": "text", "text": t} for t in self._texts(prefix_error=True)]
        messages: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": tool_call_id, "content": texts}
        ]
        images = [c for c in self.content if isinstance(c, Image)]
        if images:
            parts: list[dict[str, Any]] = [
                {"type": "text", "text": f"The images tool call {tool_call_id} returned:"}
            ]
            parts += [
                {"type": "image_url", "image_url": {"url": _data_url(image)}} for image in images
            ]
            messages.append({"role": "user", "content": parts})
        return messages

    def to_openai_responses(self, call_id: str) -> dict[str, Any]:
        """An OpenAI Responses ``function_call_output`` input item: ``input_text`` and
        ``input_image`` (data URL) parts; an error's text starts with ``Error:``."""
        output: list[dict[str, Any]] = []
        texts = iter(self._texts(prefix_error=True))
        for c in self.content:
            if isinstance(c, Text):
                output.append({"type": "input_text", "text": next(texts)})
            else:
                output.append({"type": "input_image", "image_url": _data_url(c)})
        if self.is_error and not any(isinstance(c, Text) for c in self.content):
            output.insert(0, {"type": "input_text", "text": "Error: the tool call failed"})
        return {"type": "function_call_output", "call_id": call_id, "output": output}

    def to_gemini(self, name: str, call_id: str | None = None) -> dict[str, Any]:
        """A Gemini (``google-genai``) ``Part`` holding the ``function_response`` to send back
        in the next user turn: ``response`` is ``{"output": text}``, or ``{"error": text}`` when
        the call failed (the keys Gemini's documentation names); images ride along as
        ``parts`` (``inline_data`` with raw bytes, as the SDK's types hold them), an image of
        a type the API does not take becomes a text note. ``call_id`` is the ``id`` of the
        model's ``function_call`` when it gave one."""
        texts = [c.text for c in self.content if isinstance(c, Text)]
        parts: list[dict[str, Any]] = []
        for c in self.content:
            if not isinstance(c, Image):
                continue
            if c.mime_type in GEMINI_IMAGE_TYPES:
                parts.append({"inline_data": {"mime_type": c.mime_type, "data": c.data}})
            else:
                texts.append(_image_note(c, "Gemini"))
        text = "\n".join(texts)
        response: dict[str, Any] = (
            {"error": text or "the tool call failed"} if self.is_error else {"output": text}
        )
        function_response: dict[str, Any] = {"name": name, "response": response}
        if call_id is not None:
            function_response["id"] = call_id
        if parts:
            function_response["parts"] = parts
        return {"function_response": function_response}

    def _texts(self, *, prefix_error: bool) -> list[str]:
        texts = [c.text for c in self.content if isinstance(c, Text)]
        if prefix_error and self.is_error:
            texts = [f"Error: {texts[0]}", *texts[1:]] if texts else ["Error: the tool call failed"]
        return texts


#: The image types the Anthropic Messages API accepts in a ``tool_result``.
ANTHROPIC_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
#: The image types Gemini takes in a function response's parts.
GEMINI_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _data_url(image: Image) -> str:
    return f"data:{image.mime_type};base64,{_b64(image.data)}"


def _image_note(image: Image, api: str) -> str:
    return f"[an image of type {image.mime_type} ({len(image.data)} bytes) that the {api} API does not take]"


@attrs.frozen
class ResultNote:
    """What a result post-processor adds to a call's result: text appended, meta merged."""

    text: str = ""
    meta: Mapping[str, Any] = attrs.field(factory=dict)


Handler = Callable[["CallContext", Any], Awaitable["ToolResult | str | Sequence[Content]"]]


def _name_is_valid(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not value or not all(ch.isalnum() or ch == "_" for ch in value):
        raise ValueError(f"tool name must be letters, digits and _, got {value!r}")


@attrs.frozen
class Action:
    """The fields one action of a multi-action tool uses (besides the selector field)."""

    required: tuple[str, ...] = attrs.field(converter=_names, default=())
    optional: tuple[str, ...] = attrs.field(converter=_names, default=())
    #: groups of fields of which exactly one must be given (each also counts as used), with
    #: what each means: ``(("port", "pid", "a debug server's port or a local pid"),)``
    one_of: tuple[tuple[str, str, str], ...] = ()


def _actions_map(value: Mapping[str, Action | Sequence[str]]) -> dict[str, Action]:
    return {
        name: spec if isinstance(spec, Action) else Action(required=tuple(spec))
        for name, spec in value.items()
    }


@attrs.frozen
class Actions:
    """Per-action fields of a tool whose ``selector`` field (``"action"``, ``"op"``) picks what it
    does, declared once and enforced by the core for every call, with one error format:

    - a required field that is absent (or ``null``): ``program: required for op "launch"``;
    - a field the action does not use, given a value: ``file: not used by op "status"; leave it
      out``. An explicit ``null`` counts as absent, so clients with strict schemas (which send
      ``null`` for every optional field) are never refused for it.

    ``ToolSpec(..., actions=Actions("op", {"launch": Action(("program",), ("args",)), ...}))``.
    The table is added to the tool's description in every schema format.
    """

    selector: str
    fields: Mapping[str, Action] = attrs.field(converter=_actions_map)

    def problems(self, raw: Mapping[str, Any]) -> list[str]:
        """One ``field: …`` line per problem with ``raw`` (already type-checked arguments)."""
        action = raw.get(self.selector)
        spec = self.fields.get(action) if isinstance(action, str) else None
        if spec is None:
            return []  # the selector's own type/enum check reports it
        lines = [
            f'{name}: required for {self.selector} "{action}"'
            for name in spec.required
            if raw.get(name) is None
        ]
        for first, second, meaning in spec.one_of:
            given = [name for name in (first, second) if raw.get(name) is not None]
            if len(given) != 1:
                why = "both were given" if given else "neither was given"
                lines.append(
                    f'{second if given else first}: {self.selector} "{action}" takes exactly one '
                    f"of {first} and {second}: {meaning}; {why}"
                )
        one_of = {name for group in spec.one_of for name in group[:2]}
        used = {self.selector, *spec.required, *spec.optional, *one_of}
        lines += [
            f'{name}: not used by {self.selector} "{action}"; leave it out'
            for name, value in raw.items()
            if name not in used and value is not None
        ]
        return lines

    def describe(self) -> str:
        rows = []
        for action, spec in self.fields.items():
            parts = [
                *spec.required,
                *(f"{a} | {b}" for a, b, _ in spec.one_of),
                *(f"[{name}]" for name in spec.optional),
            ]
            rows.append(f"{action}: {', '.join(parts) if parts else '(no other field)'}")
        return f"Fields per {self.selector} ([optional]): " + "; ".join(rows) + "."

    def unknown_fields(self, cls: type) -> list[str]:
        """Declared field names the argument class does not have."""
        known = {field.name for field in attrs.fields(cls)}
        declared = {self.selector}
        for spec in self.fields.values():
            declared |= {*spec.required, *spec.optional}
            declared |= {name for group in spec.one_of for name in group[:2]}
        return sorted(declared - known)


@attrs.frozen
class ToolSpec:
    """A tool a plugin (or the harness) offers.

    ``args`` is a frozen attrs class (see :func:`tether.arg`); ``handler(call, args)`` is async and
    returns a :class:`ToolResult`, a ``str`` or a list of content blocks. ``requires`` names the
    resources (names or :class:`~tether.resources.ResourceKey` objects) that must be wired for the tool to be registered. ``timeout_s=None`` uses the run's
    ``[core] call_timeout_s``; ``0`` means the handler bounds its own time.
    """

    name: str = attrs.field(validator=_name_is_valid)
    tier: Tier = attrs.field(converter=_tier)
    args: type
    handler: Handler
    description: str
    requires: tuple[str, ...] = attrs.field(converter=_names, default=())
    parallel_safe: bool = True
    timeout_s: float | None = None
    #: per-action fields of a tool with an action selector, enforced by the core
    actions: Actions | None = None
    #: how a tool that does not write through ``tether.workdir.writing`` says what it wrote: the name of
    #: its path argument, or a function ``(call, result) -> paths`` (relative to the workdir or
    #: absolute). Tools writing through the core's writers need nothing here.
    writes: str | Callable[[CallContext, ToolResult], Iterable[str | Path]] | None = None
    #: what a call will change, shown on its approval card (the card of a write shows what it
    #: writes, not only its arguments): ``(call, args) ->`` text, a
    #: :class:`~tether.preview.StagedChange`, or a :data:`~tether.workdir.writing.Plan` (the function
    #: the tool hands the core's writer), run on the files as they are; sync or async. The core
    #: renders it bounded and visible (:func:`tether.preview.describe_call`).
    describe_change: Callable[[CallContext, Any], Any] | None = None
    #: how a result larger than the run's budget is cut (the tool's item separator) and how the
    #: model gets the rest (a page, an offset, a narrower path): see :mod:`tether.budget`
    continuation: Continuation | None = None

    @property
    def full_description(self) -> str:
        """The description as schemas show it: with the per-action fields, when declared."""
        if self.actions is None:
            return self.description
        return f"{self.description.rstrip()}\n\n{self.actions.describe()}"


@attrs.frozen
class CallContext:
    """One call as it goes through the pipeline."""

    run: Run
    spec: ToolSpec
    args: Any
    raw_args: Mapping[str, Any]
    surface: str
    call_id: str
    #: the transport's listener for progress while the call runs (an MCP server turns each
    #: message into a progress notification); None: the caller shows none
    on_progress: Callable[[str], None] | None = None

    def report_progress(self, message: str) -> None:
        """Tell the caller what a long call is waiting for ("basedpyright: 412 files to
        analyze"); a no-op when the transport shows no progress. Never raises: a listener's
        failure must not fail the call."""
        if self.on_progress is None:
            return
        try:
            self.on_progress(message)
        except Exception:  # the listener is the transport's; the call goes on
            pass

    @property
    def tool(self) -> str:
        return self.spec.name

    @property
    def tier(self) -> Tier:
        return self.spec.tier


def as_result(value: ToolResult | str | Sequence[Content]) -> ToolResult:
    """Normalise what a handler returned."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.text(value)
    return ToolResult(content=_content_tuple(value))
