"""pytorchlite's coverage of PyTorch's public API, per namespace (a table, not a timing):
the same report as `python -m pytorchlite.coverage`, whose arguments it takes."""
import sys

from pytorchlite.coverage import main

if __name__ == "__main__":
    sys.exit(main())
