"""The examples' throughput: a rate with its spread over the steps it comes from, and a
word when the machine was busy (then the figure is noise as much as speed).

>>> r = StepRates()
>>> for dt in (0.010, 0.011, 0.009, 0.030):
...     r.add(100, dt)
>>> round(r.rate())
6667
>>> [round(x) for x in r.iqr()]
[7500, 10227]
"""
import os

import numpy as np


def usable_cpus():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # (not Linux)
        return os.cpu_count() or 1


def load_average():
    """The 1-minute load average (0.0 where the OS does not say)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


class StepRates:
    """Items per second of each timed step: the overall rate (items over wall time), the
    interquartile range of the steps' rates, and the highest load average seen."""

    def __init__(self):
        self.items, self.seconds, self.per_step = 0, 0.0, []
        self.load = load_average()

    def add(self, items, seconds):
        self.items += items
        self.seconds += seconds
        if seconds > 0:
            self.per_step.append(items / seconds)

    def rate(self):
        """items / seconds over the steps, or None without a timed step."""
        return self.items / self.seconds if self.seconds > 0 else None

    def iqr(self):
        """(25th, 75th percentile) of the steps' rates, or None under 2 steps."""
        if len(self.per_step) < 2:
            return None
        return tuple(float(x) for x in np.percentile(self.per_step, [25, 75]))

    def busy(self):
        """The load average when it exceeded the usable cores (now or at the start), else None."""
        self.load = max(self.load, load_average())
        return self.load if self.load > usable_cpus() else None

    def row(self, key):
        """The history row's fields: `key` (the rate), `key`_p25 / _p75 and load."""
        lo_hi = self.iqr()
        busy = self.busy()
        return {key: self.rate(), f"{key}_p25": lo_hi[0] if lo_hi else None,
                f"{key}_p75": lo_hi[1] if lo_hi else None, "load": busy or self.load}


def rate_text(row, key, unit, width=9):
    """'  1234 samples/s (steps 1100-1400)', with ', machine busy: load 5.1 > 2 cores' when it
    was; '-' without a timed step."""
    rate = row.get(key)
    if rate is None:
        return f"{'-':>{width}} {unit}"
    text = f"{rate:{width}.0f} {unit}"
    if row.get(f"{key}_p25") is not None:
        text += f" (steps {row[f'{key}_p25']:.0f}-{row[f'{key}_p75']:.0f})"
    cores = usable_cpus()
    if row.get("load", 0.0) > cores:
        text += f" [machine busy: load {row['load']:.1f} > {cores} cores: noisy]"
    return text
