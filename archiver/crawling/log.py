"""The crawl's log file (logs/crawl.log): a line per fetch, written in batches, as text or
as one JSON object a line (--log-format json)."""

from __future__ import annotations

import contextlib
import json
import logging
import logging.handlers
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from archiver.store.snapshot import Snapshot

LOG_BATCH = 256
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
"""A log record's own attributes: the others are the facts a log call gave with ``extra``."""


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object: time, level, message, and the facts the call gave
    (url, status, bytes...), for log tools to read without parsing the message."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "message": record.getMessage(),
        }
        line.update((key, value) for key, value in vars(record).items() if key not in _STANDARD)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


_fetches = logging.getLogger("archiver.crawl")


def fetched(url: str, status: int, content_type: str, length: int, error: str | None) -> None:
    """Log an answer: ``status content-type bytes URL``."""
    _fetches.info(
        "%d %s %d %s",
        status,
        content_type or "-",
        length,
        url,
        extra={
            "event": "fetched",
            "url": url,
            "status": status,
            "content_type": content_type or None,
            "bytes": length,
            "error": error,
        },
    )


def retrying(url: str, tries: int, error: str | None, retry_in: float) -> None:
    """Log a failed try of ``url`` that will be tried again in ``retry_in`` seconds."""
    _fetches.info(
        "try %d of %s failed (%s); next in %.1f s",
        tries,
        url,
        error,
        retry_in,
        extra={"event": "retry", "url": url, "tries": tries, "error": error, "retry_in": round(retry_in, 3)},
    )


def failed(url: str, tries: int, error: str | None) -> None:
    """Log a fetch that got no answer after its last try."""
    _fetches.info(
        "failed %s after %d tries: %s",
        url,
        tries,
        error,
        extra={"event": "failed", "url": url, "tries": tries, "error": error},
    )


class _BatchingHandler(logging.handlers.MemoryHandler):
    """Buffers log lines, writing them when LOG_BATCH are held, on a warning, or a second on."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._flushed_at = 0.0

    def shouldFlush(self, record: logging.LogRecord) -> bool:  # noqa: N802 - logging's name
        return super().shouldFlush(record) or record.created - self._flushed_at >= 1.0

    def flush(self) -> None:
        super().flush()
        self._flushed_at = time.time()


class _QuietFileHandler(logging.FileHandler):
    """A log file that, when it cannot be written (a full disk), stays silent: logging would print
    a traceback on stderr for each line, and the crawl's own write errors say what happened."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


@contextlib.contextmanager
def crawl_log(snapshot: Snapshot, log_format: str = "text") -> Iterator[None]:
    """Send the ``archiver`` logger's lines to the snapshot's crawl.log while the block runs,
    as text or (``log_format`` "json") as one JSON object a line."""
    snapshot.log_path.parent.mkdir(parents=True, exist_ok=True)
    file_handler = _QuietFileHandler(snapshot.log_path, encoding="utf-8")
    text = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    file_handler.setFormatter(JsonFormatter() if log_format == "json" else text)
    # A line per fetch: written in batches (a flush per line cost more than the fetch's
    # parsing), at once for a warning.
    handler = _BatchingHandler(LOG_BATCH, logging.WARNING, file_handler)
    logger = logging.getLogger("archiver")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    # aiohttp says on its own loggers what it refused of an answer (a cookie whose name is no
    # token): into the crawl's log with the rest, not bare on stderr (logging's last resort).
    library = logging.handlers.MemoryHandler(1, logging.WARNING, file_handler)
    library.setLevel(logging.WARNING)
    aiohttp_logger = logging.getLogger("aiohttp")
    aiohttp_logger.addHandler(library)
    try:
        yield
    finally:
        aiohttp_logger.removeHandler(library)
        library.close()
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()
        file_handler.close()
