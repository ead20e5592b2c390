"""What a search worker sends the run for each file (`FileResult.__reduce__`): a result that only
counts matches (most of an all-matching search's: past the page, matches are counted, not
described) goes as its path, count and flags; any other as all its fields. Either comes back
equal to what was sent."""

from __future__ import annotations

import pickle

import attrs
import pytest

from tether_astgrep.engine import FileResult, _counted
from tether_astgrep.rewrite import SyntaxCheck

COUNTED = [
    FileResult("a.py"),
    FileResult("pkg/b.py", count=20),
    FileResult("c.py", count=3, parsed=True),
    FileResult("d.py", count=1, reused=True),
]

# every other field set: each makes the result more than a count
OTHERS = {
    "skipped": "binary",
    "matches": ((1, 1, 1, 5, "f(x)", {"A": "x"}),),
    "parse_errors": True,
    "unsearchable_lines": 2,
    "reread_lines": 3,
    "original": b"x = 1\n",
    "new": b"x = 2\n",
    "replaced": 1,
    "skipped_inner": 1,
    "new_error_lines": (4,),
    "lossy_lines": (5,),
    "kept_lines": (6,),
    "dropped_comments": ((7, "# c"),),
    "syntax": SyntaxCheck("tree-sitter", (4,), "an error"),
}


@pytest.mark.parametrize("result", COUNTED, ids=lambda r: r.path)
def test_a_result_that_only_counts_goes_as_its_count(result: FileResult) -> None:
    assert result.__reduce__() == (
        _counted,
        (result.path, result.count, result.parsed, result.reused),
    )
    data = pickle.dumps(result)
    assert len(data) < 100  # all its fields: over 300 bytes
    assert pickle.loads(data) == result


def test_every_field_is_named_here() -> None:
    names = {a.name for a in attrs.fields(FileResult)}
    assert names == {"path", "count", "parsed", "reused", *OTHERS}


@pytest.mark.parametrize("field", OTHERS)
def test_any_other_field_set_goes_whole(field: str) -> None:
    result = attrs.evolve(FileResult("e.py", count=2, parsed=True), **{field: OTHERS[field]})
    reduced = result.__reduce__()
    assert reduced[0] is FileResult
    assert reduced[1] == tuple(getattr(result, a.name) for a in attrs.fields(FileResult))
    assert pickle.loads(pickle.dumps(result)) == result
    everything = attrs.evolve(result, **OTHERS)
    assert pickle.loads(pickle.dumps(everything)) == everything
