"""``python -m numbaflow``: the health check; ``python -m numbaflow cache info|clear``;
``python -m numbaflow warmup``.

    python -m numbaflow                 # versions, threads, cache, MPI, CUDA; trains a tiny program
    python -m numbaflow cache info      # where the kernel cache is, how many entries, how big
    python -m numbaflow cache clear     # remove every cached kernel
    python -m numbaflow warmup          # compile the common ops' kernels ahead of time
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
    w = sub.add_parser("warmup", help="compile the kernels of the common ops ahead of time, "
                                      "in parallel processes")
    w.add_argument("tasks", nargs="*", metavar="TASK",
                   help="which programs to run (default all; --list shows them)")
    w.add_argument("--processes", type=int, default=None,
                   help="processes at once (default: one per task, at most one per core)")
    w.add_argument("--list", action="store_true", help="list the tasks and what they compile")
    args = p.parse_args(argv)

    if args.command == "warmup":
        return _warmup(args, p)

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


def _warmup(args, parser):
    import time

    from . import _warmup
    if args.list:
        for name, what in _warmup.TASKS.items():
            print(f"{name:<12} {what}")
        return 0
    unknown = [t for t in args.tasks if t not in _warmup.TASKS]
    if unknown:
        parser.error(f"warmup: unknown task(s) {', '.join(unknown)}; "
                     f"the tasks are {', '.join(_warmup.TASKS)}")
    if args.processes is not None and args.processes < 1:
        parser.error(f"warmup: --processes must be >= 1, got {args.processes}")
    from .config import kernel_cache_dir
    print(f"compiling the common ops' kernels into {kernel_cache_dir()} (and numba's cache) ...",
          flush=True)
    t0 = time.perf_counter()
    lost = []
    _warmup.warmup(args.tasks or None, args.processes,
                   report=lambda line: print(line, flush=True), lost=lost)
    if lost:
        print(f"done in {time.perf_counter() - t0:.1f} s, but the compiled kernels could not "
              f"be kept in {', '.join(map(repr, lost))} (full or unwritable disk): first runs "
              f"will compile again. Free space there, or set NUMBAFLOW_CACHE_DIR and "
              f"NUMBA_CACHE_DIR to a writable directory, and run the warm-up again",
              file=sys.stderr)
        return 1
    print(f"done in {time.perf_counter() - t0:.1f} s: first runs of these ops now load "
          "compiled kernels from the cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
