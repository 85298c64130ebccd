"""Entry point: `python -m gateway serve ...`."""

import sys

from gateway.cli import main

if __name__ == "__main__":
    sys.exit(main())
