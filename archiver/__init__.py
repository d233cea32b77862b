"""archiver: archive a website into WARC files, an offline mirror and a manifest.

>>> from archiver import CrawlConfig, crawl
>>> config = CrawlConfig(seeds=("https://example.com/",), output=Path("snap"))  # doctest: +SKIP
>>> asyncio.run(crawl(config))  # doctest: +SKIP
"""

__version__ = "0.1.0"

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from .config import CrawlConfig
    from .errors import (
        ArchiverError,
        BadURL,
        ConfigError,
        FetchError,
        RedirectError,
        SnapshotError,
        WriteError,
    )
    from .manifest import Manifest, ManifestRow
    from .mirror import build_mirror
    from .problems import Report
    from .run import CrawlResult, crawl
    from .snapshot import Snapshot
    from .verify import verify_snapshot

# Where each public name lives. They are imported when first used (PEP 562), so
# a process that needs one module (a crawl's worker process, the command line
# printing its help) does not pay for importing them all.
_HOMES = {
    "ArchiverError": "errors", "BadURL": "errors", "ConfigError": "errors", "FetchError": "errors",
    "RedirectError": "errors", "SnapshotError": "errors", "WriteError": "errors",
    "CrawlConfig": "config", "CrawlResult": "run", "crawl": "run", "Manifest": "manifest",
    "ManifestRow": "manifest", "Report": "problems", "Snapshot": "snapshot",
    "build_mirror": "mirror", "verify_snapshot": "verify",
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
    "FetchError",
    "Manifest",
    "ManifestRow",
    "RedirectError",
    "Report",
    "Snapshot",
    "SnapshotError",
    "WriteError",
    "__version__",
    "build_mirror",
    "crawl",
    "verify_snapshot",
]
