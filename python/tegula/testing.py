"""Helpers for testing kernels: comparing results with tolerances, timing
them (do_bench) and seeing where GPU time goes (profile)."""
from __future__ import annotations

import numpy as np

__all__ = ["assert_close", "default_tolerance", "do_bench", "profile"]

_TOLERANCES = {  # (rtol, atol) per element type, as the C++ tests use
    "float64": (1e-12, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    # fp8: half an ulp of 3 (e4m3) or 2 (e5m2) mantissa bits, as a result
    # rounded to the type once is off by.
    "float8_e4m3fn": (6.25e-2, 1e-2),
    "float8_e5m2": (1.25e-1, 1e-2),
}


def default_tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for results of ``dtype`` (exact for integers and bool)."""
    return _TOLERANCES.get(np.dtype(dtype).name, (0.0, 0.0))


def _as_numpy(x):
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__") and not hasattr(x, "__cuda_array_interface__"):
        return np.from_dlpack(x)
    if hasattr(x, "get"):  # cupy
        return x.get()
    if hasattr(x, "cpu"):  # torch CUDA tensors
        return x.cpu().numpy()
    return np.asarray(x)


def _index(flat, shape):
    """The index of flat element `flat` as a tuple of ints (printed as numpy 1 did)."""
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def assert_close(actual, expected, rtol: float | None = None, atol: float | None = None):
    """Asserts |actual - expected| <= atol + rtol * |expected| elementwise.

    Shapes must match; a NaN in ``actual`` fails unless ``expected`` has a NaN
    there, and an infinity in either must be the same infinity in the other (as
    torch.testing.assert_close). Integer and bool arrays are compared as
    integers (exactly at any width, 64-bit included). Complex arrays and NaN or
    negative tolerances are refused. The default tolerances follow ``actual``'s
    dtype. The message names the worst element, its index and both values.
    """
    a = _as_numpy(actual)
    e = _as_numpy(expected)
    if a.shape != e.shape:
        raise AssertionError(f"shapes differ: actual {a.shape}, expected {e.shape}")
    for name, array in (("actual", a), ("expected", e)):
        if np.iscomplexobj(array):
            raise TypeError(f"assert_close compares real arrays; {name} is {array.dtype}")
    d_rtol, d_atol = default_tolerance(a.dtype)
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not np.isfinite(value) or value < 0:  # a NaN bound would pass everything
            raise ValueError(f"assert_close: {name} must be a finite number >= 0, got {value!r}")
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        # Integers (and bools) as Python ints: exact at any width, where
        # float64 would take 2**62 + 1 for 2**62.
        ai, ei = a.astype(object), e.astype(object)
        err = np.abs(ai - ei)
        bad = err > atol + rtol * np.abs(ei)
        if np.any(bad):
            i = _index(np.argmax(bad.astype(bool)), a.shape)
            raise AssertionError(
                f"{int(bad.sum())} of {a.size} elements differ beyond rtol={rtol}, atol={atol}; "
                f"first at {i}: actual {ai[i]!r}, expected {ei[i]!r} (|diff| {err[i]})")
        return
    a64 = a.astype(np.float64)
    e64 = e.astype(np.float64)
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    if np.any(nan_a != nan_e):
        i = _index(np.argmax(nan_a != nan_e), a.shape)
        raise AssertionError(f"NaN mismatch at {i}: actual {float(a64[i])!r}, expected {float(e64[i])!r}")
    inf_a, inf_e = np.isinf(a64), np.isinf(e64)
    inf_bad = (inf_a | inf_e) & ~(inf_a & inf_e & (a64 == e64))
    if np.any(inf_bad):
        i = _index(np.argmax(inf_bad), a.shape)
        raise AssertionError(
            f"{int(inf_bad.sum())} of {a.size} elements differ in their infinities; "
            f"first at {i}: actual {float(a64[i])!r}, expected {float(e64[i])!r}")
    with np.errstate(invalid="ignore"):  # inf - inf, masked out
        err = np.where(nan_a | inf_a, 0.0, np.abs(a64 - e64))
    bound = atol + rtol * np.abs(np.where(nan_e | inf_e, 0.0, e64))
    bad = err > bound
    if np.any(bad):
        i = _index(np.argmax(np.where(bad, err - bound, -np.inf)), a.shape)
        raise AssertionError(
            f"{int(bad.sum())} of {a.size} elements differ beyond rtol={rtol}, atol={atol}; "
            f"worst at {i}: actual {float(a64[i])!r}, expected {float(e64[i])!r} (|diff| {err[i]:.3g})")


def do_bench(fn, warmup: int = 3, rep: int = 20, quantiles=None, flush_l2: bool = False):
    """GPU time of ``fn()`` (which launches on the GPU) in milliseconds.

    Each of ``rep`` calls, after ``warmup`` untimed ones, is timed with a pair of
    CUDA events on the stream Tegula launches on; returns the median, or the
    given ``quantiles`` (e.g. ``[0.5, 0.2, 0.8]``) of the per-call times.
    ``flush_l2`` overwrites a 256 MiB buffer before each call so that it starts
    from a cold L2. Raises tegula.Error without a GPU.
    """
    from ._tegula import _DeviceBytes, _Event

    if rep < 1:
        raise ValueError("do_bench: rep must be at least 1")
    flush = _DeviceBytes(256 << 20) if flush_l2 else None
    for _ in range(warmup):
        fn()
    pairs = []
    for _ in range(rep):
        if flush is not None:
            flush.fill(0)
        start, end = _Event(), _Event()
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    pairs[-1][1].synchronize()
    times = np.array([end.elapsed_ms(start) for start, end in pairs])
    if quantiles is None:
        return float(np.median(times))
    return [float(q) for q in np.quantile(times, quantiles)]


class profile:
    """GPU time per kernel of the launches made inside ``with``::

        with tegula.testing.profile() as p:
            model_step()
        for kernel, calls, ms in p.kernels:  # most GPU time first
            print(f"{kernel:30} {calls:5} {ms:8.3f} ms")

    Every GPU launch is bracketed by two events on its stream (launches stay
    asynchronous); leaving the block waits for them. Interpreter and
    simulator launches are not timed.
    """

    def __init__(self):
        self.kernels: list[tuple[str, int, float]] = []

    def __enter__(self) -> "profile":
        from . import _tegula
        _tegula.kernel_profile()  # forget launches timed before
        _tegula.profile_kernels(True)
        return self

    def __exit__(self, *exc) -> bool:
        from . import _tegula
        _tegula.profile_kernels(False)
        self.kernels = _tegula.kernel_profile()
        return False
