"""What `numbaflow-bench` prints and saves: the machine's facts, the table (text that fits
120 columns, or markdown), the JSON record, the comparison with an older record, and the
generated section of BENCHMARKS.md.

    numbaflow-bench --json run.json                       # measure, print, save
    numbaflow-bench --load run.json --write-md BENCHMARKS.md   # regenerate the tables
    numbaflow-bench --load new.json --compare old.json    # regressions (exit 1)
"""
import json
import os
import platform
import textwrap

from .harness import Row, Timing, fmt_time

WIDTH = 120
NOISY_SPREAD = 0.10     # IQR / median above this: the row's samples disagree
BUSY_LOAD = 0.5         # 1-minute load average per core above this: a loaded machine
BEGIN, END = "<!-- numbaflow-bench:begin -->", "<!-- numbaflow-bench:end -->"
SCHEMA = 1


# ------------------------------------------------------------------ machine facts
def blas_facts():
    """[{library, version, kernel (OpenBLAS's core type), threads}] of the BLAS libraries
    loaded in this process (threadpoolctl), or [] when threadpoolctl is missing."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{"library": os.path.basename(i.get("filepath", "")), "api": i.get("internal_api"),
             "version": i.get("version"), "kernel": i.get("architecture"),
             "threads": i.get("num_threads")}
            for i in threadpool_info() if i.get("user_api") == "blas"]


def machine_facts():
    """The facts a reader needs to trust the numbers: cores, load, BLAS and its kernel,
    threads, the versions, and the environment knobs that change BLAS speed."""
    import numba
    import numpy
    import scipy.linalg  # noqa: F401 - loads scipy's OpenBLAS (numba's np.dot) for the facts

    from ..executor import threads
    from ..executor.scheduler import threading_layer
    try:
        from importlib.metadata import version
        nf = version("numbaflow")
    except Exception:  # a source tree that is not installed
        nf = "source tree"
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                      "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                      "NUMBA_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT")
           if k in os.environ}
    return {"cpus": os.cpu_count(), "usable_cpus": threads.usable_cores(),
            "thread_budget": threads.budget(), "load": list(os.getloadavg()),
            "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "threading_layer": threading_layer(), "blas": blas_facts(), "env": env,
            "versions": {"numbaflow": nf, "numpy": numpy.__version__,
                         "numba": numba.__version__, "python": platform.python_version()},
            "processor": platform.processor() or platform.machine()}


def header(m, quick=False):
    """The lines printed above the table."""
    blas = [f"BLAS: {b['api']} {b['version']}, kernel {b['kernel']}, {b['threads']} threads "
            f"({b['library']})" for b in m["blas"]] or ["BLAS: unknown (install threadpoolctl)"]
    v = m["versions"]
    lines = [f"numbaflow-bench: numbaflow {v['numbaflow']}, numpy {v['numpy']}, numba "
             f"{v['numba']} ({m['threading_layer']} layer, {m['numba_threads']} threads), "
             f"python {v['python']}{'; quick' if quick else ''}",
             f"cpus {m['cpus']} (usable {m['usable_cpus']}, thread budget {m['thread_budget']}); "
             f"load {' '.join(f'{x:.2f}' for x in m['load'])}"
             + (f" (after the run: {' '.join(f'{x:.2f}' for x in m['load_after'])})"
                if m.get("load_after") else "")] + blas
    if m["env"]:
        lines.append("env: " + " ".join(f"{k}={v}" for k, v in m["env"].items()))
    warning = load_warning(m)
    if warning:
        lines.append(warning)
    return [textwrap.shorten(ln, WIDTH, placeholder="...") if len(ln) > WIDTH else ln
            for ln in lines]


def load_warning(m):
    """A warning when the 1-minute load average, before or after the run, exceeds
    BUSY_LOAD per usable core."""
    load = max(m["load"][0], (m.get("load_after") or [0])[0])
    if load / max(1, m["usable_cpus"]) > BUSY_LOAD:
        return (f"WARNING: load average {load:.2f} on {m['usable_cpus']} cpus: other "
                f"work shares the cores; ratios are noisy (rerun on a quiet machine)")
    return None


# ------------------------------------------------------------------ JSON
def _timing(t):
    return None if t is None else {"median": t.median, "min": t.min, "iqr": t.iqr, "n": t.n}


def _untiming(d):
    return None if d is None else Timing(d["median"], d["min"], d["iqr"], d["n"])


def to_json(rows, machine, quick):
    """The record of a run (`--json FILE`)."""
    return {"schema": SCHEMA, "machine": machine, "quick": quick,
            "rows": [{"case": r.case, "what": r.what, "subject": r.subject,
                      "baseline": r.baseline, "ratio": r.ratio, "t_subject": _timing(r.t_subject),
                      "t_baseline": _timing(r.t_baseline), "note": r.note, "checks": r.checks}
                     for r in rows]}


def from_json(data):
    """(rows, machine, quick) of a record written by to_json."""
    if data.get("schema") != SCHEMA:
        raise ValueError(f"not a numbaflow-bench record of schema {SCHEMA} "
                         f"(got schema {data.get('schema')!r}); rerun with --json")
    rows = [Row(d["case"], d["what"], d["subject"], d["baseline"],
                float("nan") if d["ratio"] is None else d["ratio"], _untiming(d["t_subject"]),
                _untiming(d["t_baseline"]), d["note"], dict(d["checks"])) for d in data["rows"]]
    return rows, data["machine"], data["quick"]


def dump(path, rows, machine, quick):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(rows, machine, quick), f, indent=1, allow_nan=True)


def load(path):
    with open(path, encoding="utf-8") as f:
        return from_json(json.load(f))


# ------------------------------------------------------------------ tables
def verdicts(row, quick):
    """'ratio <= 1.3x: met' per check; with --quick only the target (no verdict: the
    small sizes and few samples cannot back one)."""
    if quick:
        return [f"target {k} (not judged: --quick)" for k in row.checks]
    return [f"target {k}: {'met' if ok else 'MISSED'}" for k, ok in row.checks.items()]


def _spread(t):
    s = None if t is None else t.spread
    return "-" if s is None or s != s else f"{100 * s:.0f}%"


def _notes(row, quick):
    notes = verdicts(row, quick) + ([row.note] if row.note else [])
    for side, t in (("numbaflow", row.t_subject), ("baseline", row.t_baseline)):
        if t is not None and t.spread == t.spread and t.spread > NOISY_SPREAD:
            notes.append(f"noisy: {side} IQR {100 * t.spread:.0f}% of its median")
    return "; ".join(notes)


def _ratio(r):
    return "-" if r.ratio != r.ratio else f"{r.ratio:.2f}x"


TEXT_HEADER = ["case", "numbaflow", "vs", "ratio", "median", "min", "IQR", "vs median",
               "IQR", "n"]


def _wrap(text, width, sep=" "):
    """`text` in lines of at most `width`, broken after `sep` where possible (a case name
    after '/'), else anywhere."""
    if sep != " ":
        text = text.replace(sep, sep + " ")
    lines = textwrap.wrap(text, width + (sep != " "), break_on_hyphens=False)
    return "\n".join(ln.replace(sep + " ", sep) for ln in lines) if sep != " " else \
        "\n".join(lines)


def format_text(rows, quick=False):
    """The table in at most 120 columns (the baseline's min is in --json and --markdown);
    each row's notes (targets, verdicts, noise) are numbered and listed under it."""
    from tabulate import tabulate
    body, notes, previous = [], [], None
    for r in rows:
        note = _notes(r, quick)
        mark = ""
        if note:
            notes.append(note)
            mark = f" [{len(notes)}]"
        ts, tb = r.t_subject, r.t_baseline
        body.append([_wrap(r.case, 18, "/") if r.case != previous else "",
                     _wrap(r.subject, 14), _wrap(r.baseline, 14), _ratio(r) + mark,
                     fmt_time(ts.median) if ts else "-", fmt_time(ts.min) if ts else "-",
                     _spread(ts), fmt_time(tb.median) if tb else "-", _spread(tb),
                     ts.n if ts else ""])
        previous = r.case
    out = [tabulate(body, TEXT_HEADER, tablefmt="simple", disable_numparse=True)]
    if notes:
        out += ["", "notes:"]
    for i, note in enumerate(notes, 1):
        out.append(textwrap.fill(note, WIDTH, initial_indent=f"[{i}] ",
                                 subsequent_indent=" " * (len(str(i)) + 3)))
    return "\n".join(out)


MD_HEADER = ["case", "workload", "numbaflow", "vs", "ratio", "numbaflow median (min, IQR)",
             "baseline median (min, IQR)", "n", "notes"]


def _md_time(t):
    if t is None:
        return "-"
    return f"{fmt_time(t.median)} ({fmt_time(t.min)}, {_spread(t)})"


def format_markdown(rows, quick=False):
    """The table as markdown (BENCHMARKS.md)."""
    lines = ["| " + " | ".join(MD_HEADER) + " |", "|" + "---|" * len(MD_HEADER)]
    for r in rows:
        cells = [r.case, r.what, r.subject, r.baseline, _ratio(r), _md_time(r.t_subject),
                 _md_time(r.t_baseline), str(r.t_subject.n if r.t_subject else ""),
                 _notes(r, quick)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def markdown_section(rows, machine, quick):
    """The generated part of BENCHMARKS.md: the header facts and the table."""
    facts = "\n".join(f"    {ln}" for ln in header(machine, quick))
    return (f"{BEGIN}\n<!-- generated by `numbaflow-bench --load RUN.json --write-md "
            f"BENCHMARKS.md`; edit the text outside these markers -->\n\n{facts}\n\n"
            f"{format_markdown(rows, quick)}\n{END}")


def write_md(path, rows, machine, quick):
    """Replace the generated section of `path` (appended when the file has none)."""
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmarks\n"
    section = markdown_section(rows, machine, quick)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ------------------------------------------------------------------ comparison
def compare(new_rows, old_rows, threshold):
    """[(row, old row, change, bad)] for the rows in both runs, and whether any subject
    became slower by more than `threshold` (0.1 = 10%). A row with a baseline measured in
    the same run compares its ratio to it, since absolute times move with the machine (the
    development VM's speed varied 2.3x between two days); a row without one, its time."""
    old = {(r.case, r.subject, r.baseline): r for r in old_rows if r.t_subject is not None}
    out, regressed = [], False
    for r in new_rows:
        o = old.get((r.case, r.subject, r.baseline))
        if o is None or r.t_subject is None:
            continue
        change = _measure(r) / _measure(o)
        bad = change > 1 + threshold
        regressed |= bad
        out.append((r, o, change, bad))
    return out, regressed


def _measure(r):
    """What `compare` compares: the row's ratio to its baseline, else its median time."""
    return r.t_subject.median / (r.t_baseline.median if r.t_baseline else 1.0)


def _shown(r):
    return f"{_measure(r):.2f}x" if r.t_baseline else fmt_time(r.t_subject.median)


def format_compare(pairs, threshold):
    from tabulate import tabulate
    body = [[r.case, r.subject, r.baseline, _shown(o), _shown(r), f"{change:.2f}x",
             "REGRESSION" if bad else ("faster" if change < 1 - threshold else "")]
            for r, o, change, bad in pairs]
    return tabulate(body, ["case", "numbaflow", "vs", "old", "new", "new/old", ""],
                    maxcolwidths=[28, 20, 20, None, None, None, None], disable_numparse=True)
