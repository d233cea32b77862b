"""``python -m archiver`` runs the command line."""

import sys

from archiver.cli import main

sys.exit(main())
