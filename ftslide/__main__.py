"""python -m ftslide: the ftslide command."""

import sys

from .cli import main

sys.exit(main())
