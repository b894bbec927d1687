"""Tegula: a tile-language GPU compiler whose kernels are written in C++.

Kernels are C++ functions in Tegula's DSL (``tegula/tl.h``), published to
Python by a kernel module (``TEGULA_PYTHON_MODULE`` in ``tegula/python.h``),
built by CMake (``tegula_add_python_module``) or at run time by
:func:`tegula.load`. Each kernel is a :class:`tegula.Kernel`, launched like a
Triton kernel::

    import numpy as np
    import tegula
    from tegula import examples

    x = np.random.rand(1000).astype(np.float32)
    y = np.random.rand(1000).astype(np.float32)
    out = np.empty_like(x)
    examples.vector_add[(tegula.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)

``backend="interp"`` (the default, or ``$TEGULA_BACKEND``) runs the tile IR
on the CPU, ``"sim"`` the compiled GPU code on the CPU, ``"gpu"`` the GPU.
"""
from ._tegula import CompiledKernel, Error, Kernel, Launcher, gpu_available
from ._build import load
from . import testing

__all__ = ["CompiledKernel", "Error", "Kernel", "Launcher", "cdiv", "gpu_available", "load",
           "testing"]


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of blocks of ``b`` that cover ``a``."""
    return -(-a // b)


def __getattr__(name):
    # tegula.examples (every example kernel) and tegula.gpt load on first use.
    if name in ("examples", "gpt"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'tegula' has no attribute {name!r}")
