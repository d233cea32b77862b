"""archiver: archive a website into WARC files, an offline mirror and a manifest.

>>> from archiver import CrawlConfig, crawl
>>> config = CrawlConfig(seeds=("https://example.com/",), output=Path("snap"))  # doctest: +SKIP
>>> asyncio.run(crawl(config))  # doctest: +SKIP
"""

__version__ = "0.1.0"

from .config import CrawlConfig  # noqa: E402
from .errors import (  # noqa: E402
    ArchiverError,
    BadURL,
    ConfigError,
    FetchError,
    RedirectError,
    SnapshotError,
    WriteError,
)
from .manifest import Manifest, ManifestRow  # noqa: E402
from .mirror import build_mirror  # noqa: E402
from .problems import Report  # noqa: E402
from .run import CrawlResult, crawl  # noqa: E402
from .snapshot import Snapshot  # noqa: E402
from .verify import verify_snapshot  # noqa: E402

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
