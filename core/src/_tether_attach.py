"""The ``tether`` command's entry point, and the one thing it does without the library: a call
on a served run, ``tether call TOOL [ARGS] --attach [SOCKET]`` (or ``--warm`` with the server
already up), spoken over the server's Unix socket with the standard library alone.

Importing :mod:`tether` (the run machinery, attrs, the plugin manager) takes a few hundred
milliseconds before anything is done; a call on a warm server needs none of it. This module
sits outside the ``tether`` package (importing ``tether.anything`` runs ``tether/__init__``), and
imports only ``os``, ``sys``, the C halves of ``socket``, ``signal`` and ``json`` and the like
(their Python halves import ``enum``, ``selectors`` and ``re``), so such a call costs the
interpreter's start and one round trip. Whatever it cannot do alone it hands, before any request
is sent, to the full command line (:func:`tether.cli.main`), which gives the same answer the
slow way or says what is wrong: no live server (``--warm`` then starts one), an argument it does
not read, a socket or a server it would refuse, an attach line the server refused.

The rules of who may connect to what live here, for the server (:mod:`tether.cli.serve`) and
every client alike: where servers keep their sockets, which socket may be trusted (this user's,
0600, in a private directory, never through a link) and the peer's uid (``SO_PEERCRED``).
"""

from __future__ import annotations

import _signal
import _socket
import errno
import fcntl
import os
import stat
import struct
import sys
from collections.abc import Callable

try:  # json's C half: reading and writing JSON without json's module, which imports `re`
    import _json  # (json's import is ~4 ms of this command's ~35 ms start)
except ImportError:  # pragma: no cover - an interpreter without it
    _json = None  # type: ignore[assignment]

# typing and pathlib cost the command's start more than the rest of its imports together
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    StrPath = str | os.PathLike[str]

#: overrides where servers keep their sockets (tests; a harness with its own runtime dir)
RUNTIME_DIR_ENV = "TETHER_RUNTIME_DIR"
#: how long a client waits for the server's answer to its attach line
ATTACH_TIMEOUT_S = 30.0
#: the flags of ``tether call`` this module reads itself: those taking a value, then the others
_VALUE_FLAGS = {"--workdir", "--config", "--conversation", "--surface"}
_BARE_FLAGS = {"--trust-workdir", "--vibe", "--text", "--warm"}
#: the signals that stop a call, by name (``signal.Signals`` would import ``enum``)
_STOP_SIGNALS = {_signal.SIGTERM: "SIGTERM", _signal.SIGHUP: "SIGHUP", _signal.SIGINT: "SIGINT"}


# --- JSON, as json.loads and json.dumps read and write it ---------------------------------------

_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Reading:
    """What json's C scanner reads of its context: ``json.loads``' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


class _ReadingFinite(_Reading):
    @staticmethod
    def parse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")


_SCANNERS: dict[bool, Callable[[str, int], tuple[Any, int]]] = {}
_WHITESPACE = " \t\n\r"


def loads(text: str | bytes, *, finite: bool = False) -> Any:
    """``json.loads(text)`` (``finite``: NaN and Infinity refused, a ValueError): a ValueError
    for anything that is not one JSON document, a RecursionError for one nested too deep."""
    if _json is None:  # pragma: no cover
        return _slow_loads(text, finite)
    if isinstance(text, bytes):
        if text.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) or b"\0" in text[:4]:
            return _slow_loads(text, finite)  # a BOM, UTF-16 or 32: json.loads tells which
        text = text.decode("utf-8", "surrogatepass")  # (json.loads' decoding of UTF-8)
    scan = _SCANNERS.get(finite)
    if scan is None:
        context = _ReadingFinite if finite else _Reading
        scan = _SCANNERS[finite] = _json.make_scanner(context)  # type: ignore[arg-type]
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = scan(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        raise
    except Exception:  # a malformed document: the C half words it with json's module
        return _slow_loads(text, finite)
    if text[end:].strip(_WHITESPACE):
        raise ValueError("not one JSON document")
    return value


def _slow_loads(text: str | bytes, finite: bool) -> Any:
    import json

    return json.loads(text, parse_constant=_ReadingFinite.parse_constant if finite else None)


def _no_default(value: object) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: Any, *, allow_nan: bool = True) -> str:
    """``json.dumps(value)`` with its defaults (ASCII only, ``", "`` and ``": "``)."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, allow_nan=allow_nan)
    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    encode = _json.make_encoder(
        {}, _no_default, _json.encode_basestring_ascii, None, ": ", ", ", False, False, allow_nan
    )
    return "".join(encode(value, 0))


# --- where servers live, and which socket may be used ------------------------------------------


def runtime_path() -> str:
    """The per-user directory of sockets and server records: ``$TETHER_RUNTIME_DIR``, else
    ``$XDG_RUNTIME_DIR/tether``, else ``/tmp/tether-$UID`` (checked by :func:`private_problem`
    before any use)."""
    if os.environ.get(RUNTIME_DIR_ENV):
        return os.environ[RUNTIME_DIR_ENV]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "tether")
    import tempfile  # its imports are most of this command's start: only when needed

    return os.path.join(tempfile.gettempdir(), f"tether-{os.getuid()}")


def private_problem(path: StrPath, is_kind: Callable[[int], bool], kind: str) -> str | None:
    """Why ``path`` is not this user's private ``kind`` (None when it is): it must not be a
    symbolic link, must be owned by this user, with no group or other permission bits."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "does not exist"
    if not is_kind(st.st_mode):
        return f"is not a {kind} (a link or another kind of file)"
    if st.st_uid != os.getuid():
        return f"is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    if st.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(st.st_mode):o}: others have access (0700/0600 expected)"
    return None


def socket_problem(path: StrPath) -> str | None:
    """Why a client may not connect to ``path`` (None when it may): the socket must be this
    user's, mode 0600, in a directory that is this user's alone."""
    parent = os.path.dirname(os.fspath(path)) or "."
    problem = private_problem(parent, stat.S_ISDIR, "directory")
    if problem:
        return f"socket directory {parent!r}: {problem}; refused"
    problem = private_problem(path, stat.S_ISSOCK, "socket")
    if problem:
        return f"socket {str(path)!r}: {problem}; refused"
    return None


def _sha256(data: bytes) -> str:
    """SHA-256 of ``data`` in hex, by the interpreter's own module where it has one: ``hashlib``
    loads OpenSSL first (~3 ms of every attached call's ~35 ms start)."""
    for name in ("_sha2", "_sha256"):  # Python 3.12 and later; 3.11
        try:
            module = __import__(name)
        except ImportError:
            continue
        return str(module.sha256(data).hexdigest())
    import hashlib  # an interpreter built without them

    return hashlib.sha256(data).hexdigest()


def server_key(workdir: StrPath, config: StrPath | None, *, trust_workdir: bool, vibe: bool) -> str:
    """What a server is found by: its workdir (resolved), its configuration file and its run
    flags."""
    ident = [os.fspath(workdir), os.path.realpath(config) if config else None, trust_workdir, vibe]
    return _sha256(dumps(ident).encode())[:16]


def server_alive(lock: StrPath) -> bool:
    """Whether a server holds its ``lock`` file (it holds it from its start to its exit; a
    killed server's lock is released by the kernel, so its socket is known stale)."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def peer_uid(sock: _socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


# --- printing a reply -------------------------------------------------------------------------


def print_text(reply: dict[str, Any], out: BinaryIO) -> None:
    """``tether call --text``: a reply for a person: each text block as it is, an image as one
    line saying what it is, and "error:" first when the call failed (the exit status says it
    too). UTF-8 whatever the locale; a lone surrogate is written as its escape."""
    parts = []
    for block in reply["content"]:
        if block.get("type") == "text":
            parts.append(block["text"])
        else:
            size = len(block.get("data", "")) * 3 // 4
            parts.append(f"[{block.get('type')} {block.get('mime_type', '')}, about {size} bytes]")
    text = "\n".join(parts)
    if reply["is_error"]:
        text = f"error: {text}"
    out.write((text if text.endswith("\n") else text + "\n").encode("utf-8", "backslashreplace"))
    out.flush()


def _reply_line(line: bytes, request_id: int) -> bytes:
    """The server's reply line without its id: what the full command line prints for it. The
    server wrote it terminal-safe (``tether.cli.session.json_line``) with the id first, so it is
    cut out as it is; a line of another shape is written again, ASCII-only (nothing in it a
    terminal acts on)."""
    head = b'{"id": %d, ' % request_id
    if line.startswith(head):
        return b"{" + line[len(head) :]
    reply = loads(line)
    reply.pop("id", None)
    return dumps(reply).replace("\x7f", "\\u007f").encode() + b"\n"


# --- ``tether call ... --attach``, read and made -----------------------------------------------


class AttachedCall:
    """A ``tether call`` this module can make: its arguments as the full parser would read them."""

    def __init__(self) -> None:
        self.tool = ""
        self.args = "{}"
        self.attach: str | None = None
        self.warm = False
        self.text = False
        self.trust_workdir = False
        self.vibe = False
        self.workdir = "."
        self.config: str | None = None
        self.conversation: str | None = None
        self.surface: str | None = None

    @classmethod
    def parse(cls, argv: list[str]) -> AttachedCall | None:
        """``argv`` read as ``tether call``'s parser reads it, or None when it holds anything
        else (another command, help, a flag not read here, an abbreviated flag, positionals the
        parser would split or refuse): the full command line then reads it."""
        if not argv or argv[0] != "call":
            return None
        call = cls()
        positionals: list[str] = []
        chunks = 0  # runs of positionals: argparse gives a second run to no positional
        previous_positional = False
        values: dict[str, str] = {}
        rest = argv[1:]
        i = 0
        while i < len(rest):
            token = rest[i]
            i += 1
            if not token.startswith("-") or token == "-":
                if token == "-":
                    return None
                positionals.append(token)
                chunks += not previous_positional
                previous_positional = True
                continue
            previous_positional = False
            name, eq, inline = token.partition("=")
            if name == "--attach":
                if eq:
                    call.attach = inline
                elif i < len(rest) and not rest[i].startswith("-"):
                    call.attach = rest[i]
                    i += 1
                else:
                    call.attach = ""
            elif name in _VALUE_FLAGS:
                if not eq:
                    if i >= len(rest) or rest[i].startswith("-"):
                        return None
                    inline = rest[i]
                    i += 1
                values[name] = inline
            elif name in _BARE_FLAGS and not eq:
                setattr(call, name[2:].replace("-", "_"), True)
            else:
                return None
        if chunks != 1 or len(positionals) > 2:
            return None
        if call.attach is None and not call.warm:
            return None
        call.tool = positionals[0]
        if len(positionals) == 2:
            call.args = positionals[1]
        call.workdir = values.get("--workdir", ".")
        call.config = values.get("--config")
        call.conversation = values.get("--conversation")
        call.surface = values.get("--surface")
        return call

    def endpoint(self) -> str | None:
        """The socket to use: the one ``--attach SOCKET`` names, else the live server of this
        workdir and configuration; None when there is none (or the workdir or the configuration
        file is not there: the full command line says so)."""
        if self.attach:
            return self.attach
        workdir = os.path.realpath(self.workdir)
        config = self.config
        if not os.path.isdir(workdir) or (config is not None and not os.path.isfile(config)):
            return None
        key = server_key(workdir, config, trust_workdir=self.trust_workdir, vibe=self.vibe)
        runtime = runtime_path()
        if private_problem(runtime, stat.S_ISDIR, "directory"):
            return None
        base = os.path.join(runtime, key)
        return base + ".sock" if server_alive(base + ".lock") else None

    def attach_line(self) -> bytes:
        attach: dict[str, Any] = {"interactive": False}
        if self.surface is not None:
            attach["surface"] = self.surface
        if self.conversation is not None:
            attach["conversation"] = self.conversation
        return dumps({"attach": attach}).encode() + b"\n"


class _Stopped(BaseException):
    def __init__(self, signum: int) -> None:
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _io_timeout(sock: _socket.socket, seconds: float) -> None:
    """Bound each blocking connect, send and receive on ``sock`` (0: unbounded). The kernel's
    timeouts, not ``settimeout``, which makes the descriptor non-blocking: the buffered reader
    over it would then read nothing instead of waiting."""
    whole = int(seconds)
    timeval = struct.pack("ll", whole, int((seconds - whole) * 1_000_000))
    for option in (_socket.SO_RCVTIMEO, _socket.SO_SNDTIMEO):
        sock.setsockopt(_socket.SOL_SOCKET, option, timeval)


def _connect(path: str, call: AttachedCall) -> tuple[_socket.socket, BinaryIO] | None:
    """A connection on ``path`` attached with ``call``'s surface, or None when it cannot be
    trusted or the server refused it (the full command line then says why). Its lines are
    read through a buffered reader over the socket's descriptor (``socket.makefile`` is the
    Python half's)."""
    if socket_problem(path) is not None:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    stream = open(sock.fileno(), "rb", closefd=False)  # closed by call_served, or below
    try:
        _io_timeout(sock, ATTACH_TIMEOUT_S)
        sock.connect(path)
        if peer_uid(sock) != os.getuid():
            raise ConnectionRefusedError
        sock.sendall(call.attach_line())
        line = stream.readline()  # what came before the timeout: whole only with its newline
        ready = loads(line) if line.endswith(b"\n") else None
        if not isinstance(ready, dict) or ready.get("ready") is not True:
            raise ConnectionRefusedError
        _io_timeout(sock, 0)  # the call's own time is bounded by the served run
    except (OSError, ValueError):
        stream.close()
        sock.close()
        return None
    return sock, stream


def call_served(call: AttachedCall) -> int | None:
    """Make ``call`` on its served run and print the reply as ``tether call`` does; None when
    it is not made here (nothing was sent: the full command line takes over)."""
    try:
        args = loads(call.args, finite=True)
    except (ValueError, RecursionError):
        return None
    path = call.endpoint()
    if not isinstance(args, dict) or path is None:
        return None
    connected = _connect(path, call)
    if connected is None:
        return None
    sock, stream = connected
    previous = {sig: _signal.signal(sig, _raise_stopped) for sig in _STOP_SIGNALS}
    try:
        request = {"id": 1, "tool": call.tool, "args": args}
        sock.sendall(dumps(request, allow_nan=False).encode() + b"\n")
        line = _reply_to(stream)
    except _Stopped as stopped:
        # the connection's close cancels the call on the server (this call, no other)
        name = _STOP_SIGNALS[stopped.signum]
        line = None
        reply: dict[str, Any] | None = _error(
            f"{call.tool} was stopped: tether call received {name}; its call on the served "
            "run is cancelled"
        )
        code: int | None = 128 + stopped.signum
    except OSError as exc:
        if exc.errno not in (errno.ECONNRESET, errno.EPIPE):
            raise
        line, reply, code = b"", None, None
    else:
        reply, code = None, None
    finally:
        for sig, handler in previous.items():
            _signal.signal(sig, handler)
        stream.close()
        sock.close()
    out = sys.stdout.buffer
    if reply is None and line:
        reply = loads(line)
        if not call.text:
            out.write(_reply_line(line, 1))
            out.flush()
            return 1 if reply.get("is_error") else 0
    if reply is None:
        reply = _error("the server closed the connection before answering")
    if call.text:
        print_text(reply, out)
    else:
        out.write(dumps(reply).replace("\x7f", "\\u007f").encode() + b"\n")
        out.flush()
    return code if code is not None else 1 if reply.get("is_error") else 0


def _reply_to(stream: BinaryIO) -> bytes:
    """The reply line to request 1, or b"" when the server closed the connection first. An
    error line with no id answers the request too: the server could not read it."""
    while True:
        line = stream.readline()
        if not line:
            return b""
        message = loads(line)
        if not isinstance(message, dict):
            continue
        if message.get("id") == 1 or ("id" in message and message["id"] is None):
            return line


def _error(text: str) -> dict[str, Any]:
    return {"is_error": True, "content": [{"type": "text", "text": text}], "meta": {}}


def main(argv: list[str] | None = None) -> int:
    """The ``tether`` command: a call on a served run made here, anything else by
    :func:`tether.cli.main`."""
    args = sys.argv[1:] if argv is None else argv
    call = AttachedCall.parse(args)
    if call is not None:
        try:
            code = call_served(call)
        except KeyboardInterrupt:  # before the request was sent: nothing to cancel
            return 130
        if code is not None:
            return code
    from tether.cli import main as full_main

    return full_main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
