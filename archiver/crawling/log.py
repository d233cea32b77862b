"""The crawl's log file (logs/crawl.log): a line per fetch, written in batches."""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import time
from collections.abc import Iterator
from typing import Any

from archiver.store.snapshot import Snapshot

LOG_BATCH = 256


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


@contextlib.contextmanager
def crawl_log(snapshot: Snapshot) -> Iterator[None]:
    """Send the ``archiver`` logger's lines to the snapshot's crawl.log while the block runs."""
    snapshot.log_path.parent.mkdir(parents=True, exist_ok=True)
    file_handler = logging.FileHandler(snapshot.log_path, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    # A line per fetch: written in batches (a flush per line cost more than the fetch's
    # parsing), at once for a warning.
    handler = _BatchingHandler(LOG_BATCH, logging.WARNING, file_handler)
    logger = logging.getLogger("archiver")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()
        file_handler.close()
