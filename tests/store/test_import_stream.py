"""An import is read line by line (issue 12/17): the file is never held whole,
each event is checked as it is read, and the byte limit holds on a stream too.
Asserted on what was consumed, not on memory or time (benchmarks/bench_read_scale.py
measures those)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from console.inputs import InputError, bounded_lines
from engine.store.jsonl import ExportReader, ImportFormatError, parse_export
from engine.store.sqlite import SQLiteStore
from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("import-stream") / "demo.sqlite"

    async def go() -> list[str]:
        await build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=3, sessions=0)
        async with SQLiteStore.open(path, read_only=True) as store:
            return [line async for line in store.export_session("incident-failed-1")]

    return asyncio.run(go())


def test_events_are_checked_as_they_are_read(export: list[str]) -> None:
    pulled = 0

    def source():  # counts the lines the reader has taken
        nonlocal pulled
        for line in export:
            pulled += 1
            yield line

    events = ExportReader(source()).events()
    next(events)
    assert pulled == 2  # the header and the first event, not the whole file
    assert len(list(events)) == len(export) - 2
    assert parse_export(export).events[0].id == next(ExportReader(export).events()).id


def test_a_bad_line_is_refused_before_the_rest_is_read(export: list[str]) -> None:
    pulled = 0
    bad = [*export[:3], "not json\n", *export[3:]]

    def source():
        nonlocal pulled
        for line in bad:
            pulled += 1
            yield line

    with pytest.raises(ImportFormatError) as exc:
        list(ExportReader(source()).events())
    assert exc.value.line == 4 and pulled == 4


def test_a_truncated_stream_is_refused_after_its_last_line(export: list[str]) -> None:
    with pytest.raises(ImportFormatError, match="truncated") as exc:
        list(ExportReader(export[:-1]).events())
    assert exc.value.line == len(export) - 1


def test_bounded_lines_reads_a_file_line_by_line(tmp_path: Path, export: list[str]) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text("".join(export), encoding="utf-8")
    assert [line.decode() for line in bounded_lines(str(f), 10**9, "import")] == export
    with pytest.raises(InputError, match="the limit is 100"):
        bounded_lines(str(f), 100, "import")  # refused before any line is read
    with pytest.raises(InputError, match="FIFO|regular file|directory"):
        bounded_lines(str(tmp_path), 10**9, "import")


def test_bounded_lines_stops_a_stream_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin:
        buffer = io.BytesIO(b"line one\n" * 1000)

    monkeypatch.setattr("sys.stdin", Stdin())
    lines = bounded_lines("-", 95, "import")
    assert next(lines) == b"line one\n"
    with pytest.raises(InputError, match="more than 95 bytes"):
        list(lines)
