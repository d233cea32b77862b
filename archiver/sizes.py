"""Byte counts as people read them, one rule for the crawl report, the progress line and index.html.

>>> human_bytes(0), human_bytes(1536), human_bytes(55040836), human_bytes(3 * 1024**4)
('0 B', '1.5 KiB', '52.5 MiB', '3.0 TiB')
"""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(count: float | None) -> str:
    """``count`` bytes in binary units (1 KiB = 1,024 bytes), one decimal past bytes; '' for None.

    Binary units because the sizes they are set beside (du -h, ls -lh, file managers on
    Linux) are counted in them; the unit says so, where 'KB' would mean 1,000.
    """
    if count is None:
        return ""
    if abs(count) < 1024:
        return f"{count:.0f} B"
    value = float(count)
    for unit in _UNITS[1:-1]:
        value /= 1024
        if round(abs(value), 1) < 1024:  # 1048575 bytes is 1.0 MiB, not 1024.0 KiB
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} {_UNITS[-1]}"
