"""``python -m tether``: the ``tether`` command line."""

import sys

from tether.cli import main

sys.exit(main())
