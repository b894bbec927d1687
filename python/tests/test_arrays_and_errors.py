"""Arrays through every protocol Tegula reads, and every refusal as a clear
Python exception naming the parameter - never a crash."""
import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (bfloat16 arrays) is not installed")

import tegula
from tegula import examples


class DLPackOnly:
    """An array that offers only DLPack (as torch's CPU tensors do)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def add(x, y, out, n, **kw):
    examples.vector_add[(tegula.cdiv(n, 128),)](x, y, out, n, BLOCK=128, **kw)


def test_dlpack_round_trip(rng):
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    add(DLPackOnly(x), DLPackOnly(y), DLPackOnly(out), n)
    np.testing.assert_array_equal(out, x + y)  # written through the DLPack view, no copy


def test_bfloat16_through_ml_dtypes(rng):
    x = rng.uniform(-3, 3, size=(2, 64)).astype(ml_dtypes.bfloat16)
    out = np.zeros_like(x)
    examples.softmax[(2,)](x, out, 64, BLOCK=64)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(out.astype(np.float32).sum(axis=1), 1.0, rtol=2e-2)


def test_a_stream_is_accepted_and_ignored_on_the_cpu(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    add(x, x, out, 64, stream=0)
    add(x, x, out, 64, stream=None)
    np.testing.assert_array_equal(out, 2 * x)


def test_numpy_scalars_and_keywords(rng):
    n = np.int64(100)
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros_like(x)
    examples.vector_add[lambda m: (tegula.cdiv(m["n"], m["BLOCK"]),)](
        x=x, y=x, out=out, n=n, BLOCK=np.int32(64))
    np.testing.assert_array_equal(out, 2 * x)
    examples.vector_add[(2,)](x, x, out, np.array(100), BLOCK=64)  # a 0-d array is a scalar
    np.testing.assert_array_equal(out, 2 * x)


def test_an_empty_grid_runs_nothing():
    # As in Triton: no elements, cdiv(0, BLOCK) = 0 programs, no launch;
    # the arguments are still checked.
    x = np.zeros(0, np.float32)
    out = np.zeros(0, np.float32)
    examples.vector_add[(tegula.cdiv(0, 128),)](x, x, out, 0, BLOCK=128)
    examples.vector_add[lambda meta: (1, 0)](x, x, out, 0, BLOCK=128)
    with pytest.raises(TypeError):
        examples.vector_add[(0,)](x.astype(np.int32), x, out, 0, BLOCK=128)


def test_each_error_names_the_problem():
    x = np.zeros(64, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    cases = [
        (lambda: add(x, x, None, 64), TypeError, "argument 'out' (#2) of kernel 'vector_add' expects an array, got None"),
        (lambda: add(x, x[::2], out, 32), ValueError, "argument 'y' (#1) of kernel 'vector_add': the array is not contiguous"),
        (lambda: add(x, x, out.astype(np.float64), 64), TypeError, "expects an array of f32, got one of float64"),
        (lambda: add(x, x, out.astype(np.uint8), 64), TypeError, "arrays of uint8 are not supported"),
        (lambda: add(x, x, [0.0] * 64, 64), TypeError, "expects an array (numpy, or anything with __dlpack__"),
        (lambda: add(x, x, out, 64.5), TypeError, "argument 'n' (#3) of kernel 'vector_add' expects an int, got the float 64.5"),
        (lambda: examples.vector_add[(1,)](x, x, out, 2**40, BLOCK=8), tegula.Error, "does not fit in i32"),
        (lambda: examples.vector_add[(1,)](x, x, out, "64", BLOCK=8), TypeError, "expects an int, got str"),
        (lambda: examples.vector_add[(1,)](x, x, out, np.array([64]), BLOCK=8), TypeError,
         "argument 'n' (#3) of kernel 'vector_add' expects an int, got a 1-d array of shape (1,)"),
        (lambda: examples.dropout[(1,)](x, out, 64, 1e300, 1, BLOCK=64), tegula.Error,
         "argument 'p' (#3) of kernel 'dropout' is 1e+300, which rounds past the largest finite f32"),
        (lambda: examples.vector_add[(1,)](x, x, out, 64), TypeError, "missing argument 'BLOCK' (#4)"),
        (lambda: examples.vector_add[(1,)](x, x, out, 64, BLOCK=8, BLOK=8), TypeError, "has no parameter 'BLOK'"),
        (lambda: examples.vector_add[(1,)](x, x, out, 64, 8, BLOCK=8), TypeError, "got two values for 'BLOCK'"),
        (lambda: examples.vector_add[(1, 1, 1, 1)](x, x, out, 64, BLOCK=8), ValueError, "1 to 3 dimensions"),
        (lambda: examples.vector_add["x"](x, x, out, 64, BLOCK=8), TypeError, "the grid is a tuple"),
        (lambda: examples.vector_add[(1, 70000)](x, x, out, 64, BLOCK=8), ValueError,
         "the grid (1, 70000) is larger than a GPU launches (x up to 2147483647, y and z up to 65535)"),
        (lambda: add(x, x, out, 64, backend="cuda-please"), tegula.Error, "unknown backend 'cuda-please'"),
        (lambda: examples.softmax[(1,)](x.astype(np.int32), out, 10, BLOCK=16), TypeError,
         "has no instantiation for arrays of (int32, float32)"),
        (lambda: add(x, x, out, 64, stream="s"), TypeError, "stream= takes an int"),
        (lambda: add(x.astype(">f4"), x, out, 64), TypeError,
         "argument 'x' (#0) of kernel 'vector_add': the array's elements are in the other byte order (>f4)"),
        (lambda: add(x, x, out.astype(">f4"), 64), TypeError, "argument 'out' (#2)"),
        (lambda: add(x, x, out, 64, backend="sim", chip="banana"), tegula.Error,
         "chip 'banana' is not one Tegula compiles for"),
        (lambda: add(x, x, out, 64, backend="interp", chip="sm_99"), tegula.Error,
         "chip 'sm_99' is not one Tegula compiles for"),
        (lambda: add(x, x, out, 64, num_warps="4"), TypeError, "num_warps= takes an int, got str '4'"),
        (lambda: add(x, x, out, 64, num_warps=4.0), TypeError, "num_warps= takes an int, got float 4.0"),
        (lambda: add(x, x, out, 64, num_warps=2**40), ValueError, "num_warps=1099511627776 is out of range"),
        (lambda: add(x, x, out, 64, warp_specialize="yes"), TypeError, "warp_specialize= takes True or False"),
        (lambda: add(x, x, out, 64, ping_pong=2**70), TypeError, "ping_pong= takes True or False"),
        (lambda: add(x, x, out, 64, chip=90), TypeError, "chip= takes a str, got 90"),
        (lambda: add(x, x, out, 64, backend=1), TypeError, "backend= takes a str"),
        (lambda: add(x, x, out, 64, stream=-1), ValueError, "stream=-1 is not a CUstream handle"),
        (lambda: examples.vector_add[(64 / 8,)](x, x, out, 64, BLOCK=8), TypeError,
         "kernel 'vector_add': grid dimension 0 is the float 8.0, not an int (divide with tegula.cdiv(n, BLOCK))"),
        (lambda: examples.vector_add[(1, None)](x, x, out, 64, BLOCK=8), TypeError,
         "grid dimension 1 is the value None, not an int"),
        (lambda: examples.vector_add[(2**70,)](x, x, out, 64, BLOCK=8), ValueError, "is out of range"),
        (lambda: examples.vector_add.compile(x, x, out, 64, BLOCK=8, chip=80), TypeError, "chip= takes a str"),
        (lambda: examples.vector_add.compile(x, x, out, 64, BLOCK=8, cluster_size="2"), TypeError,
         "cluster_size= takes an int"),
        (lambda: add(x, x, out, 64, num_warps=3), tegula.Error, "num_warps is 1, 2, 4, 8, 16 or 32"),
        (lambda: add(x, x, out, 64, num_stages=0), tegula.Error, "num_stages is 1 (no software pipelining) or more"),
    ]
    examples.vector_add[np.int64(1)](x, x, out, 8, BLOCK=8)  # any integer is a one-dimensional grid
    for call, kind, message in cases:
        with pytest.raises(kind) as info:
            call()
        assert message in str(info.value), (message, str(info.value))


@pytest.mark.parametrize("backend", ["interp", "sim"])
def test_a_view_at_a_byte_offset_is_refused(backend):
    # float32 at byte 2 of a buffer: the GPU faults on it, so every backend
    # refuses it at the launch (the interpreter read it before).
    raw = np.zeros(4 * 64 + 8, dtype=np.uint8)
    x = np.frombuffer(raw, dtype=np.float32, offset=2, count=64)
    y, out = np.ones(64, np.float32), np.empty(64, np.float32)
    with pytest.raises(tegula.Error, match=r"argument 'x' \(#0\) of kernel 'vector_add' starts at address 0x[0-9a-f]+, "
                                           r"which is not a multiple of its 4-byte f32 elements"):
        examples.vector_add[(1,)](x, y, out, 64, BLOCK=64, backend=backend)
    # A view at a whole element (not 16-byte aligned) is fine.
    z = np.arange(65, dtype=np.float32)[1:]
    examples.vector_add[(1,)](z, y, out, 64, BLOCK=64, backend=backend)
    np.testing.assert_array_equal(out, z + 1)


def test_a_kernel_writing_to_a_read_only_array_is_refused():
    x = np.zeros(64, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    out.flags.writeable = False
    with pytest.raises(tegula.Error, match="read-only"):
        add(x, x, out, 64)


def test_errors_from_the_dsl_keep_the_cpp_location():
    x = np.zeros(64, dtype=np.float32)
    with pytest.raises(tegula.Error) as info:  # arange needs a power-of-two extent
        examples.vector_add[(1,)](x, x, x, 64, BLOCK=100)
    assert "kernels.h:" in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_device_arrays_need_the_gpu_backend():
    class FakeDeviceArray:  # what cupy and torch CUDA tensors look like
        __cuda_array_interface__ = {"data": (0x1000, False), "shape": (64,), "typestr": "<f4",
                                    "strides": None, "version": 3}
    x = np.zeros(64, dtype=np.float32)
    with pytest.raises(tegula.Error, match="in device memory"):
        add(x, x, FakeDeviceArray(), 64, backend="interp")


def test_torch_tensors():
    torch = pytest.importorskip("torch", reason="torch is not installed (CI does not download it)")
    x = torch.randn(300)
    out = torch.zeros(300)
    add(x, x, out, 300)
    assert torch.equal(out, 2 * x)


def test_torch_cuda_tensors_on_torchs_stream():
    torch = pytest.importorskip("torch", reason="torch is not installed (CI does not download it)")
    ok, why = tegula.gpu_available()
    if not ok or not torch.cuda.is_available():
        pytest.skip(f"no GPU: {why}")
    x = torch.randn(1 << 20, device="cuda")
    out = torch.zeros_like(x)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # the launch joins torch's current stream
        y = x * 3
        add(y, y, out, y.numel(), backend="gpu")
        z = out + 1
    side.synchronize()
    assert torch.equal(z, 2 * y + 1)
    add(x, x, out, x.numel(), backend="gpu", stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert torch.equal(out, 2 * x)


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    ok, why = tegula.gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    x = cupy.arange(300, dtype=cupy.float32)
    out = cupy.zeros(300, dtype=cupy.float32)
    add(x, x, out, 300, backend="gpu")
    assert bool((out == 2 * x).all())


def test_do_bench_needs_a_gpu_or_times_one():
    x = np.zeros(1 << 16, dtype=np.float32)
    ok, _ = tegula.gpu_available()
    run = lambda: add(x, x, x, x.size, backend="gpu")
    if not ok:
        with pytest.raises(tegula.Error, match="driver"):
            tegula.testing.do_bench(run)
        return
    median, low, high = tegula.testing.do_bench(run, quantiles=[0.5, 0.2, 0.8], flush_l2=True)
    assert 0 < low <= median <= high


@pytest.mark.parametrize("fmt, largest", [("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0)])
def test_fp8_through_ml_dtypes(rng, fmt, largest):
    """f32 -> fp8 (scaled) in a kernel matches ml_dtypes' own conversion, bit
    for bit, inside the range; beyond it Tegula saturates (ml_dtypes gives
    NaN or Inf there); back to f32 is exact."""
    f8 = getattr(ml_dtypes, fmt)
    n = 1000
    x = rng.uniform(-1, 1, size=n).astype(np.float32)
    scale = np.float32(largest / 2)  # |x * scale| <= largest / 2
    q = np.zeros(n, dtype=f8)
    examples.quantize_fp8[(tegula.cdiv(n, 256),)](x, q, scale, n, BLOCK=256)
    want = (x * scale).astype(f8)
    np.testing.assert_array_equal(q.view(np.uint8), want.view(np.uint8))
    back = np.zeros(n, dtype=np.float32)
    examples.dequantize_fp8[(tegula.cdiv(n, 256),)](q, back, scale, n, BLOCK=256)
    np.testing.assert_array_equal(back, q.astype(np.float32) / scale)
    # Saturation: twice the largest value is the largest value.
    big = np.full(4, 2 * largest, dtype=np.float32)
    q4 = np.zeros(4, dtype=f8)
    examples.quantize_fp8[(1,)](big, q4, np.float32(1.0), 4, BLOCK=4)
    assert q4.astype(np.float32).tolist() == [largest] * 4
