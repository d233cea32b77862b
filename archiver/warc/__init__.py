"""The record of truth: WARC records written, WARC files rolled over, read back, indexed."""
