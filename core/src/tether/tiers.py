"""Tiers (what a tool may do) and surfaces (the maximum tier a caller may see)."""

from __future__ import annotations

import enum
import functools


@functools.total_ordering
class Tier(enum.Enum):
    """``read`` = no side effect, ``write`` = changes files, ``exec`` = starts or drives a process."""

    READ = "read"
    WRITE = "write"
    EXEC = "exec"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Tier):
            return NotImplemented
        return self.rank < other.rank

    @classmethod
    def parse(cls, value: str | Tier) -> Tier:
        if isinstance(value, Tier):
            return value
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"expected one of read, write, exec, got {value!r}") from None


_RANKS = {Tier.READ: 0, Tier.WRITE: 1, Tier.EXEC: 2}

#: The built-in surfaces and their maximum tier. Custom ones come from ``[core] surfaces``.
BUILTIN_SURFACES: dict[str, Tier] = {
    "default": Tier.EXEC,
    "plan": Tier.READ,
    "readonly": Tier.READ,
}
