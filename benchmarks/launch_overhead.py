#!/usr/bin/env python3
"""Host cost of one launch from Python: tegula.examples.vector_add, 1 program,
on device arrays (torch or cupy; else arrays that only have
__cuda_array_interface__, over tegula's own device memory), in a host loop -
next to Triton's when it is importable (the same 1-program add). The C++
figure: build/bin/launch-overhead. Prints "skipped: ..." and exits 0 without
tegula or a GPU. With TEGULA_CUDA_DRIVER=build/lib/libtegula-fake-cuda.so and
TEGULA_FAKE_CUDA_RECORD=0 it measures Tegula's own share (the fake driver
runs nothing), on a machine without a GPU.

    PYTHONPATH=build/python python3 benchmarks/launch_overhead.py [--launches 2000]
"""
import argparse
import sys
import time


def per_launch_us(launch, launches, sync):
    for _ in range(20):
        launch()
    sync()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(launches):
            launch()
        sync()
        best = min(best, (time.perf_counter() - start) / launches * 1e6)
    return best


class CaiArray:
    """float32 device memory known by __cuda_array_interface__ alone, as any
    array library would hand it over."""

    def __init__(self, n):
        from tegula._tegula import _DeviceBytes
        self._memory = _DeviceBytes(4 * n)
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "strides": None,
                                         "data": (self._memory.ptr, False), "version": 3}


def wait_for_gpu():
    from tegula._tegula import _Event
    done = _Event()
    done.record()
    done.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=2000)
    args = parser.parse_args()
    try:
        import tegula
        from tegula import examples
    except ImportError as e:
        print(f"skipped: the tegula package does not import here ({e})")
        return 0
    ok, why = tegula.gpu_available()
    if not ok:
        print(f"skipped: no GPU: {why}")
        return 0
    try:
        import torch
        x, y, out = (torch.zeros(1024, device="cuda") for _ in range(3))
        sync, lib = torch.cuda.synchronize, f"torch {torch.__version__}"
    except ImportError:
        try:
            import cupy
            x, y, out = (cupy.zeros(1024, dtype=cupy.float32) for _ in range(3))
            sync, lib = cupy.cuda.Device().synchronize, f"cupy {cupy.__version__}"
        except ImportError:
            x, y, out = (CaiArray(1024) for _ in range(3))
            sync, lib = wait_for_gpu, "__cuda_array_interface__"
    print(f"# launch overhead from Python: 1 program of 1024, {lib} device arrays, "
          f"best of 3 loops of {args.launches}")
    launcher = examples.vector_add[(1,)]
    us = per_launch_us(lambda: launcher(x, y, out, 1024, BLOCK=1024, backend="gpu"),
                       args.launches, sync)
    print(f"launch_overhead_python_tegula us per launch {us:.2f}")
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

        us = per_launch_us(lambda: add[(1,)](x, y, out, 1024, BLOCK=1024), args.launches, sync)
        print(f"launch_overhead_python_triton_{triton.__version__.replace('.', '_')} us per launch {us:.2f}")
    except ImportError:
        print("triton: not importable here")
    return 0


if __name__ == "__main__":
    sys.exit(main())
