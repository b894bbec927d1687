"""tegula.autotune: which config runs, when it is timed, what is restored and
remembered, and the errors - in the interpreter and simulator (with a measure
of the test's own) and, against the recording fake CUDA driver, the GPU path
with CUDA events and the choices on disk."""
import numpy as np
import pytest

import tegula
from tegula import examples

from test_driver_path import run as run_on_fake_driver

BLOCKS = [tegula.Config({"BLOCK": 128}, num_warps=1, num_stages=1),
          tegula.Config({"BLOCK": 256}, num_warps=2, num_stages=1),
          tegula.Config({"BLOCK": 512}, num_warps=4, num_stages=1)]


def blocks(meta):
    return (tegula.cdiv(meta["n"], meta["BLOCK"]),)


class Table:
    """A measure: each config "takes" ms[BLOCK]; it runs it once, and counts."""

    def __init__(self, ms):
        self.ms, self.calls = ms, []

    def __call__(self, config, run):
        self.calls.append(config)
        run()
        return self.ms[config["BLOCK"]]


def add_inputs(rng, n):
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    return x, y, np.full(n, np.nan, np.float32)


def test_the_interpreter_runs_the_first_config_without_timing(rng):
    add = tegula.autotune(examples.vector_add, BLOCKS, key=["n"], cache=False)
    x, y, out = add_inputs(rng, 1000)
    add[blocks](x, y, out, 1000, backend="interp")
    np.testing.assert_array_equal(out, x + y)
    assert add.best(x, y, out, 1000, backend="interp") == BLOCKS[0]
    assert add.trials(x, y, out, 1000, backend="interp") == []


def test_a_measure_chooses_the_fastest_once_per_key(rng):
    table = Table({128: 3.0, 256: 1.0, 512: 2.0})
    add = tegula.autotune(examples.vector_add, BLOCKS, key=["n"], measure=table, cache=False)
    grids = []

    def grid(meta):
        grids.append(dict(meta))
        return blocks(meta)

    for n in (1000, 1000, 777):
        x, y, out = add_inputs(rng, n)
        add[grid](x, y, out, n, backend="interp")
        np.testing.assert_array_equal(out, x + y)
        assert add.best(x, y, out, n, backend="interp")["BLOCK"] == 256
    assert len(table.calls) == 6, "three configs for n = 1000, three for n = 777, none again"
    assert grids[-1]["BLOCK"] == 256 and grids[-1]["n"] == 777, "the grid sees the config's constants"
    trials = add.trials(x, y, out, 777, backend="interp")
    assert [(c["BLOCK"], ms, err) for c, ms, err in trials] == [(128, 3.0, None), (256, 1.0, None),
                                                               (512, 2.0, None)]


def test_a_config_that_fails_is_skipped_and_its_error_kept(rng):
    configs = [tegula.Config({"BLOCK": 300}), tegula.Config({"BLOCK": 256})]  # 300: no power of two
    add = tegula.autotune(examples.vector_add, configs, measure=Table({300: 0.5, 256: 2.0}),
                          cache=False)
    x, y, out = add_inputs(rng, 600)
    add[blocks](x, y, out, 600, backend="interp")
    np.testing.assert_array_equal(out, x + y)
    (bad, _, error), (good, ms, none) = add.trials(x, y, out, 600, backend="interp")
    assert "powers of two" in error and none is None and ms == 2.0
    with pytest.raises(tegula.Error, match="none of its 1 configs ran"):
        tegula.autotune(examples.vector_add, configs[:1], measure=Table({300: 1.0}),
                        cache=False)[blocks](x, y, out, 600, backend="interp")


@pytest.mark.parametrize("restore", [False, True])
def test_restored_arrays_see_only_the_real_launch(rng, restore):
    # row_sum_atomic adds into out: each tuning launch would add again.
    rows, cols = 3, 1000
    x = rng.random((rows, cols), dtype=np.float32)
    out = np.zeros(rows, np.float32)
    tuned = tegula.autotune(examples.row_sum_atomic, BLOCKS, restore=["out"] if restore else [],
                            measure=Table({128: 2.0, 256: 1.0, 512: 3.0}), cache=False)
    tuned[lambda m: (rows, tegula.cdiv(m["n_cols"], m["BLOCK"]))](x, out, cols, backend="interp")
    runs = 1 if restore else 4  # three tuning launches, then the launch
    tegula.testing.assert_close(out, runs * x.sum(axis=1), rtol=1e-5)


def test_a_matmul_tuned_in_the_simulator(rng):
    import time

    def wall_clock(config, run):
        start = time.perf_counter()
        run()
        return (time.perf_counter() - start) * 1e3

    configs = [tegula.Config({"BM": 32, "BN": 32, "BK": 16}, num_warps=4, num_stages=2),
               tegula.Config({"BM": 64, "BN": 32, "BK": 32}, num_warps=4, num_stages=3)]
    matmul = tegula.autotune(examples.matmul, configs, key=["M", "N", "K"], measure=wall_clock,
                             cache=False)
    M, N, K = 70, 40, 48
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    matmul[lambda m: (tegula.cdiv(M, m["BM"]), tegula.cdiv(N, m["BN"]))](a, b, c, M, N, K,
                                                                        backend="sim")
    tegula.testing.assert_close(c, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))
    trials = matmul.trials(a, b, c, M, N, K, backend="sim")
    assert [err for _, _, err in trials] == [None, None] and all(ms > 0 for _, ms, _ in trials)
    assert matmul.best(a, b, c, M, N, K, backend="sim") in configs


def test_a_measure_that_keeps_run_or_returns_no_number_is_told(rng):
    x, y, out = add_inputs(rng, 8)
    kept = []

    def keeper(config, run):
        kept.append(run)
        run()
        return 1.0

    tegula.autotune(examples.vector_add, BLOCKS[:1], measure=keeper, cache=False)[blocks](
        x, y, out, 8, backend="interp")
    with pytest.raises(ValueError, match="called after the measure returned"):
        kept[0]()
    with pytest.raises(TypeError, match="returns milliseconds"):
        tegula.autotune(examples.vector_add, BLOCKS[:1], measure=lambda c, run: "fast",
                        cache=False)[blocks](x, y, out, 8, backend="interp")


def test_bad_configs_and_launches_are_named(rng):
    x, y, out = add_inputs(rng, 8)
    add = tegula.autotune(examples.vector_add, BLOCKS, cache=False)
    with pytest.raises(TypeError, match="num_warps comes from its configs, not the launch"):
        add[(1,)](x, y, out, 8, num_warps=4)
    with pytest.raises(TypeError, match="BLOCK comes from its configs, not the launch"):
        add[(1,)](x, y, out, 8, BLOCK=128)
    with pytest.raises(TypeError, match=r"takes 4 arguments \(x, y, out, n\), 5 were given"):
        add[(1,)](x, y, out, 8, 128)
    with pytest.raises(tegula.Error, match="tuned constant 'BLOCKS' is not one of its parameters"):
        tegula.autotune(examples.vector_add, [tegula.Config({"BLOCKS": 128})])
    with pytest.raises(tegula.Error, match="'n' is not an integer tl::constant parameter"):
        tegula.autotune(examples.vector_add, [tegula.Config({"n": 128})])
    with pytest.raises(tegula.Error, match="key 'm' is not one of its parameters"):
        tegula.autotune(examples.vector_add, BLOCKS, key=["m"])
    with pytest.raises(tegula.Error, match="no configs to choose from"):
        tegula.autotune(examples.vector_add, [])
    with pytest.raises(TypeError, match="constants map names to ints"):
        tegula.Config({"BLOCK": 1.5})
    with pytest.raises(TypeError, match="measure is a callable"):
        tegula.autotune(examples.vector_add, BLOCKS, measure=3)
    with pytest.raises(KeyError):
        BLOCKS[0]["BM"]
    with pytest.raises(TypeError, match="constants map names to ints"):
        tegula.Config({"BLOCK": True})
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        tegula.Config({"BLOCK": 2**70})
    with pytest.raises(TypeError, match="a list of parameter names, not the string 'MNK'"):
        tegula.autotune(examples.matmul, [tegula.Config({"BM": 32, "BN": 32, "BK": 16})], key="MNK")
    assert BLOCKS[0] != 1 and BLOCKS[0] == tegula.Config({"BLOCK": 128}, num_warps=1, num_stages=1)
    assert len({BLOCKS[0], tegula.Config({"BLOCK": 128}, num_warps=1, num_stages=1)}) == 1
    assert repr(BLOCKS[1]) == "tegula.Config({'BLOCK': 256}, num_warps=2, num_stages=1)"
    assert BLOCKS[1].constants == {"BLOCK": 256}


def test_events_time_each_config_on_the_gpu_path_and_the_choice_is_kept_on_disk(tmp_path):
    body = """
        import os
        add = tegula.autotune(examples.vector_add, [
            tegula.Config({"BLOCK": 128}, num_warps=1), tegula.Config({"BLOCK": 256}, num_warps=2),
            tegula.Config({"BLOCK": 300})],  # fails to trace: skipped
            key=["n"], warmup=1, rep=3, verbose=True)
        x, y, out = CaiArray(1000), CaiArray(1000), CaiArray(1000)
        add[lambda m: (tegula.cdiv(m["n"], m["BLOCK"]),)](x, y, out, 1000, backend="gpu")
        trials = add.trials(x, y, out, 1000, backend="gpu")
        print("trials", len(trials), [err is None for _, _, err in trials], all(ms >= 0 for _, ms, _ in trials))
        print("best", add.best(x, y, out, 1000, backend="gpu") in add.configs[:2])
        print("files", os.listdir(os.path.join(os.environ["TEGULA_CACHE_DIR"], "autotune")))
    """
    first = run_on_fake_driver(body, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "trials 3 [True, True, False] True" in first.stdout
    assert "best True" in first.stdout
    assert "files ['vector_add-" in first.stdout
    assert first.stderr.count("autotune vector_add [gpu ") == 4, first.stderr  # three trials, the choice
    # The next process reads the choice: nothing timed, no trials.
    second = run_on_fake_driver(body, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "autotune vector_add" not in second.stderr
    assert "trials 0" in second.stdout and "best True" in second.stdout


@pytest.mark.gpu
def test_a_matmul_tuned_on_the_gpu(rng):
    torch = pytest.importorskip("torch", reason="device arrays for the GPU case come from torch")
    configs = [tegula.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=4, num_stages=4),
               tegula.Config({"BM": 128, "BN": 256, "BK": 64}, num_warps=8, num_stages=3),
               tegula.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=3)]
    matmul = tegula.autotune(examples.matmul, configs, key=["M", "N", "K"], cache=False)
    M, N, K = 1000, 520, 264
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    matmul[lambda m: (tegula.cdiv(M, m["BM"]), tegula.cdiv(N, m["BN"]))](a, b, c, M, N, K,
                                                                        backend="gpu")
    torch.cuda.synchronize()
    tegula.testing.assert_close(c.float().cpu().numpy(), (a.float() @ b.float()).cpu().numpy(),
                                rtol=2e-2, atol=2e-2)
    trials = matmul.trials(a, b, c, M, N, K, backend="gpu")
    assert [err for _, _, err in trials] == [None, None, None]
    best = matmul.best(a, b, c, M, N, K, backend="gpu")
    assert min(ms for _, ms, _ in trials) == next(ms for cfg, ms, _ in trials if cfg == best)
    print("trials:", [(repr(cfg), round(ms, 4)) for cfg, ms, _ in trials])
