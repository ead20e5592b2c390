"""``python -m tether``: the ``tether`` command line (its entry point, which makes a call on a
served run without the library when it can)."""

import sys

from _tether_attach import main

sys.exit(main())
