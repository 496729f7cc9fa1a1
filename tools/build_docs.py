#!/usr/bin/env python3
"""Build numbaflow's documentation site: the README, the guides in docs/, BENCHMARKS,
CONTRIBUTING, CHANGELOG and the API reference (docs/api/, from the docstrings), with search.

    pip install ".[docs]" && python tools/build_docs.py     # writes build/site/index.html
    python tools/build_docs.py -o /tmp/site                 # elsewhere
    python tools/build_docs.py --strict                     # exit 1 on a warning (the tests)

Sphinx with MyST (the pages stay Markdown that a forge shows as it is) and the Furo theme;
docs/conf.py is the configuration and docs/index.md the table of contents. Why Sphinx:
docs/api-reference.md.
"""
import argparse
import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the site's front door: the table of contents lives at docs/index.html (its source is
# docs/index.md, beside the pages it lists)
REDIRECT = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>numbaflow documentation</title>
<meta http-equiv="refresh" content="0; url=docs/index.html"></head>
<body><p><a href="docs/index.html">numbaflow documentation</a></p></body></html>
"""


# Warnings --strict lets pass, each with its reason; any other warning fails the build.
ALLOWED = [
    # a class re-exported by several public modules (static.Executor is fluid.Executor) is
    # documented on each module's page, so a type name in a signature has several targets
    ("more than one target found for cross-reference", "re-exported names"),
    ("duplicate object description of", "re-exported names"),
    # the docstrings' own layout (tests/api/test_api_docs.py checks their content and
    # tests/docs/test_doctests.py runs their examples); listed for whoever tidies them
    ("docstring of", "docstring layout"),
]


def build(output, strict=False, quiet=True):
    """Build the site into `output`; returns 0, or 1 on a build error or (with `strict`) a
    warning that ALLOWED does not list: a broken link or anchor, a page in no table of
    contents, a missing image."""
    from sphinx.cmd.build import build_main
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    log = output.parent / (output.name + "-warnings.txt")
    args = ["-b", "html", "-c", str(ROOT / "docs"), "-w", str(log)]
    args += ["-q"] if quiet else []
    # the warnings go to `log` (read below); with `quiet`, not to the terminal as well
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured) if quiet else contextlib.nullcontext():
        status = build_main(args + [str(ROOT), str(output)])
    if status:
        print(captured.getvalue()[-5000:], file=sys.stderr)
    warnings = [w for w in log.read_text(encoding="utf-8").splitlines()
                if "WARNING" in w or "ERROR" in w]
    allowed = {why: 0 for _, why in ALLOWED}
    failing = []
    for w in warnings:
        why = next((why for text, why in ALLOWED if text in w), None)
        if why is None:
            failing.append(w)
        else:
            allowed[why] += 1
    if any(allowed.values()):
        print("allowed warnings: " + ", ".join(f"{n} ({why})" for why, n in allowed.items() if n)
              + f"; all in {log}")
    for w in failing:
        print(w, file=sys.stderr)
    if status == 0:
        (output / "index.html").write_text(REDIRECT, encoding="utf-8")
    return 1 if status or (strict and failing) else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(ROOT / "build" / "site"),
                        help="output directory (default: build/site)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 on any warning not in ALLOWED")
    args = parser.parse_args(argv)
    status = build(args.output, strict=args.strict)
    if status == 0:
        print(f"documentation site written to {Path(args.output).resolve() / 'index.html'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
