"""The layering of ../shared/docs/design.md, checked over every #include of
the source tree (CTest: include_layers). Dependencies point one way:

    apps -> actors -> messages -> base
    actors -> model -> text, chat, grammar -> gguf -> kernels -> base

- base/ (the error vocabulary: status, expected) includes only the standard
  library;
- kernels/ includes nothing of the project above it; gguf/ (the file
  format) only kernels/ and base/;
- model/, text/, chat/, grammar/, gguf/ and kernels/ know neither CAF nor ZeroMQ,
  nor messages/, actors/ or apps/;
- messages/ includes neither actors/ nor apps/; actors/ never apps/;
- actors never include each other: no actors/X file includes another
  folder's *_actor.hpp, except actors/runtime, which wires the graph;
- no file outside model/ includes model/, except apps/, actors/executor,
  actors/runtime and the tools (bench/, tests/), and the known places listed
  in MODEL_INCLUDES_TO_MOVE, each with what it still needs: the list may
  shrink, never grow (a new place fails here).

Run: python3 tests/docs/include_layers.py [SOURCE_DIR]; exit code 0 when
every rule holds, else each broken rule is printed with the file, line and
include."""

import os
import re
import sys

SOURCE_FOLDERS = ["apps", "actors", "messages", "base", "model", "text", "chat", "grammar", "gguf", "kernels", "bench"]
PROJECT_FOLDERS = set(SOURCE_FOLDERS) | {"tests", "clients"}
LOW = {"model", "text", "chat", "grammar", "gguf", "kernels"}

# Places outside model/, apps/, actors/executor, actors/runtime and the tools
# that still include model/ headers, each with the headers it may include:
# none now (issue 29 moved the GGUF reader to gguf/, and intake and the
# scheduler get the tokenizer and plain facts instead of the model). The list
# may only shrink: a new entry is a step back.
MODEL_INCLUDES_TO_MOVE = {}
MODEL_INCLUDERS = ("apps/", "actors/executor/", "actors/runtime/", "bench/")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(2)


def project_folder(inc):
    head = inc.split("/")[0]
    return head if "/" in inc and head in PROJECT_FOLDERS else None


def is_caf_or_zmq(inc):
    return inc.startswith("caf/") or inc in ("zmq.h", "zmq.hpp", "zmq_addon.hpp")


def model_include_allowed(rel, inc):
    if rel.startswith("model/") or rel.startswith(MODEL_INCLUDERS):
        return True
    for place, allowed in MODEL_INCLUDES_TO_MOVE.items():
        if (rel == place or rel.startswith(place + "/")) and inc in allowed:
            return True
    return False


def violations(root):
    out = []
    for top in SOURCE_FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".cpp", ".hpp", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                for n, inc in includes(path):
                    folder = project_folder(inc)
                    where = "%s:%d includes %s" % (rel, n, inc)
                    if top == "base" and (folder not in (None, "base") or is_caf_or_zmq(inc)):
                        out.append(where + ": base/ includes only the standard library")
                    if top == "kernels" and folder not in (None, "kernels", "base"):
                        out.append(where + ": kernels/ includes nothing of the project above it")
                    if top == "gguf" and folder not in (None, "gguf", "kernels", "base"):
                        out.append(where + ": gguf/ includes only kernels/ and base/")
                    if top in LOW and (is_caf_or_zmq(inc) or folder in ("messages", "actors", "apps")):
                        out.append(where + ": %s/ knows neither CAF, ZeroMQ, messages/, actors/ nor apps/" % top)
                    if top == "messages" and folder in ("actors", "apps"):
                        out.append(where + ": messages/ includes neither actors/ nor apps/")
                    if top == "actors" and folder == "apps":
                        out.append(where + ": actors/ never includes apps/")
                    if (top == "actors" and folder == "actors" and inc.endswith("_actor.hpp")
                            and inc.split("/")[1] != rel.split("/")[1] and not rel.startswith("actors/runtime/")):
                        out.append(where + ": actors never include each other (messages/ carries what they share)")
                    if folder == "model" and not model_include_allowed(rel, inc):
                        out.append(where + ": only model/, apps/, actors/executor, actors/runtime and the tools "
                                   "include model/ (tests/docs/include_layers.py lists the places still to move)")
    return out


def stale_exceptions(root):
    """Entries of MODEL_INCLUDES_TO_MOVE whose headers are no longer
    included there: the list must shrink with the code."""
    used = {place: set() for place in MODEL_INCLUDES_TO_MOVE}
    for place in MODEL_INCLUDES_TO_MOVE:
        path = os.path.join(root, place)
        paths = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith((".cpp", ".hpp", ".h"))]
        for p in paths:
            used[place].update(inc for _, inc in includes(p) if inc.startswith("model/"))
    return ["%s: %s no longer included there: take it out of MODEL_INCLUDES_TO_MOVE" % (place, sorted(allowed - used[place]))
            for place, allowed in MODEL_INCLUDES_TO_MOVE.items() if allowed - used[place]]


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    problems = violations(root) + stale_exceptions(root)
    for p in problems:
        print(p)
    n_files = sum(len(fs) for top in SOURCE_FOLDERS for _, _, fs in os.walk(os.path.join(root, top)))
    print("include_layers: %d files under %s, %d problems" % (n_files, ", ".join(SOURCE_FOLDERS), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
