"""``python -m numbaflow``: the health check; ``python -m numbaflow cache info|clear``.

    python -m numbaflow                 # versions, threads, cache, MPI, CUDA; trains a tiny program
    python -m numbaflow cache info      # where the kernel cache is, how many entries, how big
    python -m numbaflow cache clear     # remove every cached kernel
"""
import argparse
import sys


def main(argv=None):
    """Command-line entry point; returns the exit status (0: works / done)."""
    p = argparse.ArgumentParser(prog="python -m numbaflow",
                                description="numbaflow's health check and kernel-cache tools.")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("check", help="the health check (the default)")
    c = sub.add_parser("cache", help="the generated-kernel cache")
    c.add_argument("action", choices=["info", "clear"])
    args = p.parse_args(argv)

    if args.command == "cache":
        from .kernels.codegen import cache
        if args.action == "info":
            info = cache.info()
            print(f"kernel cache   {info['path']}")
            print(f"numba's code   {info['numba_path']}")
            print(f"size           {info['entries']} entries, {info['bytes'] / 2**20:.1f} MB "
                  f"(cap {info['limit_bytes'] / 2**20:.0f} MB: NUMBAFLOW_CACHE_SIZE_MB)")
        else:
            n, freed = cache.clear()
            print(f"removed {n} entries ({freed / 2**20:.1f} MB) from {cache.info()['path']}")
        return 0
    from ._health import run_check
    return 0 if run_check() else 1


if __name__ == "__main__":
    sys.exit(main())
