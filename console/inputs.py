"""Everything the CLI reads from outside, bounded and checked up front.

Each function either returns clean data or raises :class:`InputError` (a
``HitlError``: one line, exit 1, nothing written). The rules:

* **Files** (``ID=@file``, ``hitl import FILE``, ``replay --file``) must be
  regular files: FIFOs, sockets and devices (``/dev/zero``, ``/dev/stdin`` as a
  path) are refused before they are opened, so nothing blocks or reads forever.
  Reads are bounded (:data:`MAX_ANSWER_FILE_BYTES`, :data:`MAX_IMPORT_BYTES`);
  stdin (``-``) is read up to the same bound.
* **Text** must be UTF-8 without lone surrogates: command-line arguments
  (Python smuggles undecodable bytes in as surrogates), file contents, and the
  strings inside parsed JSON (``"\\udcff"`` is valid JSON syntax but no text).
* **JSON** goes through :func:`engine.jsonin.loads`: nested at most
  :data:`MAX_JSON_DEPTH` levels deep, strings that are text.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import click

from engine.errors import HitlError
from engine.jsonin import MAX_JSON_DEPTH, loads
from engine.responses import MAX_RESPONSE_BYTES

MAX_ANSWER_FILE_BYTES = 2 * MAX_RESPONSE_BYTES
"""An ``ID=@file`` larger than this is refused without reading it."""

MAX_IMPORT_BYTES = 256 * 1024 * 1024
"""The largest file ``hitl import`` / ``replay --file`` reads."""


class InputError(HitlError):
    """Input that cannot be used; nothing was read past the problem, nothing written."""


def check_text(text: str, what: str) -> str:
    """``text`` when it is valid Unicode text (no lone surrogates), else InputError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{what} is not valid UTF-8 text (an undecodable byte or lone surrogate at character {exc.start})"
        ) from None
    return text


def check_args(args: Iterable[str]) -> None:
    """Every command-line argument must be UTF-8 (checked before any is used)."""
    for n, arg in enumerate(args, start=1):
        check_text(arg, f"command-line argument {n} ({ascii(arg)[:40]})")


def _regular(path: str, what: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"{what}: cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a FIFO, socket or device)"
        raise InputError(f"{what}: {path} is {kind}; give a regular file")
    return st


def read_bounded(path: str, limit: int, what: str) -> bytes:
    """The bytes of a regular file (or stdin for ``-``), at most ``limit``."""
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        st = _regular(path, what)
        if st.st_size > limit:
            raise InputError(f"{what}: {path} has {st.st_size} bytes; the limit is {limit} (see README, Limits)")
        try:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(f"{what}: cannot read {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise InputError(f"{what}: {path} has more than {limit} bytes; the limit is {limit} (see README, Limits)")
    return data


def bounded_lines(path: str, limit: int, what: str) -> Iterator[bytes]:
    """The lines of a regular file (or stdin for ``-``), at most ``limit`` bytes in
    all, read one at a time (an import never holds the whole file). The file is
    checked and opened now, so a missing, oversized or special file is refused
    before the caller opens its store; a stream that grows past ``limit``
    raises InputError at that line."""
    if path == "-":
        fh: BinaryIO = sys.stdin.buffer
    else:
        st = _regular(path, what)
        if st.st_size > limit:
            raise InputError(f"{what}: {path} has {st.st_size} bytes; the limit is {limit} (see README, Limits)")
        try:
            fh = open(path, "rb")  # noqa: SIM115 -- closed by the generator below
        except OSError as exc:
            raise InputError(f"{what}: cannot read {path}: {exc.strerror}") from None

    def lines() -> Iterator[bytes]:
        total = 0
        try:
            while True:
                try:
                    line = fh.readline(limit - total + 1)
                except OSError as exc:
                    raise InputError(f"{what}: cannot read {path}: {exc.strerror}") from None
                if not line:
                    return
                total += len(line)
                if total > limit:
                    raise InputError(f"{what}: {path} has more than {limit} bytes; the limit is {limit} (see README, Limits)")
                yield line
        finally:
            if fh is not sys.stdin.buffer:
                fh.close()

    return lines()


def quote_hint(raw: str, given_as: str) -> str:
    """`` (a string needs JSON quotes: GIVEN_AS'"raw"')`` when ``raw``, a value
    typed on the command line as ``GIVEN_AS'...'``, is not JSON syntax at all --
    ``approve``, not ``{"a": 1,}``: an operator who meant a string is told to
    quote it, and one whose object or list has a typo is not told to send it as
    a string instead. Else empty."""
    if not bare_word(raw):
        return ""
    return f" (a string needs JSON quotes: {given_as}'\"{raw}\"')"


def bare_word(raw: str) -> bool:
    """``raw`` is not JSON syntax at all (``approve``, not ``{"a": 1,}``): a string
    whose quotes were left out, as the CLI and the console's JSON editor hint."""
    head = raw.lstrip()[:1]
    return bool(head) and head not in '{["-' and not head.isdigit()


def decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (bad byte at offset {exc.start})") from None


class CheckedGroup(click.Group):
    """A click group that refuses arguments that are not UTF-8 before parsing
    them (so no command ever sees, stores or prints a lone surrogate)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            check_args(args)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(1)
        return super().parse_args(ctx, args)


__all__ = ["MAX_JSON_DEPTH", "InputError", "bounded_lines", "check_args", "check_text", "decode", "loads", "quote_hint", "read_bounded", "bare_word"]
