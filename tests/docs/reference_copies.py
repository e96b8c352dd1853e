#!/usr/bin/env python3
"""The repository's copies of reference files (tests/data/reference/, see
its README) must equal their originals in ../shared/golden byte for byte.
Exits 77 (CTest: skipped) when the shared folder is absent."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("CORTEX_SHARED_DIR") or os.path.join(REPO, "..", "shared")
COPIES = os.path.join(REPO, "tests", "data", "reference")


def main():
    if not os.path.exists(os.path.join(SHARED, "golden", "README.md")):
        print("reference_copies: no reference data at %s/golden: nothing to compare" % SHARED)
        return 77
    checked, bad = 0, []
    for folder, _, names in os.walk(COPIES):
        for name in sorted(names):
            if not name.endswith(".json"):
                continue
            copy = os.path.join(folder, name)
            rel = os.path.relpath(copy, COPIES)
            original = os.path.join(SHARED, "golden", rel)
            with open(copy, "rb") as a:
                mine = a.read()
            try:
                with open(original, "rb") as b:
                    theirs = b.read()
            except OSError as e:
                bad.append("%s: no original (%s)" % (rel, e))
                continue
            checked += 1
            if mine != theirs:
                bad.append("%s differs from ../shared/golden/%s" % (rel, rel))
    for b in bad:
        print("reference_copies: " + b)
    print("reference_copies: %d copies checked, %d bad" % (checked, len(bad)))
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
