"""What a cold process (``hitl resume``) pays once per turn, kept to once per process
(issue 15). Costs themselves are measured in benchmarks/bench_cold.py; these tests
pin the behaviour that keeps them down."""

from __future__ import annotations

import subprocess
import sys

import pytest

import engine.owners as ow


def test_a_process_reads_its_own_identity_from_proc_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = ow._read
    monkeypatch.setattr(ow, "_read", lambda path: reads.append(path) or real(path))
    ow._scope.cache_clear()
    ow._own_start.cache_clear()
    first = ow.new_owner()
    n = len(reads)
    second = ow.new_owner()
    assert len(reads) == n, f"the second turn read {reads[n:]} again"
    assert first.split(":")[:4] == second.split(":")[:4] and first != second  # same process, new token
    assert ow.owner_state(second) == "alive"


def test_an_owner_id_imports_no_codec() -> None:
    # A text-mode open(encoding="ascii") imported encodings.ascii inside the turn's first write.
    code = "import sys, engine.owners as o; o.new_owner(); print('encodings.ascii' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_new_ids_are_version_4_uuids_in_hex() -> None:
    # Built from os.urandom without uuid.UUID (a cold turn makes several): the
    # same format as uuid.uuid4().hex, which ids written before had.
    import uuid

    from engine.models import new_id

    ids = [new_id() for _ in range(2_000)]
    assert len(set(ids)) == len(ids)
    for x in ids:
        u = uuid.UUID(hex=x)
        assert (u.hex, u.version, u.variant) == (x, 4, uuid.RFC_4122)


def test_an_owner_id_has_five_fields_and_a_scope_without_a_digest() -> None:
    owner = ow.new_owner()
    host, pid, scope, start, token = owner.split(":")
    assert pid.isdigit() and len(token) == 8 and int(token, 16) >= 0
    if scope != "-":  # boot id's first 12 hex digits . pid namespace inode in hex
        boot, ns = scope.split(".")
        with open("/proc/sys/kernel/random/boot_id") as fh:
            assert boot == fh.read().strip().replace("-", "")[:12]
        import os

        assert int(ns, 16) == os.stat("/proc/self/ns/pid").st_ino


def test_the_is_a_checkpoint_due_check_imports_nothing(tmp_path) -> None:
    # A turn end that crosses a multiple of engine.checkpoints.EVERY asks for the
    # last seek checkpoint's seq and size; importing the checkpoint module there
    # cost a cold process ~0.3 ms in the middle of its turn.
    code = (
        "import asyncio, sys\n"
        "from engine.store.sqlite import SQLiteStore\n"
        "async def main():\n"
        f"    store = await SQLiteStore.open({str(tmp_path / 's.sqlite')!r}, inline=True)\n"
        "    await store.create_session('a', 'u', 's')\n"
        "    print(await store.last_projection_checkpoint('s'), 'engine.store.sqlite.checkpoints' in sys.modules)\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(0, 0) False"

