"""Jinja2 templates of the snapshot index, shipped inside the package."""
