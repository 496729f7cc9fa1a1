"""Errors at the run path's API boundary (issue 17): each is typed, names the argument,
says what was expected and how to fix it; and the launcher environment has one reader."""
import pathlib

import numpy as np
import pytest

import numbaflow
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def seed():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3], "float32")
        loss = paddle.mean(static.nn.fc(x, 1))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    return main, loss, exe, scope


FEED = {"x": np.ones((2, 3), np.float32)}


def test_run_with_a_scope_that_is_not_a_scope():
    main, loss, exe, _ = seed()
    with pytest.raises(TypeError, match=r"scope must be a Scope .*got str 'global'.*leave it out"):
        exe.run(main, feed=FEED, fetch_list=[loss], scope="global")


def test_with_data_parallel_strategies_must_be_strategy_objects():
    main, loss, _, _ = seed()
    with pytest.raises(TypeError, match=r"exec_strategy must be a static.ExecutionStrategy.*"
                                        r"got str 'fast'"):
        static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                        exec_strategy="fast")
    with pytest.raises(TypeError, match=r"build_strategy must be a static.BuildStrategy"):
        static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                        build_strategy={"x": 1})


def test_scope_set_of_a_misspelt_name_after_a_run_is_refused():
    main, loss, exe, scope = seed()
    exe.run(main, feed=FEED, fetch_list=[loss], scope=scope)
    before = scope.get("fc_0.w_0")
    with pytest.raises(KeyError, match=r"no variable 'fc_0.w0'; did you mean \['fc_0.w_0'.*"
                                       r"create=True"):
        scope.set("fc_0.w0", np.zeros((3, 1), np.float32))
    assert "fc_0.w0" not in scope.local_var_names()
    np.testing.assert_array_equal(scope.get("fc_0.w_0"), before)
    scope.set("extra", np.zeros((2,), np.float32), create=True)     # deliberate: allowed
    assert "extra" in scope.local_var_names()


def test_scope_set_of_another_dtype_is_refused_before_any_run_can_fail():
    main, loss, exe, scope = seed()
    with pytest.raises(TypeError, match=r"'fc_0.w_0' holds float32, got a float64 value.*"
                                        r"astype\('float32'\)"):
        scope.set("fc_0.w_0", np.zeros((3, 1), np.float64))
    out, = exe.run(main, feed=FEED, fetch_list=[loss], scope=scope)     # still runs
    assert np.isfinite(out)


def test_scope_set_builds_a_fresh_scope_freely():
    scope = static.Scope()
    scope.set("w", np.ones((2, 2), np.float32))
    scope.set("w", np.zeros((3,), np.float32))          # another shape: replaced
    assert scope.get("w").shape == (3,)


# ---------------------------------------------------------------- the launcher environment
LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD", "MV2_COMM_WORLD")


def test_one_module_reads_the_launcher_environment():
    package = pathlib.Path(numbaflow.__file__).parent
    readers = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                     if any(v in p.read_text(encoding="utf-8") for v in LAUNCHER_VARS))
    # config.py reads every environment variable (tests/api/test_env_reads.py); its
    # launcher_rank_size is what distributed/mpi.py and the loggers ask
    assert readers == ["config.py"], readers


@pytest.mark.parametrize("size_var,rank_var", [("PMI_SIZE", "PMI_RANK"),
                                               ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
                                               ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK")])
def test_every_launcher_gives_the_same_trainers(monkeypatch, size_var, rank_var):
    from numbaflow.distributed import mpi
    for v in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
              "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv(size_var, "3")
    monkeypatch.setenv(rank_var, "1")
    bs = static.BuildStrategy()
    assert (bs.num_trainers, bs.trainer_id) == (mpi.env_size(), mpi.env_rank()) == (3, 1)
