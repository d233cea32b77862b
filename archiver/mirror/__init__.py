"""The offline copy: paths planned, HTML and CSS rewritten, files written, index.html, serve."""
