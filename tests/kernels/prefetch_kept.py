"""The kernels' software prefetches are in the machine code.

GCC deletes a call to a function made only of __builtin_prefetch (it deems
the function const), so a prefetch written through a helper can compile
to nothing while every result stays right: the q4_0 kernels' record
prefetch did, unnoticed, until this test (kernels/x86/prefetch_ahead.hpp).
Results cannot show it; the object code can. For each kernel that streams
its weights with a software prefetch, some function of the object that
the kernel's pattern matches (the kernel, or the caller GCC inlined it
into) holds a prefetch instruction, and each pattern must match a
function (a renamed kernel updates this list, it does not pass
unchecked).

Run: python3 tests/kernels/prefetch_kept.py path/to/libcortex_kernels.a
"""

import re
import shutil
import subprocess
import sys

# (object file, function name pattern): the kernels whose weight stream
# is prefetched ahead (kernels/x86/prefetch_ahead.hpp's callers). A
# pattern matches the demangled name from the function's own name on; it
# names the kernel and, where GCC inlines it, the caller it lands in. At
# least one function a pattern matches must hold a prefetch.
KERNELS = [("matmul_packed_avx512.cpp.o", r"decode_tile<.*::fmt_%s, 4>\(" % f)
           for f in ("q4_0", "q5_0", "iq4_nl", "mxfp4")] + \
          [("matmul_packed_avx512.cpp.o", r"q4_panel_all_tokens<.*::fmt_%s, 2>\(" % f)
           for f in ("q4_0", "iq4_nl", "mxfp4")] + [
    ("matmul_packed_k_avx512.cpp.o", r"k4_panel_all_tokens<false>\("),
    ("matmul_packed_k_avx512.cpp.o", r"k4_panel_all_tokens<true>\("),
    ("matmul_packed_k_avx512.cpp.o", r"q6_k_panel_all_tokens\("),
    ("matmul_packed_k_avx512.cpp.o", r"tile_k4<false, 2, 1>\("),
    ("matmul_packed_k_avx512.cpp.o", r"tile_k4<true, 2, 1>\("),
    ("matmul_packed_k_avx512.cpp.o", r"tile_q6_k<2, 1>\("),
    ("matmul_packed_avx2.cpp.o", r"tile<.*::fmt_q4_0, 4, 1>\("),
    ("matmul_packed_avx2.cpp.o", r"tile<.*::fmt_q8_0, 4, 1>\("),
    ("matmul_packed_k_avx2.cpp.o", r"(tile_q4_k<4, 1>|for_each_half_panel_tile<.*k_tiles<false> >)\("),
    ("matmul_packed_k_avx2.cpp.o", r"(tile_q6_k<4, 1>|for_each_half_panel_tile<.*k_tiles<true> >)\("),
]
OWN_NAME = re.compile(r"^(void )?cortex::kernels::\(anonymous namespace\)::(.*)$")
PREFETCH = re.compile(r"\bprefetch(t0|t1|t2|nta|w)\b")


def functions(archive):
    """{(object, demangled function): number of prefetch instructions}."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", archive], check=True,
                         capture_output=True, text=True).stdout
    found, obj, fn = {}, None, None
    for line in out.splitlines():
        m = re.match(r"^(\S+\.o):\s+file format", line)
        if m:
            obj, fn = m.group(1), None
            continue
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            fn = m.group(1)
            found.setdefault((obj, fn), 0)
            continue
        if fn is not None and PREFETCH.search(line):
            found[(obj, fn)] += 1
    return found


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if shutil.which("objdump") is None:
        print("prefetch_kept: objdump not found (Debian package binutils)")
        return 1
    found = functions(sys.argv[1])
    problems = []
    for obj, pattern in KERNELS:
        matched = [(fn, n) for (o, fn), n in found.items()
                   if o == obj and OWN_NAME.match(fn) and re.match(pattern, OWN_NAME.match(fn).group(2))]
        if not matched:
            problems.append("%s: no function matches %r (renamed? update KERNELS)" % (obj, pattern))
            continue
        for fn, n in matched:
            print("%3d prefetches  %s  %s" % (n, obj, fn))
        if all(n == 0 for _, n in matched):
            problems.append("%s: no function matching %r has a prefetch instruction (dropped by the compiler?)"
                            % (obj, pattern))
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
