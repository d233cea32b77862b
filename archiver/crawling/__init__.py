"""The crawl: frontier, fetchers, politeness, capture workers and the writer, wired by run."""
