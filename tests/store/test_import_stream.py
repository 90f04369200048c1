"""An import is read line by line (issue 12/17): the file is never held whole,
each event is checked as it is read, and the byte limit holds on a stream too.
Asserted on what was consumed, not on memory or time (benchmarks/bench_read_scale.py
measures those)."""

from __future__ import annotations

import asyncio
import io
import re
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


def _spaced(line: str) -> str:
    """The same line as ``json.dumps`` spaces it: read the general way, not as an export writes it."""
    import json

    return json.dumps(json.loads(line), ensure_ascii=False) + "\n"


def test_lines_as_an_export_writes_them_read_as_any_other_lines(export: list[str]) -> None:
    spaced = [export[0], *map(_spaced, export[1:])]
    assert spaced[1] != export[1]  # (the general way's input)
    fast, general = ExportReader(export, checkpoints=True), ExportReader(spaced, checkpoints=True)
    assert [e.to_json() for e in fast.events()] == [e.to_json() for e in general.events()]
    assert fast.checkpoints is not None and general.checkpoints is not None
    assert fast.checkpoints.rows == general.checkpoints.rows


@pytest.mark.parametrize(
    "edit",
    [
        lambda line: line.replace('"seq":3,', '"seq":4,'),  # out of order
        lambda line: line.replace('"seq":3,', '"seq":03,'),  # not JSON
        lambda line: line.replace('"event":{', '"event":{"extra":1,'),  # not an event
        lambda line: re.sub(r'"author":"[^"]*"', '"author":5', line),  # a field of the wrong type
        lambda line: line.rstrip("\n") + "x\n",  # trailing garbage
        lambda line: line.replace('"event":{', '"event":{"output":"\\ud800",'),  # a lone surrogate
        lambda line: line.replace('"event":{', '"event":{"output":' + "[" * 101 + "]" * 101 + ","),  # too deep
    ],
)
def test_an_edited_line_is_refused_as_the_general_way_refuses_it(export: list[str], edit: object) -> None:
    assert callable(edit)
    bad = [*export[:3], edit(export[3]), *export[4:]]
    spaced = [export[0], *map(_spaced, export[1:3]), edit(export[3]), *map(_spaced, export[4:])]
    messages = []
    for lines in (bad, spaced):
        with pytest.raises(ImportFormatError) as exc:
            list(ExportReader(lines).events())
        messages.append(str(exc.value))
    assert messages[0] == messages[1] and messages[0].startswith("line 4: ")
