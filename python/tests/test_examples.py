"""Every example kernel from Python, against numpy, in the interpreter and the
CTA simulator (and on the GPU when one is present)."""
import math

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (bfloat16 arrays) is not installed")

import tegula
from tegula import examples
from tegula.testing import assert_close

BACKENDS = ["interp", "sim", pytest.param("gpu", marks=pytest.mark.gpu)]
FLOATS = [np.float32, ml_dtypes.bfloat16, np.float16]


def rand(rng, shape, dtype, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def poisoned(shape, dtype):
    return np.full(shape, np.nan, dtype=np.float32).astype(dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 1000, 1025])
def test_vector_add(rng, backend, n):
    x, y = rand(rng, n, np.float32), rand(rng, n, np.float32)
    out = poisoned(n, np.float32)
    examples.vector_add[(tegula.cdiv(n, 256),)](x, y, out, n, BLOCK=256, backend=backend)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax(rng, backend, dtype):
    rows, cols = 3, 100
    x = rand(rng, (rows, cols), dtype, -5, 5)
    out = poisoned((rows, cols), dtype)
    examples.softmax[(rows,)](x, out, cols, BLOCK=128, backend=backend)
    xf = x.astype(np.float64)
    ref = np.exp(xf - xf.max(axis=1, keepdims=True))
    assert_close(out, ref / ref.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_layernorm(rng, backend):
    rows, cols, eps = 4, 300, 1e-5
    x, w, b = rand(rng, (rows, cols), np.float32), rand(rng, cols, np.float32), rand(rng, cols, np.float32)
    y, mean, rstd = poisoned((rows, cols), np.float32), poisoned(rows, np.float32), poisoned(rows, np.float32)
    examples.layernorm[(rows,)](x, w, b, y, mean, rstd, cols, eps, BLOCK=128, backend=backend)
    xf = x.astype(np.float64)
    mu, var = xf.mean(axis=1), xf.var(axis=1)
    assert_close(mean, mu)
    assert_close(rstd, 1 / np.sqrt(var + eps), rtol=1e-4)
    assert_close(y, (xf - mu[:, None]) / np.sqrt(var[:, None] + eps) * w + b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu(rng, backend, dtype):
    n = 777
    x = rand(rng, n, dtype, -4, 4)
    out = poisoned(n, dtype)
    examples.gelu[(tegula.cdiv(n, 256),)](x, out, n, BLOCK=256, backend=backend)
    xf = x.astype(np.float64)
    ref = 0.5 * xf * (1 + np.tanh(math.sqrt(2 / math.pi) * (xf + 0.044715 * xf**3)))
    assert_close(out, ref)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul(rng, backend, dtype):
    M, N, K = 70, 40, 48
    a, b = rand(rng, (M, K), dtype), rand(rng, (K, N), dtype)
    c = poisoned((M, N), dtype)
    grid = lambda meta: (tegula.cdiv(M, meta["BM"]), tegula.cdiv(N, meta["BN"]))
    examples.matmul[grid](a, b, c, M, N, K, BM=32, BN=32, BK=16, backend=backend)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    rtol, atol = tegula.testing.default_tolerance(dtype)
    assert_close(c, ref, rtol=rtol, atol=atol * 4)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_matmul_hopper_code_in_the_simulator(rng, dtype):
    # chip="sm_90a": the dot runs on wgmma (whole warpgroups along M: BM = 64 at 4 warps).
    M, N, K = 100, 72, 96
    a, b = rand(rng, (M, K), dtype), rand(rng, (K, N), dtype)
    c = poisoned((M, N), dtype)
    grid = (tegula.cdiv(M, 64), tegula.cdiv(N, 64))
    examples.matmul[grid](a, b, c, M, N, K, BM=64, BN=64, BK=32, backend="sim", chip="sm_90a")
    ptx = examples.matmul.compile(a, b, c, M, N, K, BM=64, BN=64, BK=32, chip="sm_90a", assemble=False).ptx
    assert "wgmma.mma_async" in ptx
    rtol, atol = tegula.testing.default_tolerance(dtype)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=rtol, atol=atol * 4)


def test_max_registers_caps_a_kernel(rng):
    # max_registers: the kernel's .maxnreg (Triton's maxnreg); the CPU
    # backends run the kernel as without it; out of range is an error.
    M = N = K = 64
    a, b = rand(rng, (M, K), np.float16), rand(rng, (K, N), np.float16)
    c = poisoned((M, N), np.float16)
    ptx = examples.matmul.compile(a, b, c, M, N, K, BM=64, BN=64, BK=32, max_registers=64, assemble=False).ptx
    assert ".maxnreg 64" in ptx
    examples.matmul[(1, 1)](a, b, c, M, N, K, BM=64, BN=64, BK=32, backend="sim", max_registers=64)
    rtol, atol = tegula.testing.default_tolerance(np.float16)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=rtol, atol=atol * 4)
    with pytest.raises(tegula.Error, match="max_registers is 16 to 255 registers a thread"):
        examples.matmul.compile(a, b, c, M, N, K, BM=64, BN=64, BK=32, max_registers=8, assemble=False)
    config = tegula.Config({"BM": 64}, num_warps=4, max_registers=128)
    assert config.max_registers == 128 and "max_registers=128" in repr(config)


def run_descriptor_matmul_in_the_simulator(rng, M, N, K, **options):
    """examples.matmul_descriptors on sm_90a in the simulator with `options`,
    checked against numpy; returns its CompiledKernel."""
    bf16 = ml_dtypes.bfloat16
    a, b = rand(rng, (M, K), bf16), rand(rng, (K, N), bf16)
    c = poisoned((M, N), bf16)
    grid = (tegula.cdiv(M, 64), tegula.cdiv(N, 64))
    args = (a, b, c, M, N, K, K, N, N)
    tiles = dict(BM=64, BN=64, BK=32, chip="sm_90a")
    examples.matmul_descriptors[grid](*args, **tiles, backend="sim", **options)
    rtol, atol = tegula.testing.default_tolerance(bf16)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=rtol, atol=atol * 4)
    return examples.matmul_descriptors.compile(*args, **tiles, assemble=False, **options)


def test_warp_specialized_matmul_in_the_simulator(rng):
    # Tensor descriptors on sm_90a: TMA rings filled by a producer warpgroup
    # (4 warps beside the 4 that compute), the consumers' barriers over their
    # own 128 threads.
    compiled = run_descriptor_matmul_in_the_simulator(rng, 100, 72, 200, warp_specialize=True)
    assert compiled.producer_warps == 4
    assert "bar.sync 1, 128;" in compiled.ptx
    assert run_descriptor_matmul_in_the_simulator(rng, 100, 72, 200).producer_warps == 0


def test_ping_pong_matmul_in_the_simulator(rng):
    # Two programs per CTA on their own consumer warpgroups: 3 x 2 programs
    # on 2 x 2 CTAs, the last column's second program past the end.
    compiled = run_descriptor_matmul_in_the_simulator(rng, 150, 72, 136, ping_pong=True)
    assert (compiled.producer_warps, compiled.programs_per_cta) == (4, 2)
    assert ".maxntid 384, 1, 1" in compiled.ptx


def test_clustered_matmul_in_the_simulator(rng):
    # Thread-block clusters of 2: the programs of a cluster take vertically
    # adjacent tiles and multicast B's blocks (tl::multicast), each CTA
    # fetching half of the rows into both; 4 programs over 2 x 3 tiles.
    bf16 = ml_dtypes.bfloat16
    M, N, K = 200, 136, 96
    a, b = rand(rng, (M, K), bf16), rand(rng, (K, N), bf16)
    args = (a, b, poisoned((M, N), bf16), M, N, K)
    options = dict(BM=64, BN=64, BK=32, GROUP_M=2, chip="sm_90a", warp_specialize=True, cluster_size=2)
    examples.matmul_persistent_cluster[(4,)](*args, **options, backend="sim")
    rtol, atol = tegula.testing.default_tolerance(bf16)
    assert_close(args[2], a.astype(np.float64) @ b.astype(np.float64), rtol=rtol, atol=atol * 4)
    compiled = examples.matmul_persistent_cluster.compile(*args, **options, assemble=False)
    assert compiled.cluster_size == 2
    assert ".reqnctapercluster 2, 1, 1" in compiled.ptx
    # Clusters are consecutive program ids: the grid must hold whole ones.
    with pytest.raises(tegula.Error, match="grid.x = 3 is not a multiple of cluster_size 2"):
        examples.matmul_persistent_cluster[(3,)](*args, **options, backend="interp")


@pytest.mark.parametrize("backend", ["interp", "sim"])
def test_stream_k_matmul(rng, backend):
    # 3 x 2 tiles' 5 K steps over 7 programs: runs that start and end inside
    # tiles, each split tile added up by its last arrival; warp specialised
    # in the simulator (sm_90a). The counters end at zero for the next launch.
    bf16 = ml_dtypes.bfloat16
    M, N, K, BM, BN, programs = 150, 128, 160, 64, 64, 7
    a, b = rand(rng, (M, K), bf16), rand(rng, (K, N), bf16)
    partials = np.full(2 * programs * BM * BN, np.nan, np.float32)
    arrivals = np.zeros(3 * 2, np.int32)
    c = poisoned((M, N), bf16)
    options = dict(BM=BM, BN=BN, BK=32, GROUP_M=2)
    if backend == "sim":
        options.update(chip="sm_90a", warp_specialize=True)
    examples.matmul_stream_k[(programs,)](a, b, c, partials, arrivals, M, N, K, **options, backend=backend)
    rtol, atol = tegula.testing.default_tolerance(bf16)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=rtol, atol=atol * 4)
    assert not arrivals.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_transpose_and_row_sum(rng, backend):
    M, N = 37, 50
    x = rand(rng, (M, N), np.float32)
    out = poisoned((N, M), np.float32)
    examples.transpose[(tegula.cdiv(M, 16), tegula.cdiv(N, 16))](x, out, M, N, BM=16, BN=16, backend=backend)
    np.testing.assert_array_equal(out, x.T)
    sums = np.zeros(M, dtype=np.float32)
    examples.row_sum_atomic[(M, tegula.cdiv(N, 16))](x, sums, N, BLOCK=16, backend=backend)
    assert_close(sums, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dropout(rng, backend):
    n, p = 5000, 0.25
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)  # no zeros: a zero output was dropped
    out, again = poisoned((n,), np.float32), poisoned((n,), np.float32)
    examples.dropout[(tegula.cdiv(n, 1024),)](x, out, n, p, 42, BLOCK=1024, backend=backend)
    examples.dropout[(tegula.cdiv(n, 128),)](x, again, n, p, 42, BLOCK=128, backend=backend)
    np.testing.assert_array_equal(out, again)  # the mask comes from (seed, index) alone
    kept = out != 0
    assert abs(kept.mean() - (1 - p)) < 0.05
    assert_close(out[kept], x[kept] / np.float32(1 - p))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
def test_attention(rng, backend, causal):
    heads, seq, dim = 2, 50, 32
    q, k, v = (rand(rng, (heads, seq, dim), ml_dtypes.bfloat16) for _ in range(3))
    out = poisoned((heads, seq, dim), ml_dtypes.bfloat16)
    scale = 1 / math.sqrt(dim)
    examples.attention_fwd[(tegula.cdiv(seq, 32), heads)](
        q, k, v, out, seq, scale, D=dim, BM=32, BN=16, causal=causal, backend=backend)
    qf, kf, vf = (t.astype(np.float64) for t in (q, k, v))
    s = qf @ kf.transpose(0, 2, 1) * scale
    if causal:
        s = np.where(np.tril(np.ones((seq, seq), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    assert_close(out, (p / p.sum(axis=2, keepdims=True)) @ vf, rtol=2e-2, atol=2e-2)
