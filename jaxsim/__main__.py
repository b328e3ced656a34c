"""``python -m jaxsim`` / ``jaxsim``: see ``jaxsim.cli`` (bare: the cube demo)."""

import sys

from jaxsim.cli import main

if __name__ == "__main__":
    sys.exit(main())
