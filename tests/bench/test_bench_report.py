"""numbaflow-bench's statistics, record and verdicts: Timing against numpy's percentiles, the
JSON round trip, --compare / --check exit codes, the 120-column table, BENCHMARKS.md's
generated section."""
import json
import math

import numpy as np
import pytest

from numbaflow.bench import __main__ as bench
from numbaflow.bench import report
from numbaflow.bench.harness import Row, Timing

MACHINE = {"cpus": 2, "usable_cpus": 2, "thread_budget": 2, "load": [0.1, 0.2, 0.3],
           "numba_threads": 2, "threading_layer": "default", "env": {}, "processor": "x86_64",
           "blas": [{"library": "libopenblas.so", "api": "openblas", "version": "0.3.30",
                     "kernel": "Haswell", "threads": 2}],
           "versions": {"numbaflow": "0.1.0", "numpy": "2", "numba": "0.6", "python": "3.11"}}


def test_timing_statistics_match_numpy():
    rng = np.random.default_rng(0)
    samples = list(rng.gamma(2.0, 1e-3, size=17))
    t = Timing.of(samples)
    q1, q3 = np.percentile(samples, [25, 75])
    assert t.median == pytest.approx(np.median(samples))
    assert t.min == min(samples) and t.n == 17
    assert t.iqr == pytest.approx(q3 - q1)
    assert t.spread == pytest.approx((q3 - q1) / np.median(samples))
    one = Timing.of([0.5])
    assert (one.median, one.min, one.iqr, one.n) == (0.5, 0.5, 0.0, 1)
    with pytest.raises(ValueError, match="at least one sample"):
        Timing.of([])


def _rows():
    return [Row("models/cnn", "LeNet", "numbaflow 2t", "jax.jit 2t", 1.25,
                Timing(0.010, 0.009, 0.0005, 15), Timing(0.008, 0.0075, 0.002, 15),
                "peak RSS 300 MB vs 400 MB", {"ratio <= 1x": False}),
            Row("matmul", "512^2", "Executor.run", "np.matmul", 0.9, Timing(1e-3, 9e-4, 1e-5, 15),
                Timing(1.1e-3, 1e-3, 1e-5, 15), "", {"ratio <= 1.1x": True}),
            Row("models/gpt", "GPT", note="skipped: --quick runs models/mlp only")]


def test_json_round_trip(tmp_path):
    path = tmp_path / "run.json"
    report.dump(path, _rows(), MACHINE, quick=False)
    rows, machine, quick = report.load(path)
    assert machine == MACHINE and quick is False
    for got, want in zip(rows, _rows()):
        assert vars(got).keys() == vars(want).keys()
        for k, v in vars(want).items():
            if isinstance(v, float) and math.isnan(v):
                assert math.isnan(getattr(got, k))
            else:
                assert getattr(got, k) == v, k
    data = json.loads(path.read_text(encoding="utf-8"))
    data["schema"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="schema 1"):
        report.load(path)


def test_text_table_fits_120_columns_and_numbers_the_notes():
    long = [Row("compile/deep_mlp_256/first50", "x", "a rather long subject label here",
                "a very long baseline label, with words", 12.3456,
                Timing(123.45, 100.0, 50.0, 99), Timing(1e-6, 1e-6, 1e-6, 99),
                "n" * 300, {"ratio <= 0.9x": False})]
    text = report.format_text(_rows() + long)
    assert max(len(line) for line in text.splitlines()) <= report.WIDTH, text
    assert "1.25x [1]" in text and "[1] target ratio <= 1x: MISSED" in text
    assert "noisy: baseline IQR 25% of its median" in text     # 0.002 / 0.008
    assert "target ratio <= 1.1x: met" in text


def test_quick_prints_targets_without_verdicts():
    text = report.format_text(_rows(), quick=True)
    assert "MISSED" not in text and ": met" not in text
    assert "target ratio <= 1x (not judged: --quick)" in text


def test_header_states_blas_kernel_threads_and_load_warning():
    lines = report.header(dict(MACHINE, env={"OPENBLAS_CORETYPE": "Haswell"}))
    text = "\n".join(lines)
    assert "openblas 0.3.30, kernel Haswell, 2 threads" in text
    assert "OPENBLAS_CORETYPE=Haswell" in text
    assert "thread budget 2" in text and "WARNING" not in text
    busy = "\n".join(report.header(dict(MACHINE, load=[3.0, 2.0, 1.0])))
    assert "WARNING: load average 3.00 on 2 cpus" in busy
    after = "\n".join(report.header(dict(MACHINE, load_after=[1.5, 1.0, 0.5])))
    assert "(after the run: 1.50 1.00 0.50)" in after and "load average 1.50" in after


def test_compare_flags_a_regression_beyond_the_threshold():
    old = _rows()
    new = _rows()
    new[0].t_subject = Timing(0.0125, 0.012, 0.0005, 15)      # 25% slower
    new[1].t_subject = Timing(1.05e-3, 1e-3, 1e-5, 15)        # 5% slower: within 10%
    pairs, regressed = report.compare(new, old, 0.10)
    assert regressed
    assert [(r.case, round(c, 3), bad) for r, _, c, bad in pairs] == \
        [("models/cnn", 1.25, True), ("matmul", 1.05, False)]
    assert not report.compare(new, old, 0.30)[1]


def test_compare_reads_ratios_so_a_slower_machine_is_not_a_regression():
    old, new = _rows(), _rows()
    for r in new[:2]:   # everything 2.3x slower, numbaflow and the peer alike (row 3: skipped)
        r.t_subject = Timing(r.t_subject.median * 2.3, r.t_subject.min * 2.3, 0, 15)
        r.t_baseline = Timing(r.t_baseline.median * 2.3, r.t_baseline.min * 2.3, 0, 15)
    pairs, regressed = report.compare(new, old, 0.10)
    assert not regressed and [round(c, 6) for _, _, c, _ in pairs] == [1.0, 1.0]
    new[0].t_baseline = Timing(0.008, 0.0075, 0.002, 15)     # only numbaflow got slower
    assert report.compare(new, old, 0.10)[1]
    assert "2.88x" in report.format_compare(report.compare(new, old, 0.10)[0], 0.10)


@pytest.fixture
def records(tmp_path):
    met = _rows()[1:]
    paths = {"met": tmp_path / "met.json", "missed": tmp_path / "missed.json",
             "quick": tmp_path / "quick.json", "slower": tmp_path / "slower.json"}
    report.dump(paths["met"], met, MACHINE, False)
    report.dump(paths["missed"], _rows(), MACHINE, False)
    report.dump(paths["quick"], _rows(), MACHINE, True)
    slower = _rows()[1:]
    slower[0].t_subject = Timing(2e-3, 2e-3, 0, 15)
    report.dump(paths["slower"], slower, MACHINE, False)
    return paths


def test_exit_codes(records, capsys):
    assert bench.main(["--load", str(records["met"]), "--check"]) == 0
    assert bench.main(["--load", str(records["missed"])]) == 0          # no --check: report
    assert bench.main(["--load", str(records["missed"]), "--check"]) == bench.EXIT_MISSED
    assert bench.main(["--load", str(records["quick"]), "--check"]) == bench.EXIT_USAGE
    assert bench.main(["--quick", "--check"]) == bench.EXIT_USAGE
    assert bench.main(["--load", str(records["slower"]), "--compare",
                       str(records["met"])]) == bench.EXIT_REGRESSED
    assert bench.main(["--load", str(records["met"]), "--compare",
                       str(records["slower"])]) == 0
    out = capsys.readouterr()
    assert "REGRESSION" in out.out and "drop --quick" in out.err


def test_bad_peer_arguments_are_usage_errors(tmp_path, capsys):
    assert bench.main(["--only", "models/mlp", "--peer-python", "jax"]) == bench.EXIT_USAGE
    assert bench.main(["--only", "models/mlp", "--peer-python",
                       f"mxnet={tmp_path}"]) == bench.EXIT_USAGE
    assert bench.main(["--only", "models/mlp", "--peer-python",
                       f"jax={tmp_path / 'nope'}"]) == bench.EXIT_USAGE
    err = capsys.readouterr().err
    assert "expected NAME=PYTHON" in err and "expected one of jax, torch, paddle" in err
    assert "is not an executable interpreter" in err


def test_write_md_replaces_only_its_section(tmp_path):
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Benchmarks\n\nprose before\n")
    report.write_md(md, _rows(), MACHINE, False)
    report.dump(tmp_path / "r.json", _rows()[1:], MACHINE, False)
    md.write_text(md.read_text(encoding="utf-8") + "\nprose after\n")
    assert bench.main(["--load", str(tmp_path / "r.json"), "--write-md", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    assert text.count(report.BEGIN) == 1 and text.count(report.END) == 1
    assert "prose before" in text and "prose after" in text
    assert "| matmul |" in text and "models/cnn" not in text
