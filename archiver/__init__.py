"""archiver: archive a website into WARC files, an offline mirror and a manifest.

>>> from pathlib import Path
>>> from archiver import CrawlConfig, crawl
>>> config = CrawlConfig(seeds=("https://example.com/",), output=Path("snap"))
>>> config.scope
'host'

``asyncio.run(crawl(config))`` archives the site into snap/ (crawling/run.py
shows one run), ``build_mirror(Path("snap"))`` rebuilds its offline mirror and
``verify_snapshot(Path("snap"))`` reports whether it is complete and intact, and
``export_wacz(Path("snap"), Path("snap.wacz"))`` packages it for ReplayWeb.page.
"""

__version__ = "0.1.0"

import importlib as _importlib
import logging as _logging
import typing as _typing

# A library's logger stays silent unless its user configures logging: without a
# handler, Python would print its warnings to stderr (logging.lastResort).
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

if _typing.TYPE_CHECKING:
    from archiver.config import CrawlConfig
    from archiver.crawling.run import CrawlResult, crawl
    from archiver.errors import (
        ArchiverError,
        BadURL,
        ConfigError,
        ExportError,
        FetchError,
        SnapshotError,
        WriteError,
    )
    from archiver.export.wacz import export_wacz
    from archiver.mirror.build import build_mirror
    from archiver.report import Report
    from archiver.store.manifest import Manifest
    from archiver.store.rows import ManifestRow
    from archiver.store.snapshot import Snapshot
    from archiver.verify.verifier import verify_snapshot

# Where each public name lives. They are imported when first used (PEP 562), so
# a process that needs one module (a crawl's worker process, the command line
# printing its help) does not pay for importing them all.
_HOMES = {
    "ArchiverError": "errors",
    "BadURL": "errors",
    "ConfigError": "errors",
    "ExportError": "errors",
    "FetchError": "errors",
    "SnapshotError": "errors",
    "WriteError": "errors",
    "CrawlConfig": "config",
    "CrawlResult": "crawling.run",
    "crawl": "crawling.run",
    "Manifest": "store.manifest",
    "ManifestRow": "store.manifest",
    "Report": "report",
    "Snapshot": "store.snapshot",
    "build_mirror": "mirror.build",
    "export_wacz": "export.wacz",
    "verify_snapshot": "verify.verifier",
}


def __getattr__(name: str) -> _typing.Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "ArchiverError",
    "BadURL",
    "ConfigError",
    "CrawlConfig",
    "CrawlResult",
    "ExportError",
    "FetchError",
    "Manifest",
    "ManifestRow",
    "Report",
    "Snapshot",
    "SnapshotError",
    "WriteError",
    "__version__",
    "build_mirror",
    "crawl",
    "export_wacz",
    "verify_snapshot",
]
