"""engine.models.path_parts: the three path helpers' answers in one call (the fold
and the import's checks use it for each new run)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.models import join_path, leaf_name, leaf_run_id, parent_path, path_parts

_NAME = st.text(alphabet="ab@_-1", min_size=0, max_size=6)
_SEG = st.tuples(_NAME, st.text(alphabet="0123456789", min_size=0, max_size=3))


@given(st.lists(_SEG, min_size=1, max_size=5))
def test_path_parts_is_the_three_helpers(segments: list[tuple[str, str]]) -> None:
    path = None
    for name, run_id in segments:
        path = join_path(path, name, run_id)
    assert path is not None
    assert path_parts(path) == (parent_path(path), leaf_name(path), leaf_run_id(path))


@given(st.text(alphabet="ab@/1", max_size=12))
def test_path_parts_on_any_text(path: str) -> None:
    assert path_parts(path) == (parent_path(path), leaf_name(path), leaf_run_id(path))


def test_examples() -> None:
    assert path_parts("wf@1/a@2") == ("wf@1", "a", "2")
    assert path_parts("wf@1") == (None, "wf", "1")
