#!/usr/bin/env python3
"""The size budget: every product file (numbaflow/**/*.py) stays within LIMIT lines,
except the files listed below, each with the reason it is allowed to be longer (and
the size it may not grow past). Prints the product total so that a reviewer sees it
grow. Exit status 1 when a file is over its budget.

    python .ci/size_budget.py          (CI runs it; tests/test_size_budget.py too)
"""
import pathlib
import sys

LIMIT = 500

# path: (the most lines it may have, why it is over LIMIT); none today
EXCEPTIONS = {}


def product_files(root):
    return sorted(p for p in (root / "numbaflow").rglob("*.py") if "__pycache__" not in p.parts)


def check(root):
    """(total product lines, [problems])."""
    total, problems = 0, []
    for path in product_files(root):
        rel = path.relative_to(root).as_posix()
        n = sum(1 for _ in path.open(encoding="utf-8"))
        total += n
        limit, _ = EXCEPTIONS.get(rel, (LIMIT, ""))
        if n > limit:
            problems.append(f"{rel}: {n} lines, over its budget of {limit}"
                            + ("" if rel in EXCEPTIONS else
                               f" (split it by what it holds, or list it in EXCEPTIONS in "
                               f".ci/size_budget.py with a reason)"))
    for rel in EXCEPTIONS:
        if not (root / rel).exists():
            problems.append(f"{rel}: listed in EXCEPTIONS but gone; remove its entry")
    return total, problems


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    total, problems = check(root)
    files = len(product_files(root))
    over = sum(1 for p in product_files(root)
               if sum(1 for _ in p.open(encoding="utf-8")) > LIMIT)
    print(f"size budget: {total} product lines in {files} files; {over} over {LIMIT} lines "
          f"(listed: {len(EXCEPTIONS)})")
    for p in problems:
        print(f"size budget: FAILED: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
