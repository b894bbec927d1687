"""The GPU launch path from Python - device arrays by __cuda_array_interface__,
host arrays staged, stream=, errors - against the recording fake CUDA driver
(test/fakecuda, built beside the library). It runs nothing on a GPU: these are
checks of what Python hands the runtime, so they run in CI. Each case runs in
a subprocess, because a process opens its driver once."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def fake_driver():
    try:
        from tegula import _build_config
    except ImportError:
        return None
    path = Path(_build_config.LIBRARY_DIR) / "libtegula-fake-cuda.so"
    return path if path.exists() else None


PRELUDE = textwrap.dedent("""
    import numpy as np
    import tegula
    from tegula import examples
    from tegula._tegula import _DeviceBytes

    ok, why = tegula.gpu_available()
    assert ok, why

    class CaiArray:
        def __init__(self, n, strides=None, readonly=False):
            self.memory = _DeviceBytes(4 * n)
            self.__cuda_array_interface__ = {
                "shape": (n,), "typestr": "<f4", "strides": strides,
                "data": (self.memory.ptr, readonly), "version": 3}
""")


def run(body, tmp_path):
    driver = fake_driver()
    if driver is None:
        pytest.skip("the fake CUDA driver is not built here (an installed package)")
    env = dict(os.environ, TEGULA_CUDA_DRIVER=str(driver),
               TEGULA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TEGULA_BACKEND", None)
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], env=env,
                          capture_output=True, text=True, timeout=300)


def test_device_arrays_and_host_arrays_launch_on_the_gpu_path(tmp_path):
    r = run("""
        x, y, out = CaiArray(1000), CaiArray(1000), CaiArray(1000)
        examples.vector_add[(1,)](x, y, out, 1000, BLOCK=1024, backend="gpu")
        host = np.zeros(1000, np.float32)
        examples.vector_add[lambda m: (tegula.cdiv(m["n"], m["BLOCK"]),)](
            host, host, host, 1000, BLOCK=256, backend="gpu", num_warps=2)
        print("launched")
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "launched" in r.stdout


def test_profile_times_each_kernels_launches(tmp_path):
    r = run("""
        from tegula.testing import profile
        x = CaiArray(1000)
        with profile() as p:
            for _ in range(2):
                examples.vector_add[(1,)](x, x, x, 1000, BLOCK=1024, backend="gpu")
        (kernel, calls, ms), = p.kernels
        assert (kernel, calls) == ("vector_add", 2) and ms >= 0, p.kernels
        examples.vector_add[(1,)](x, x, x, 1000, BLOCK=1024, backend="gpu")  # not timed
        assert tegula._tegula.kernel_profile() == []
        print("profiled")
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "profiled" in r.stdout


# Each snippet ends in an error the launch must raise (printed by the snippet).
ERRORS = {
    # The fake knows no stream 12345: the handle was passed as given.
    "the stream reaches the driver": ("""
        x = CaiArray(64)
        examples.vector_add[(1,)](x, x, x, 64, BLOCK=64, backend="gpu", stream=12345)
    """, "cuLaunchKernel failed for kernel 'vector_add': CUDA_ERROR_INVALID_HANDLE"),
    "a strided device array is refused by name": ("""
        x, y, strided = CaiArray(64), CaiArray(64), CaiArray(32, strides=(8,))
        examples.vector_add[(1,)](x, y, strided, 32, BLOCK=64, backend="gpu")
    """, "argument 'out' (#2) of kernel 'vector_add': the array is not contiguous"),
    "a malformed interface is an error, not a crash": ("""
        x = CaiArray(64)
        del x.__cuda_array_interface__["typestr"]
        examples.vector_add[(1,)](x, x, x, 64, BLOCK=64, backend="gpu")
    """, "argument 'x' (#0) of kernel 'vector_add': __cuda_array_interface__ has no 'typestr'"),
}


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: c.replace(" ", "_"))
def test_launch_errors(case, tmp_path):
    body, expected = ERRORS[case]
    r = run("try:\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ") +
            "\nexcept Exception as e:\n    print(type(e).__name__, e)\n", tmp_path)
    assert r.returncode == 0, r.stderr
    assert expected in r.stdout, r.stdout


def test_max_resident_programs_asks_the_driver(tmp_path):
    # The fake driver models an H100: 132 SMs, GPCs of 18 (and one of 6);
    # vector_add at 4 warps fits 16 CTAs an SM, the clustered GEMM one, and
    # clusters of 4 leave two SMs of each GPC idle (4 x 29 programs).
    r = run("""
        x = np.zeros(1024, np.float32)
        print(examples.vector_add.max_resident_programs(x, x, x, 1024, BLOCK=1024, backend="gpu"))
        import ml_dtypes
        a = np.zeros((512, 128), ml_dtypes.bfloat16)
        b = np.zeros((128, 256), ml_dtypes.bfloat16)
        c = np.zeros((512, 256), ml_dtypes.bfloat16)
        for size in (1, 2, 4):
            print(examples.matmul_persistent_cluster.max_resident_programs(
                a, b, c, 512, 256, 128, BM=128, BN=256, BK=64, GROUP_M=8, num_warps=8, num_stages=4,
                warp_specialize=True, cluster_size=size, backend="gpu"))
        try:
            examples.vector_add.max_resident_programs(x, x, x, 1024, BLOCK=1024, backend="interp")
        except tegula.Error as e:
            print("refused:", e)
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["2112", "132", "132", "116"]
    assert "max_resident_programs asks the CUDA driver" in lines[4]


def test_gpt_uses_the_tiles_tegula_gpt_tune_kept(tmp_path):
    # GPT.use_tuned_tiles is `tegula-gpt train --tiles auto`: the tuning kept
    # for this GPU (the fake driver's H100), model, dtype and B x T, or the
    # defaults and the command that would keep one.
    kept = tmp_path / "kept"
    r = run(f"""
        import os, re
        os.environ["TEGULA_GPT_TILES_DIR"] = {str(kept)!r}
        from tegula import gpt
        model = gpt.GPT(gpt.Config(n_layer=1, n_head=2, n_embd=64, vocab=300, n_ctx=64), backend="gpu",
                        dtype="bf16")
        before = model.tiles()
        note = model.use_tuned_tiles(2, 32)
        print(note)
        assert model.tiles() == before
        path = re.search(r"\\((/.*\\.txt) does not exist\\)", note).group(1)
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write("# as tegula-gpt tune keeps it\\n" + before + "\\ngroup_m=4\\n")
        print(model.use_tuned_tiles(2, 32))
        assert "group_m=4," in model.tiles(), model.tiles()
        print(model.use_tuned_tiles(4, 32))  # another batch: nothing kept for it
        for bad in ((0, 32), ):
            try:
                model.use_tuned_tiles(*bad)
            except ValueError as e:
                print("refused:", e)
        cpu = gpt.GPT(gpt.Config(n_layer=1, n_head=2, n_embd=64, vocab=300, n_ctx=64), backend="interp")
        try:
            cpu.use_tuned_tiles(2, 32)
        except tegula.Error as e:
            print("refused:", e)
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tiles: no tuning kept for "), lines
    assert "B=2 T=32; bf16" in lines[0] and "`tegula-gpt tune --layers 1 --heads 2 --embd 64 --vocab 300 " \
        "--batch 2 --seq 32 --dtype bf16` keeps one" in lines[0], lines[0]
    assert lines[1].startswith("tiles: tuned for this setup (") and lines[1].endswith(": group_m=4"), lines[1]
    assert "no tuning kept" in lines[2] and "B=4 T=32" in lines[2], lines[2]
    assert " - the tiles stay as they are; `tegula-gpt tune" in lines[2], lines[2]
    assert lines[3] == "refused: use_tuned_tiles: batch and seq are at least 1, not 0 and 32", lines[3]
    assert "use_tuned_tiles reads the tiles tegula-gpt tune kept for a GPU; this model runs on the " \
        "'interp' backend" in lines[4], lines[4]
