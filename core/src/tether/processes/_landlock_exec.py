"""Start a program that can write only beneath given directories (Linux Landlock).

Run as ``python -I -S _landlock_exec.py --abi N --write DIR... -- PROGRAM ARG...`` (by
:mod:`tether.processes.confine`, between the fork and the program): it restricts itself with Landlock, then
``exec``s the program, which inherits the restriction and passes it to every descendant. It
imports nothing of tether (``-S``: not even site-packages) so that it costs one bare interpreter
start. Any failure to restrict is fatal (exit 126, the reason on stderr): the program never
starts unconfined by accident.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every Linux arch
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# LANDLOCK_ACCESS_FS_*: every right that changes the filesystem (reading and executing are left
# alone: the program reads the project and its own install)
WRITE_FILE = 1 << 1
REMOVE_DIR, REMOVE_FILE = 1 << 4, 1 << 5
MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = (
    1 << 6, 1 << 7, 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12,
)  # fmt: skip
REFER = 1 << 13  # ABI 2: linking or renaming across directories
TRUNCATE = 1 << 14  # ABI 3
#: files outside the writable directories that a program may still open for writing
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")


def handled(abi: int) -> int:
    """The write rights the kernel of Landlock ABI ``abi`` can deny."""
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG
    rights |= MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def restrict(abi: int, writable: list[str]) -> None:
    """Allow writes beneath ``writable`` (and to :data:`WRITABLE_DEVICES`), deny every other
    write, for this process and whatever it ``exec``s or forks from now on."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    rights = handled(abi)
    attr = ctypes.create_string_buffer(struct.pack("=Q", rights))
    ruleset = libc.syscall(_CREATE_RULESET, attr, ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, allowed in [(p, rights) for p in writable] + [
            (d, rights & (WRITE_FILE | TRUNCATE)) for d in WRITABLE_DEVICES
        ]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a device this system lacks; a writable directory is made beforehand
            try:
                # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd
                rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd))
                done = libc.syscall(
                    _ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule,
                    ctypes.c_uint32(0),
                )  # fmt: skip
                if done < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def main(args: list[str]) -> None:
    abi = 1
    writable: list[str] = []
    while args and args[0] != "--":
        option, value, *_ = [*args[:2], ""]
        if option == "--abi":
            abi = int(value)
        elif option == "--write":
            writable.append(value)
        else:
            sys.stderr.write(f"tether landlock launcher: unknown option {option!r}\n")
            os._exit(126)
        args = args[2:]
    program = args[1:]
    if not program:
        sys.stderr.write("tether landlock launcher: no program after --\n")
        os._exit(126)
    try:
        restrict(abi, writable)
    except OSError as error:
        sys.stderr.write(f"tether: cannot confine {program[0]} with Landlock: {error}\n")
        os._exit(126)
    try:
        os.execv(program[0], program)
    except OSError as error:
        sys.stderr.write(f"tether: cannot start {program[0]}: {error}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
