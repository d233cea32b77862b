"""``python -m archiver`` and the ``archiver`` command: the command line, its imports included."""

import signal
import sys


def run() -> int:
    """archiver.cli.main(), imported here: Ctrl-C while the command line loads (a third of a
    second) says so in one line, as it does once the command runs, rather than a traceback."""
    try:
        from archiver.cli import main

        return main()
    except KeyboardInterrupt:  # before main() could take it (it takes it once the command runs)
        print("archiver: interrupted (Ctrl-C)", file=sys.stderr)
        return 128 + signal.SIGINT  # cli/exits.py's rule; importing it loads the command line


if __name__ == "__main__":
    sys.exit(run())
