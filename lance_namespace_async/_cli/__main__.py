"""``python -m lance_namespace_async._cli``: the ``lance-ns`` script without the script."""

import sys

from . import main

sys.exit(main())
