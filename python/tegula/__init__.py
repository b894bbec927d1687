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
from ._tegula import AutotunedLauncher, Autotuner, CompiledKernel, Config, Error, Kernel, Launcher, gpu_available
from ._build import load
from . import testing

__all__ = ["AutotunedLauncher", "Autotuner", "CompiledKernel", "Config", "Error", "Kernel", "Launcher", "autotune", "cdiv",
           "gpu_available", "load", "testing"]


def autotune(kernel: Kernel, configs, key=(), *, restore=(), warmup: int = 2, rep: int = 10,
             measure=None, cache: bool = True, verbose: bool = False) -> Autotuner:
    """``kernel`` launched with the fastest of ``configs`` (:class:`tegula.Config`)::

        matmul = tegula.autotune(examples.matmul, [
            tegula.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=4, num_stages=4),
            tegula.Config({"BM": 128, "BN": 256, "BK": 64}, num_warps=8, num_stages=3),
        ], key=["M", "N", "K"])
        grid = lambda meta: (tegula.cdiv(meta["M"], meta["BM"]), tegula.cdiv(meta["N"], meta["BN"]))
        matmul[grid](a, b, c, M, N, K, backend="gpu")   # no BM, BN, BK: a config gives them

    The first launch for a key - the values of the ``key`` parameters, the
    arrays' element types, and where it runs (device, chip, code switches) -
    launches every config ``warmup`` times, then times ``rep`` launches each
    with CUDA events on the launch's stream, and keeps the fastest (median);
    later launches with that key go straight to it, and so does the next
    process (the choices are kept under ``$TEGULA_CACHE_DIR/autotune``, unless
    ``cache=False``). A config that fails to compile or launch is skipped (its
    error is in :meth:`Autotuner.trials`); when none runs, tegula.Error lists
    each one's. ``restore`` names arrays the kernel reads and writes: they are
    put back after each config, so the real launch sees what was passed.

    The interpreter and the simulator run the first config without timing
    (their speed says nothing about a GPU's), unless ``measure(config, run)``
    is given: it calls ``run()`` to launch the config and returns its time in
    milliseconds, on any backend (``warmup`` and ``rep`` are then its
    business). Host (numpy) arrays are staged to the GPU on every launch, so
    their copies are timed too: tune on device arrays (torch, cupy). ``verbose`` (or TEGULA_AUTOTUNE_VERBOSE=1)
    prints each config's time.
    """
    for name, names in (("key", key), ("restore", restore)):
        if isinstance(names, (str, bytes)):
            raise TypeError(f"tegula.autotune: {name} is a list of parameter names, not the string {names!r}")
    return Autotuner(kernel, list(configs), list(key), list(restore), warmup, rep, measure, cache,
                     verbose)


class _KernelDoc:
    """``Kernel.__doc__``: on a kernel its own - its parameters, each
    instantiation's types and how to launch it (``help(k)``, IPython's
    ``k?``) - and on the class the class's."""

    def __init__(self, class_doc: str):
        self._class_doc = class_doc

    def __get__(self, kernel, owner=None):
        if kernel is None:
            return self._class_doc
        names = kernel.param_names
        # A constant in every instantiation is passed by keyword.
        constant = [all(types[i].startswith("constexpr") for types in kernel.signatures) for i in range(len(names))]
        call = [f"{n}=..." if c else n for n, c in zip(names, constant)]
        lines = [f"{kernel.name}[grid]({', '.join(call)}, num_warps=4, num_stages=3, backend=None, ...)", "",
                 f"Tegula kernel '{kernel.name}'; its instantiations (array parameters '*dtype', "
                 "compile-time constants 'constexpr', passed by keyword):"]
        for types in kernel.signatures:
            lines.append(f"    {kernel.name}({', '.join(f'{n}: {t}' for n, t in zip(names, types))})")
        return "\n".join(lines) + "\n\n" + self._class_doc


Kernel.__doc__ = _KernelDoc(Kernel.__doc__)


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of blocks of ``b`` that cover ``a``."""
    return -(-a // b)


def __getattr__(name):
    # tegula.examples (every example kernel) and tegula.gpt load on first use.
    if name in ("examples", "gpt"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'tegula' has no attribute {name!r}")
