"""The core's one reader of workdir files (tether.workdir.reading): what it refuses, by name, without
blocking; the cap before a byte is read; no symlink followed, even one swapped in mid-read; a
cancelled read leaves no thread behind."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import anyio
import pytest

from tether.errors import PathError
from tether.workdir.reading import Reader, UnreadableFile, off_loop, read_bytes, read_outside


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _socket(p: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))  # the file stays after the socket object is collected


def _directory(p: Path) -> None:
    p.mkdir()


def _zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _inner_fifo(p: Path) -> None:
    os.mkfifo(p.parent / "real.fifo")
    p.symlink_to("real.fifo")  # a symlink inside the workdir to a FIFO inside it


def _loop(p: Path) -> None:
    p.symlink_to(p.name)


#: kind of file -> (how to make it, what the refusal says)
HOSTILE = {
    "fifo": (_fifo, "is a FIFO, not a regular file"),
    "socket": (_socket, "is a socket, not a regular file"),
    "directory": (_directory, "is a directory, not a regular file"),
    "dev-zero-symlink": (_zero, "leads outside the workdir through a symlink (to '/dev/zero')"),
    "symlink-to-fifo": (_inner_fifo, "is a FIFO, not a regular file"),
    "symlink-loop": (_loop, "is a symlink loop"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("api", ["read", "stat", "chunks"])
def test_what_is_not_a_regular_file_is_refused_by_name_at_once(tmp_path, kind, api):
    make, says = HOSTILE[kind]
    make(tmp_path / "x.py")
    started = time.monotonic()
    with Reader(tmp_path) as reader, pytest.raises(UnreadableFile) as caught:
        if api == "read":
            reader.read("x.py", field="file")
        elif api == "stat":
            reader.stat("x.py", field="file")
        else:
            reader.chunks("x.py", field="file")
    assert time.monotonic() - started < 1
    assert str(caught.value).startswith("file: ")
    assert says in str(caught.value)


def test_the_cap_is_checked_before_a_byte_is_read(tmp_path):
    big = tmp_path / "big.py"
    big.touch()
    os.truncate(big, 3 * 1024**3)  # 3 GB, sparse
    started = time.monotonic()
    with Reader(tmp_path) as reader, pytest.raises(UnreadableFile) as caught:
        reader.read(big, max_bytes=1_000_000, shown="big.py")
    assert time.monotonic() - started < 1
    assert str(caught.value) == (
        "path: 'big.py' is 3,221,225,472 bytes, over the cap of 1,000,000 bytes tether reads "
        "of one file; nothing of it was read"
    )
    assert caught.value.reason == "too large"


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/".join(["abcdefghij"] * 420) + "/a.py", "the path is 4,624 bytes long"),
        ("x" * 300 + ".py", "is 303 bytes long; a file name holds at most 255"),
        ("../outside.py", "is outside the workdir"),
        ("missing.py", "no such file 'missing.py'"),
    ],
)
def test_a_path_that_cannot_name_a_workdir_file_names_its_field(tmp_path, path, says):
    with Reader(tmp_path) as reader, pytest.raises(PathError) as caught:
        reader.read(path, field="file")
    assert str(caught.value).startswith("file: ") and says in str(caught.value)


def test_a_directory_swapped_for_a_symlink_mid_read_is_never_followed(tmp_path):
    """A thread flips ``sub`` between a real directory and a symlink to an outside directory
    holding a secret of the same name; 300 reads never return the secret."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "a.py").write_text("inside\n")
    outside.mkdir()
    (outside / "a.py").write_text("SECRET\n")
    (work / "real").mkdir()
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            os.rename(work / "sub", work / "real" / "sub")
            (work / "sub").symlink_to(outside)
            os.unlink(work / "sub")
            os.rename(work / "real" / "sub", work / "sub")

    flipper = threading.Thread(target=flip)
    flipper.start()
    contents, refused = [], 0
    try:
        for _ in range(300):
            try:
                with Reader(work) as reader:
                    contents.append(reader.read(work / "sub" / "a.py"))
            except UnreadableFile:
                refused += 1
    finally:
        stop.set()
        flipper.join()
    assert b"SECRET\n" not in contents
    assert refused + len(contents) == 300


@pytest.mark.anyio
async def test_a_cancelled_read_returns_at_once_and_its_thread_ends(tmp_path):
    ended = threading.Event()

    def endless(reader: Reader) -> None:
        try:
            while True:  # a scan of a huge tree: it checks the stop between files
                reader.check()
                time.sleep(0.001)
        finally:
            ended.set()

    started = time.monotonic()
    with anyio.move_on_after(0.2):
        await off_loop(tmp_path, endless)
    assert time.monotonic() - started < 0.5
    assert await anyio.to_thread.run_sync(ended.wait, 2), "the thread went on after the cancel"


@pytest.mark.anyio
async def test_read_bytes_reads_a_regular_file_through_an_inner_symlink(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "real.py").write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to("pkg/real.py")
    assert await read_bytes(tmp_path, "link.py") == b"x = 1\n"
    assert await read_bytes(tmp_path, tmp_path / "pkg" / "real.py") == b"x = 1\n"


def test_read_outside_refuses_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "f")
    with pytest.raises(UnreadableFile, match="is a FIFO, not a regular file"):
        read_outside(tmp_path / "f")
    with pytest.raises(UnreadableFile, match="is a character device"):
        read_outside("/dev/zero")
    (tmp_path / "ok.toml").write_text("a = 1\n")
    assert read_outside(tmp_path / "ok.toml") == b"a = 1\n"


@pytest.mark.parametrize(
    ("kind", "says"),
    [("fifo", "is a FIFO, not a regular file"), ("socket", "is a socket, not a regular file")],
)
def test_a_write_finding_no_regular_file_names_what_it_found(tmp_path, kind, says):
    """The write path's own read (the stale check) names the kind too, and writes nothing."""
    from tether.workdir.writing import FileChange, apply_changes

    HOSTILE[kind][0](tmp_path / "x.py")
    with pytest.raises(PathError) as caught:
        apply_changes([FileChange(tmp_path / "x.py", b"old", b"new")], root=tmp_path)
    assert str(caught.value) == f"path: 'x.py' {says}"


def test_a_write_never_loads_a_huge_file_to_compare_it(tmp_path):
    from tether.workdir.journal import WRITE_READ_MAX_BYTES
    from tether.workdir.writing import FileChange, apply_changes

    big = tmp_path / "big.py"
    big.touch()
    os.truncate(big, 3 * 1024**3)
    with pytest.raises(PathError, match=f"over the cap of {WRITE_READ_MAX_BYTES:,} bytes"):
        apply_changes([FileChange(big, b"old", b"new")], root=tmp_path)
    assert big.stat().st_size == 3 * 1024**3


def _shapes(root: Path) -> dict[str, str]:
    """Path shapes a caller may give, over a tree with an inner symlinked file and directory,
    a FIFO, a directory and a missing file: name -> the path as given."""
    (root / "d" / "e").mkdir(parents=True)
    (root / "a.py").write_text("a\n")
    (root / "d" / "b.py").write_text("b\n")
    (root / "d" / "e" / "c.py").write_text("c\n")
    (root / "link.py").symlink_to("a.py")
    (root / "dlink").symlink_to("d")
    (root / "out").symlink_to("/etc")
    os.mkfifo(root / "d" / "f.fifo")
    return {
        "top": "a.py",
        "nested": "d/e/c.py",
        "dot": "./a.py",
        "dotdot-inside": "d/../a.py",
        "double-slash": "d//b.py",
        "trailing-slash": "d/b.py/",
        "absolute-inside": str(root / "d" / "b.py"),
        "inner-symlink-file": "link.py",
        "through-inner-symlink-dir": "dlink/b.py",
        "through-outer-symlink-dir": "out/hostname",
        "climbs-out": "../x.py",
        "fifo": "d/f.fifo",
        "directory": "d/e",
        "missing": "d/none.py",
        "missing-dir": "none/x.py",
        "file-as-dir": "a.py/x",
        "long-name": "d/" + "n" * 300,
    }


def _answer(reader: Reader, path: str, api: str) -> tuple[str, object]:
    try:
        if api == "stat":
            st = reader.stat(path)
            return "ok", (st.st_dev, st.st_ino, st.st_size)
        return "ok", reader.read(path)
    except (UnreadableFile, PathError) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("api", ["stat", "read"])
def test_a_plain_path_read_directly_answers_as_the_confined_way(tmp_path, monkeypatch, api):
    """The reader walks a plain relative path directly (no realpath per file: a search stats
    thousands); every path shape gets the very answer the confined way gives, refusals alike."""
    shapes = _shapes(tmp_path)
    with Reader(tmp_path) as reader:
        direct = {name: _answer(reader, path, api) for name, path in shapes.items()}
    monkeypatch.setattr(Reader, "_direct", lambda self, path: None)
    with Reader(tmp_path) as reader:
        confined = {name: _answer(reader, path, api) for name, path in shapes.items()}
    assert direct == confined
    assert direct["nested"][0] == direct["inner-symlink-file"][0] == "ok"
    assert direct["through-outer-symlink-dir"][0] != "ok"


def test_a_scan_confines_no_plain_path(tmp_path, monkeypatch):
    """Stat and read of plain relative paths (a search's files) never go through `confine`:
    its realpath cost an lstat per component per file and doubled a warm search's time."""
    import tether.workdir.reading

    _shapes(tmp_path)
    calls: list[str] = []
    real = tether.workdir.reading.confine

    def counted(root: Path, path: str, field: str = "path") -> Path:
        calls.append(path)
        return real(root, path, field)

    monkeypatch.setattr(tether.workdir.reading, "confine", counted)
    with Reader(tmp_path) as reader:
        for path in ["a.py", "d/b.py", "d/e/c.py"] * 10:
            reader.stat(path)
            reader.read(path)
        reader.stat("link.py")  # a symlink: the confined way, which follows it inside
    assert calls == ["link.py"]
