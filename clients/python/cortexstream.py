#!/usr/bin/python3
"""Runs the cortexstream command line from a checkout:

    /usr/bin/python3 clients/python/cortexstream.py --endpoint tcp://127.0.0.1:5555 "Once upon a time"

The client itself is the package beside this file (cortexstream/). Python
prefers a package to a module of the same name in one directory, so
``import cortexstream`` with clients/python on sys.path (this script's own
directory when it runs) loads the package, never this file.
"""

import sys

from cortexstream.cli import main

if __name__ == "__main__":
    sys.exit(main())
