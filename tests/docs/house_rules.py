"""House rules of issue 29 that a reader checks with grep, checked here so
they stay true (CTest: house_rules):

- actor files hold message handling only: no function of an
  actors/**/*_actor.cpp file is longer than MAX_ACTOR_FUNCTION_LINES
  ("about 40"; the logic lives in CAF-free classes with their own tests);
- one error convention: status::is_ok(); no `errc::none` sentinel (errc
  names no success code);
- one id type: no `uint64_t rid` (request_id, cluster::routed_request_id);
- tests/ mirrors the tree: every folder of tests/actors/ is a folder of
  actors/ (the test of actors/X/unit.cpp is tests/actors/X/unit_test.cpp).

A function here is a definition that starts at column 0 and ends at the
next `}` at column 0 (the project's style: clang-format, bodies indented).

Run: python3 tests/docs/house_rules.py [SOURCE_DIR]; exit code 0 when every
rule holds, else each broken rule is printed with its file and line."""

import os
import re
import sys

MAX_ACTOR_FUNCTION_LINES = 45
SOURCE_FOLDERS = ["apps", "actors", "messages", "base", "model", "text", "chat", "grammar", "kernels", "bench", "tests"]
FORBIDDEN = [
    (re.compile(r"\berrc::none\b"), "errc::none: success is status::ok() / is_ok(), not a code"),
    (re.compile(r"\buint64_t\s+rid\b"), "uint64_t rid: ids are request_id (or cluster::routed_request_id)"),
]
SKIP_DIRS = {"build", "corpus", "data"}


def sources(root):
    for folder in SOURCE_FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build")]
            for name in filenames:
                if name.endswith((".cpp", ".hpp", ".h", ".cc")):
                    yield os.path.join(dirpath, name)


def long_functions(lines):
    """(start line, length, first line) of each column-0 definition over the limit."""
    start = None
    for i, line in enumerate(lines):
        if start is None:
            if re.match(r"[A-Za-z_]", line) and "(" in line and not line.rstrip().endswith(";") and \
                    not line.startswith(("namespace", "using", "struct", "class", "template", "static_assert", "enum")):
                start = i
        elif line.startswith("}"):
            n = i - start + 1
            if n > MAX_ACTOR_FUNCTION_LINES:
                yield start + 1, n, lines[start].strip()
            start = None
        elif i == start and line.rstrip().endswith(";"):
            start = None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    problems = []
    this = os.path.abspath(__file__)
    for path in sources(root):
        if os.path.abspath(path) == this:
            continue
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        for no, line in enumerate(lines, 1):
            for pattern, why in FORBIDDEN:
                if pattern.search(line):
                    problems.append(f"{rel}:{no}: {why}")
        if rel.startswith("actors" + os.sep) and rel.endswith("_actor.cpp"):
            for start, n, head in long_functions(lines):
                problems.append(f"{rel}:{start}: a function of {n} lines in an actor file (at most "
                                f"{MAX_ACTOR_FUNCTION_LINES}): move its logic into a tested plain class: {head[:60]}")
    tests_actors = os.path.join(root, "tests", "actors")
    for name in sorted(os.listdir(tests_actors)) if os.path.isdir(tests_actors) else []:
        if os.path.isdir(os.path.join(tests_actors, name)) and not os.path.isdir(os.path.join(root, "actors", name)):
            problems.append(f"tests/actors/{name}/: no actors/{name}/ to mirror (tests/ mirrors the source tree)")
    for p in problems:
        print(p)
    if problems:
        print(f"house_rules: {len(problems)} problem(s)")
        return 1
    print("house_rules: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
