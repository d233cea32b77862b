"""archiver: archive a website into WARC files, an offline mirror and a manifest."""

__version__ = "0.1.0"
