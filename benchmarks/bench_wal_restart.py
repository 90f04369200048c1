"""What a cold process's first commit pays for the WAL that the last one deleted (issue 15).

    python benchmarks/bench_wal_restart.py            # 25 processes per row
    python benchmarks/bench_wal_restart.py --reps 41

SQLite deletes the -wal file when the last connection to a database closes
(after copying it into the file: a checkpoint). The next process's first commit
then starts a new WAL, and SQLite syncs the new WAL's header before writing a
frame -- at ``synchronous=NORMAL`` too, for crash safety -- and the directory
the new file appeared in. ``bench_cold``'s resume and fresh run pay this in
their first commit; this script measures it apart from our code, with plain
``sqlite3`` in fresh processes on one file (as operators' successive ``hitl``
commands use a store):

* ``deleted at close`` (SQLite's default, and the store's): each process opens
  a checkpointed file, commits twice, closes;
* ``kept at close``: the same with ``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`` set
  (Python 3.12's ``Connection.setconfig``; on 3.11, which has no API for it,
  through ctypes -- here only, never in the store): nothing is checkpointed at
  close, the WAL and its committed frames stay beside the file, and the next
  process appends to them;
* the open's cost against the number of frames left in the WAL: the next
  process rebuilds its index from the whole WAL before its first read.

Columns: medians over the processes (the first 3 of each row are dropped) of
the first commit, the second commit, the close, and open + first read, in ms
(the flag's setting is not timed). In the "kept" rows each process appends
its frames to the WAL the previous ones left, as nothing checkpoints it.
A kept WAL trades the first commit's syncs and the close's checkpoint for a
file that is no longer complete on its own after the last process exits (a
copy of the .sqlite alone misses the commits in the -wal) and for the
recovery at each open; the store keeps SQLite's default (see issue 15's note).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import sqlite3, sys, time
path, keep, sync = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
t0 = time.perf_counter()
conn = sqlite3.connect(path, isolation_level=None)
conn.execute(f"PRAGMA synchronous = {sync}")
opened = time.perf_counter() - t0
if keep:
    if hasattr(conn, "setconfig"):
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
    else:  # Python 3.11: the connection's sqlite3* is its first field after the object header
        import ctypes, _sqlite3
        lib = ctypes.CDLL(_sqlite3.__file__)
        db = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__)
        name = lib.sqlite3_db_filename
        name.restype, name.argtypes = ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_char_p]
        assert name(db, b"main").decode() == path, "not this Python's connection layout"
        flag = ctypes.c_int(0)
        assert lib.sqlite3_db_config(db, 1006, ctypes.c_int(1), ctypes.byref(flag)) == 0 and flag.value == 1
t = time.perf_counter()
conn.execute("SELECT x FROM t WHERE id = 7").fetchone()
t1 = time.perf_counter()
opened += t1 - t
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO t (x) VALUES (randomblob(300))")
conn.execute("INSERT INTO t (x) VALUES (randomblob(3000))")
conn.execute("COMMIT")
t2 = time.perf_counter()
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO t (x) VALUES (randomblob(300))")
conn.execute("COMMIT")
t3 = time.perf_counter()
conn.close()
t4 = time.perf_counter()
print((t2 - t1) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3, opened * 1e3)
"""


def build(path: Path, rows: int) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x BLOB)")
    conn.executemany("INSERT INTO t (x) VALUES (randomblob(500))", [()] * rows)
    conn.commit()
    conn.close()


def child(path: Path, keep: bool, sync: str) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), "1" if keep else "0", sync], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return [float(x) for x in out.stdout.split()]


def wal_frames(path: Path) -> int:
    wal = Path(str(path) + "-wal")
    return max(0, (wal.stat().st_size - 32) // (4096 + 24)) if wal.exists() else 0


def main(args: argparse.Namespace) -> int:
    print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}; {args.reps} processes per row")
    header = f"{'row':44} {'1st commit':>10} {'2nd commit':>10} {'close':>8} {'open+read':>10}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="bench-wal-") as d:
        path = Path(d) / "t.sqlite"
        for sync in ("NORMAL", "FULL"):
            for keep in (False, True):
                build(path, 20_000)
                runs = [child(path, keep, sync) for _ in range(args.reps)][3:]
                cols = [statistics.median(c) for c in zip(*runs, strict=True)]
                label = f"WAL {'kept' if keep else 'deleted'} at close ({sync})"
                print(f"{label:44} {cols[0]:10.3f} {cols[1]:10.3f} {cols[2]:8.3f} {cols[3]:10.3f}")
        # A kept WAL grows by each process's frames: what the next open pays to read it back.
        build(path, 20_000)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        done = 0
        for target in (0, 100, 1000):
            snap = Path(d) / "snap.sqlite"
            while wal_frames(path) < target:
                conn.execute("UPDATE t SET x = randomblob(500) WHERE id = ?", (done * 37 % 20_000 + 1,))
                done += 1
            for suffix in ("", "-wal"):
                src = Path(str(path) + suffix)
                if src.exists():
                    Path(str(snap) + suffix).write_bytes(src.read_bytes())
            opens = []
            for _ in range(args.reps):
                Path(str(snap) + "-shm").unlink(missing_ok=True)
                prog = (
                    "import sqlite3, sys, time; t = time.perf_counter(); c = sqlite3.connect(sys.argv[1]);"
                    " c.execute('SELECT x FROM t WHERE id = 7').fetchone();"
                    " print((time.perf_counter() - t) * 1e3); import os; os._exit(0)"
                )
                out = subprocess.run([sys.executable, "-c", prog, str(snap)], capture_output=True, text=True, check=True)
                opens.append(float(out.stdout))
            label = f"open + first read, {wal_frames(snap):,} frames in the WAL"
            print(f"{label:44} {'':>10} {'':>10} {'':>8} {statistics.median(opens[3:]):10.3f}")
        conn.close()
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=25)
    sys.exit(main(ap.parse_args()))
