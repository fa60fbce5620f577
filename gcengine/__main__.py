"""Run the command line: ``python -m gcengine``."""

import sys

from gcengine.cli import main

sys.exit(main())
