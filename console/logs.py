"""``--log-format json`` for the long-running commands (``hitl worker``,
``hitl serve``, ``hitl notify``): one JSON object a line -- ``time`` (UTC, ISO
8601), ``level``, ``event``, the ids it is about, ``trace_id`` when a trace is
current, and ``message`` -- every string passed through the command's Redactor,
as every other output is (a secret the store holds is never logged).

``text`` (the default) keeps each command's own lines. Python ``logging``
records of the engine and the server go the same way: :func:`install` puts a
handler with :class:`JsonFormatter` on the ``engine`` and ``hitl`` loggers.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from engine import telemetry
from engine.redact import Redactor


def json_line(red: Redactor, event: str, message: str, level: str = "info", **ids: Any) -> str:
    """One log object, serialised (masked by ``red``)."""
    now = time.time()
    obj: dict[str, Any] = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z",
        "level": level,
        "event": event,
    }
    obj.update({k: v for k, v in ids.items() if v is not None})
    trace = telemetry.trace_id()
    if trace:
        obj["trace_id"] = trace
    obj["message"] = " ".join(str(message).split())
    return red.text(json.dumps(red.value(obj), default=str, ensure_ascii=False))


class JsonFormatter(logging.Formatter):
    """A ``logging`` record as :func:`json_line` (event: the logger's name)."""

    def __init__(self, red: Redactor) -> None:
        super().__init__()
        self.red = red

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message = f"{message}: {type(exc).__name__}: {exc}"
        ids = getattr(record, "ids", None) or {}
        return json_line(self.red, getattr(record, "event", record.name), message, record.levelname.lower(), **ids)


def install(red: Redactor, fmt: str, level: int = logging.INFO) -> None:
    """Route the engine's and the server's log records to stderr in ``fmt``."""
    if fmt != "json":
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter(red))
    for name in ("engine", "hitl"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
