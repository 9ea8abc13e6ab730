"""`python -m uxlab` is the `uxlab` command."""

import sys

from uxlab.cli import main

sys.exit(main())
