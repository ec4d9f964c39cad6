"""``python -m dpsql``: the same command line as the ``dpsql`` script."""
import sys

from .cli import main

sys.exit(main())
