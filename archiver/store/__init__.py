"""The snapshot on disk that every stage shares: its folders, crawl.json and the manifest."""
