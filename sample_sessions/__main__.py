"""``python -m sample_sessions``: build the demo store (see :mod:`sample_sessions.demo`)."""

import sys

from .demo import main

sys.exit(main())
