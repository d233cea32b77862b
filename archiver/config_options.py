"""How a CrawlConfig field is given on the command line: its help, parser kind and --resume rule.

The field's default is the option's: the command line reads every crawl option
from these (see cli/options.py), so a default is written once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

APPLY = "apply"
"""On --resume, the option given replaces the saved value from then on."""
ADD = "add"
"""On --resume, the values given are added to the saved ones."""
REFUSE = "refuse"
"""On --resume, the option is refused: it would change what earlier runs decided."""


@dataclass(frozen=True)
class Option:
    """How a CrawlConfig field is given on the command line (its default is the field's)."""

    help: str
    kind: str = "value"
    """value, size, flag, no-flag (a flag that sets the field False), choice, header, cookie,
    resolve, regex, host or statuses: the command line picks the parser and action from it."""
    flag: str | None = None
    """The option's name when it is not the field's (--ignore-robots for obey_robots)."""
    metavar: str | None = None
    default_text: str | None = None
    """What the help says of the default, when the value itself would not say it well."""
    on_resume: str = APPLY
    """What --resume does with the option: APPLY, ADD or REFUSE (see those constants)."""
    why_refused: str = ""
    choices: tuple[str, ...] = ()
    """The values a ``choice`` option takes."""


def option(help: str, **facts: Any) -> Any:
    """A dataclass field's metadata making it a command-line option (see Option)."""
    return {"option": Option(help, **facts)}


def human_size(size: int) -> str:
    """1073741824 -> '1G'; sizes not a whole number of a unit stay in bytes.

    >>> human_size(100 * 1024**2), human_size(1500)
    ('100M', '1500')
    """
    for unit, factor in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if size and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def flag_of(f: dataclasses.Field[Any]) -> str:
    """The command-line option of a CrawlConfig field: --max-pages for max_pages."""
    option: Option = f.metadata["option"]
    return option.flag or "--" + f.name.replace("_", "-")
