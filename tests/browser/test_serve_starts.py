"""How ``hitl serve`` starts consoles for a team: a few at a time in arrival order (the
page of a waiting one says how many start before it), forked from a parent that drew
one read-only console already and shares the parsed CSS, each console saying when its
first screen is drawn."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from console.serve.child import READY, build_argv
from console.serve.starts import StartQueue, waiting_text
from console.serve.web import ConsoleServer


async def _settle() -> None:
    for _ in range(20):  # let every ready task run up to its next wait (no clock involved)
        await asyncio.sleep(0)


async def test_start_queue_starts_a_few_at_a_time_in_arrival_order() -> None:
    queue = StartQueue(2)
    started: list[int] = []
    seen: dict[int, list[int]] = {n: [] for n in range(5)}

    async def one(n: int) -> None:
        async def progress(ahead: int) -> None:
            seen[n].append(ahead)

        await queue.take(progress)
        started.append(n)

    tasks = []
    for n in range(5):
        tasks.append(asyncio.create_task(one(n)))
        await _settle()
    assert started == [0, 1]  # two slots: the others wait ...
    assert [seen[n] for n in range(5)] == [[], [], [2], [3], [4]]  # ... and are told how many start before them
    queue.release()
    await _settle()
    assert started == [0, 1, 2] and queue.running == 2  # a freed slot goes to the first in line
    queue.release()
    queue.release()
    await _settle()
    assert started == [0, 1, 2, 3, 4]
    for _ in range(5):
        queue.release()
    assert queue.running == 0 and not queue.waiting
    await asyncio.gather(*tasks)


async def test_a_page_that_leaves_the_queue_gives_up_its_place() -> None:
    queue = StartQueue(1)
    await queue.take()
    leaving = asyncio.create_task(queue.take())
    staying = asyncio.create_task(queue.take())
    await _settle()
    leaving.cancel()  # the browser closed while waiting
    await _settle()
    assert len(queue.waiting) == 1
    queue.release()
    await _settle()
    assert staying.done() and queue.running == 1
    handed = asyncio.create_task(queue.take())
    await _settle()
    queue.release()  # the slot is handed over ...
    handed.cancel()  # ... to a page closing at that moment: it passes it on
    with pytest.raises(asyncio.CancelledError):
        await handed
    assert queue.running == 0 and not queue.waiting


class FakeService:
    def __init__(self) -> None:
        self.size: tuple[int, int] | None = None
        self.drawn = asyncio.Event()
        self.started_at: tuple[int, int] | None = None

    async def start(self, width: int, height: int) -> None:
        self.started_at = (width, height)


class FakeSocket:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def send_bytes(self, data: bytes) -> None:
        self.sent.append(data)


async def test_a_waiting_page_says_how_many_consoles_start_before_it() -> None:
    server = SimpleNamespace(starts=StartQueue(1))
    first, second = FakeService(), FakeService()
    first_page, second_page = FakeSocket(), FakeSocket()
    a = asyncio.create_task(ConsoleServer._start_in_turn(server, first, first_page, 120, 36))  # type: ignore[arg-type]
    await _settle()
    second.size = (100, 30)  # the page was resized while it waited
    b = asyncio.create_task(ConsoleServer._start_in_turn(server, second, second_page, 80, 24))  # type: ignore[arg-type]
    await _settle()
    assert first.started_at == (120, 36) and first_page.sent == []
    assert second.started_at is None  # the first console holds the slot until its first screen is drawn
    assert second_page.sent == [waiting_text(1)]
    assert b"Starting your console: 1 console starts before it" in waiting_text(1)
    first.drawn.set()
    await _settle()
    assert a.done() and second.started_at == (100, 30)  # ... at the page's latest size
    second.drawn.set()
    await asyncio.gather(a, b)
    assert server.starts.running == 0


async def test_a_resize_while_the_console_is_forked_reaches_it() -> None:
    """Under load a page's size can change while its console is being forked (after the queue
    let it start, before it has a stdin): that size is sent once it has one, or the console keeps
    the page's first, smaller size (a sessions list laid out for 80 columns in a wide page)."""
    from console.serve.web import ConsoleService

    forking = asyncio.Event()
    sent: list[dict[str, Any]] = []

    class Forked(ConsoleService):
        async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
            await forking.wait()
            self._stdin = SimpleNamespace()  # it has a stdin now
            return None

        async def run(self) -> None:
            return None

        async def send_meta(self, data: dict[str, Any]) -> bool:
            if self._stdin is None:
                return False
            sent.append(data)
            return True

    async def nothing(*_: Any) -> None:
        return None

    service = Forked(["hitl"], "ann", write_bytes=nothing, write_str=nothing, close=nothing,
                     download_manager=SimpleNamespace())
    service.drawn.set()
    server = SimpleNamespace(starts=StartQueue(1))
    starting = asyncio.create_task(ConsoleServer._start_in_turn(server, service, FakeSocket(), 80, 24))  # type: ignore[arg-type]
    await _settle()
    await service.set_terminal_size(180, 50)  # the browser's real size arrives mid-fork
    assert sent == []
    forking.set()
    await starting
    assert sent == [{"type": "resize", "width": 180, "height": 50}]


async def test_a_console_that_fails_to_start_frees_its_slot() -> None:
    class Broken(FakeService):
        async def start(self, width: int, height: int) -> None:
            raise OSError("no fork")

    server = SimpleNamespace(starts=StartQueue(1))
    with pytest.raises(OSError):
        await ConsoleServer._start_in_turn(server, Broken(), FakeSocket(), 80, 24)  # type: ignore[arg-type]
    assert server.starts.running == 0  # the next console is not kept waiting behind it
    ok = FakeService()
    ok.drawn.set()
    await ConsoleServer._start_in_turn(server, ok, FakeSocket(), 80, 24)  # type: ignore[arg-type]
    assert ok.started_at == (80, 24)


def test_parsed_css_is_shared_between_apps(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.css.stylesheet import Stylesheet

    from console.serve import forkserver

    calls: list[str] = []
    original = Stylesheet._parse_rules

    def counting(self: Stylesheet, css: str, *args: Any) -> Any:
        calls.append(css)
        return original(self, css, *args)

    monkeypatch.setattr(Stylesheet, "_parse_rules", counting)  # restored after the test
    forkserver.share_parsed_css()
    css = "Label { color: $accent; }"
    one, two = Stylesheet(variables={"accent": "red"}), Stylesheet(variables={"accent": "red"})
    rules = one._parse_rules(css, ("x", ""))
    assert two._parse_rules(css, ("x", "")) is rules and calls == [css]  # parsed once for both apps
    other = Stylesheet(variables={"accent": "blue"})
    assert other._parse_rules(css, ("x", "")) is not rules and len(calls) == 2  # other variables: parsed again


def _packets(buffer: bytearray) -> list[tuple[bytes, bytes]]:
    """Complete (type, payload) packets of textual's web driver at the front of ``buffer`` (consumed)."""
    out = []
    while len(buffer) >= 5:
        size = int.from_bytes(buffer[1:5], "big")
        if len(buffer) < 5 + size:
            break
        out.append((bytes(buffer[:1]), bytes(buffer[5:5 + size])))
        del buffer[:5 + size]
    return out


async def test_a_forked_console_says_when_its_first_screen_is_drawn(store: Path,
                                                                   capfd: pytest.CaptureFixture[str]) -> None:
    from textual_serve.app_service import AppService

    from console.serve.forkserver import ForkServer

    env = AppService._build_environment(SimpleNamespace(debug=False))  # type: ignore[arg-type]
    argv = build_argv(sys.executable, db=store, read_only=False, config=None, apps=[], show_secrets=False,
                      secret_patterns=[], operator="alice", read_only_reason=None)[3:]
    forks = ForkServer(env, warm=build_argv(sys.executable, db=store, read_only=True, config=None, apps=[],
                                            show_secrets=False, secret_patterns=[], operator=None,
                                            read_only_reason=None)[3:])
    try:
        assert "warm-up console did not finish" not in capfd.readouterr().err  # the parent drew it
        console = await forks.start(argv, {"COLUMNS": "120", "ROWS": "36"})
        try:
            assert (await console.stdout.readline()) == b"__GANGLION__\n"
            buffer, screen, drawn_before_ready = bytearray(), b"", None

            async def read() -> None:
                nonlocal screen, drawn_before_ready
                while drawn_before_ready is None or b" shown" not in screen:
                    chunk = await console.stdout.read(65536)
                    assert chunk, "the console ended before saying it was drawn"
                    buffer.extend(chunk)
                    for kind, payload in _packets(buffer):
                        if kind == b"D":
                            screen += payload
                        elif kind == b"M" and json.loads(payload).get("type") == READY:
                            drawn_before_ready = len(screen)

            await asyncio.wait_for(read(), 120)  # a bound on a hang, not a measurement
            assert drawn_before_ready is not None and drawn_before_ready > 2000  # said once a screen was drawn
        finally:
            console.kill()
    finally:
        forks.close()
