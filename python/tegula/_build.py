"""tegula.load: compile a C++ kernel module at run time, cached by content."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from ._tegula import Error

__all__ = ["load"]


def _config():
    from . import _build_config as c  # written by CMake (python/build_config.py.in)
    return c


def _cache_root() -> Path:
    base = os.environ.get("TEGULA_CACHE_DIR")
    root = Path(base) if base else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tegula"
    return root / "python"


def _headers_near(sources: list[Path]) -> list[Path]:
    """Headers beside the sources and Tegula's own: what a change of forces a rebuild."""
    c = _config()
    found = set()
    for directory in {s.parent for s in sources}:
        for pattern in ("*.h", "*.hpp"):
            found.update(directory.glob(pattern))
    for include in c.INCLUDE_DIRS[:1]:  # Tegula's include/ (tegula/*.h)
        found.update(Path(include, "tegula").glob("*.h"))
    return sorted(found)


def load(name: str, sources, extra_cflags=(), extra_include_paths=(), build_directory=None,
         verbose: bool = False):
    """Compiles C++ sources that define ``TEGULA_PYTHON_MODULE(name, ...)`` into an
    extension module, imports it and returns it.

    The build is cached (``$TEGULA_CACHE_DIR/python``, else ``~/.cache/tegula/python``)
    under a hash of the sources, the headers beside them, Tegula's headers, the
    flags and the Python version, so a second call with nothing changed only
    imports. With ``build_directory`` the module is built there as
    ``name-<hash>.so`` (a changed source builds a new file; the stale one is
    removed). CPython imports one extension module a name per process: loading
    changed sources under a name already loaded raises :class:`tegula.Error`. A compile error raises :class:`tegula.Error` with the compiler's
    messages (file:line of the user's code).
    """
    if not name.isidentifier():
        raise ValueError(f"tegula.load: the module name must be a Python identifier, not {name!r}")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    for what, value in (("extra_cflags", extra_cflags), ("extra_include_paths", extra_include_paths)):
        if isinstance(value, (str, bytes)):  # would be split into characters
            raise TypeError(f"tegula.load: {what} is a list of strings, not the string {value!r}")
    srcs = [Path(s).resolve() for s in sources]
    if not srcs:
        raise ValueError("tegula.load: no sources given")
    for s in srcs:
        if not s.is_file():
            raise FileNotFoundError(f"tegula.load: source {s} does not exist")
    # The module's name is TEGULA_PYTHON_MODULE's first argument: a build
    # under another name would compile, then fail to import.
    defined = sorted({m for s in srcs for m in _MODULE_MACRO.findall(s.read_text(errors="replace"))})
    if defined and name not in defined:
        raise Error(f"tegula.load: the sources define TEGULA_PYTHON_MODULE({', '.join(defined)}, ...), not "
                    f"'{name}': the name given to tegula.load must be the module's")
    c = _config()
    if not Path(c.CXX).exists() or not Path(c.INCLUDE_DIRS[0], "tegula", "python.h").exists():
        raise Error(f"tegula.load: this package was built elsewhere: its C++ compiler ({c.CXX}) "
                    f"or Tegula's headers ({c.INCLUDE_DIRS[0]}) are not on this machine")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    includes = [*map(str, extra_include_paths), *c.INCLUDE_DIRS, *c.CUDA_INCLUDE_DIRS]
    flags = [f"-std={c.CXX_STANDARD}", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
             *map(str, extra_cflags)]
    digest = hashlib.sha256()
    for part in [c.CXX, name, suffix, sys.version, *flags, *includes]:
        digest.update(part.encode() + b"\0")
    for f in [*srcs, *_headers_near(srcs)]:
        digest.update(str(f).encode() + b"\0" + f.read_bytes() + b"\0")
    lib = Path(c.LIBRARY_DIR, "libtegula.so")
    if lib.exists():
        digest.update(str(lib.stat().st_mtime_ns).encode())
    key = digest.hexdigest()[:16]
    if build_directory:
        # The digest in the file's name: a changed source builds (and, in
        # this process, loads) a new file instead of importing the old one.
        out_dir = Path(build_directory)
        target = out_dir / f"{name}-{key}{suffix}"
    else:
        out_dir = _cache_root() / f"{name}-{key}"
        target = out_dir / f"{name}{suffix}"
    if not target.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, suffix=suffix, delete=False) as tmp:
            partial = Path(tmp.name)
        cmd = [c.CXX, *flags, *(f"-I{i}" for i in includes if i), *map(str, srcs),
               f"-L{c.LIBRARY_DIR}", *(f"-l{l}" for l in c.LIBRARIES),
               f"-Wl,-rpath,{c.LIBRARY_DIR}", "-o", str(partial)]
        if verbose:
            print("[tegula.load]", " ".join(cmd), file=sys.stderr)
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            raise Error(f"tegula.load: compiling module '{name}' failed:\n{result.stderr.strip()}")
        os.replace(partial, target)  # atomic: concurrent loads see all or nothing
        if build_directory:  # earlier builds of this module there are stale now
            for old in out_dir.glob(f"{name}-*{suffix}"):
                if old != target and len(old.name) == len(target.name):
                    old.unlink(missing_ok=True)
    if name in _imported:
        if _imported[name][0] == key:
            return _imported[name][1]
        # CPython keeps one extension module a name for the process: it would
        # hand back the old one whatever the new file holds.
        raise Error(f"tegula.load: module '{name}' was imported in this process from other sources (or "
                    f"flags); Python cannot import a second extension module of that name - load the "
                    f"changed one under another name, or in a new process")
    spec = importlib.util.spec_from_file_location(name, target)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:  # the module's kernel registrations fail here (their file:line first)
        raise Error(f"tegula.load: module '{name}' was built but importing it failed: {e}") from e
    _imported[name] = (key, module)
    return module


_MODULE_MACRO = re.compile(r"^\s*TEGULA_PYTHON_MODULE\s*\(\s*(\w+)", re.MULTILINE)
_imported: dict = {}  # name -> (the build's hash, the module) imported in this process
