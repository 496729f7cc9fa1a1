"""Build numbaflow's HTML API reference with pdoc.

    python docs/build_api.py                  # writes docs/api/index.html
    python docs/build_api.py -o /tmp/api      # elsewhere
    python docs/build_api.py --strict         # exit 1 on any warning (what the tests run)

pdoc reads the docstrings (Google style: Args / Returns / Example) and type hints of the
public modules; implementation packages (executor, graph, kernels, bench, ...) are left
out: their public names are documented where the public modules re-export them.
"""
import argparse
import os
import sys
import warnings
from pathlib import Path

# The public modules (each with its submodules); everything else under numbaflow is left out.
PUBLIC = ["static", "nn", "optimizer", "fluid", "distributed", "metric", "utils", "io", "reader",
          "framework", "tensor", "onnx", "incubate", "profiler", "hapi", "vision"]
PRIVATE_SUBMODULES = [r"numbaflow\.static\.(io|ema)", r"numbaflow\.nn\.(clip|functional_\w+)",
                      r"numbaflow\.distributed\.\w+"]


def specs():
    """pdoc's module specification: the package, minus everything not public."""
    keep = "|".join(PUBLIC)
    return (["numbaflow", rf"!numbaflow\.(?!({keep})(\.|$))"]
            + [f"!{p}$" for p in PRIVATE_SUBMODULES])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(Path(__file__).parent / "api"),
                        help="output directory (default: docs/api next to this script)")
    parser.add_argument("--strict", action="store_true", help="exit 1 on any warning")
    args = parser.parse_args(argv)

    import pdoc
    import pdoc.render

    import numbaflow
    pdoc.render.configure(docformat="google", footer_text=f"numbaflow {numbaflow.__version__}",
                          show_source=True)
    output = Path(args.output).resolve()
    # pdoc warns when a directory called numbaflow in the working directory is not the
    # package imported (a source tree beside an installed copy): work from the parent of
    # the package it documents
    os.chdir(Path(numbaflow.__file__).resolve().parent.parent)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*specs(), output_directory=output)
    for w in caught:
        print(f"warning: {w.category.__name__}: {w.message}", file=sys.stderr)
    print(f"API reference written to {output / 'index.html'}"
          + (f" ({len(caught)} warnings)" if caught else ""))
    return 1 if args.strict and caught else 0


if __name__ == "__main__":
    sys.exit(main())
