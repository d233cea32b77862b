"""The offline copy: paths planned, HTML, CSS and SVG rewritten, files written, index.html, serve."""
