"""Exports: a snapshot as a WACZ file, the package ReplayWeb.page and py-wacz read."""
