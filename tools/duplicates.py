#!/usr/bin/env python3
"""The duplicate budget: how many pairs of files in numbaflow/ repeat a run of MIN_LINES or
more identical lines, capped at MAX_PAIRS (CI runs it from .ci/run; tests/api/test_size_budget.py
too). Only the project's own files and Python are needed, so it runs on a fresh machine.

    python tools/duplicates.py            # the count, the cap, the longest repeated runs
    python tools/duplicates.py --most 40  # more rows, for planning a clean-up

A pair is two files (or two places in one file) that share at least one run; the row names
the longest. Lines are compared after folding white space; blank lines, comments, lone
punctuation and imports are passed over, and a run found in more than TOO_COMMON places is
boilerplate, not counted. Exact lines only: code that repeats with other names is not seen
(the `duplicates` tool of the development machines also pairs same-shape code, and finds
more). Exit status 1 when the count is over the cap: merge the repeated code into one
place, or, if the repetition is right, raise MAX_PAIRS in a commit that says why.
"""
import argparse
import pathlib
import re
import sys
from collections import defaultdict

MIN_LINES = 6
TOO_COMMON = 8
# 62 on 2026-11-28 (the `duplicates` tool, which pairs same-shape code too, counted 124 pairs
# then); 45 after issue 31's API tables and the merged batch-norm GPU kernels; 32 after the
# shared docstring pieces (tensor.generator.shared_doc) and bases of issue 31 item 4; 28 after
# conv3d's GPU kernels became conv2d's and matmul / cross_entropy_grad / reduce / cumsum shared
# their CPU and GPU set-up; 27 with one block_reads; 24 with one
# split_nchw for the GPU kernels that index by position. Lower it as clean-ups land.
MAX_PAIRS = 24

_SKIP = re.compile(r"^([()\[\]{},:;]*|#.*|import .*|from \S+ import .*)$")


def code_lines(path):
    """[(line number, folded text)] of the lines that count."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = " ".join(line.split())
        if not _SKIP.match(text):
            out.append((number, text))
    return out


def pairs(root):
    """{(place a, place b): (shared lines, (file a, first, last), (file b, first, last))}:
    the longest shared run of each pair of files."""
    files = {p.relative_to(root).as_posix(): code_lines(p)
             for p in sorted((root / "numbaflow").rglob("*.py")) if "__pycache__" not in p.parts}
    seen = defaultdict(list)           # window of MIN_LINES texts -> [(file, index)]
    for name, lines in files.items():
        for i in range(len(lines) - MIN_LINES + 1):
            seen[tuple(t for _, t in lines[i:i + MIN_LINES])].append((name, i))
    found = {}
    for places in seen.values():
        if not 2 <= len(places) <= TOO_COMMON:
            continue
        for a in range(len(places)):
            for b in range(a + 1, len(places)):
                (fa, ia), (fb, ib) = places[a], places[b]
                if fa == fb and abs(ia - ib) < MIN_LINES:
                    continue            # one run overlapping itself
                # extend the run forward to its end
                la, lb = files[fa], files[fb]
                n = MIN_LINES
                while (ia + n < len(la) and ib + n < len(lb) and la[ia + n][1] == lb[ib + n][1]
                       and not (fa == fb and ia + n >= ib)):
                    n += 1
                key = (fa, fb)
                if key not in found or n > found[key][0]:
                    found[key] = (n, (fa, la[ia][0], la[ia + n - 1][0]),
                                  (fb, lb[ib][0], lb[ib + n - 1][0]))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--most", type=int, default=8, help="rows to print (default 8)")
    args = parser.parse_args(argv)
    root = pathlib.Path(__file__).resolve().parent.parent
    found = pairs(root)
    print(f"duplicates: {len(found)} pairs of places share runs of {MIN_LINES}+ identical lines "
          f"(cap {MAX_PAIRS})")
    rows = sorted(found.values(), key=lambda r: -r[0])
    for n, (fa, a0, a1), (fb, b0, b1) in rows[:args.most]:
        print(f"  {n:3d} lines  {fa}:{a0}-{a1} ~ {fb}:{b0}-{b1}")
    if len(rows) > args.most:
        print(f"  (+{len(rows) - args.most} more pairs: --most N)")
    if len(found) > MAX_PAIRS:
        print(f"duplicates: FAILED: {len(found)} pairs, over the cap of {MAX_PAIRS}: merge the "
              f"repeated code (the rows above), or raise MAX_PAIRS in tools/duplicates.py "
              f"saying why", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
