"""Type stubs for the tegula package (the C++ parts live in tegula._tegula)."""
from os import PathLike
from types import ModuleType
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from . import gpt as gpt
from . import testing as testing

Grid = Union[int, Sequence[int], Callable[[Mapping[str, Any]], Union[int, Sequence[int]]]]

class Error(RuntimeError):
    """An error from Tegula's C++ core; DSL errors name the kernel's file:line."""

class CompiledKernel:
    ptx: str
    cubin: bytes
    registers: int
    shared_bytes: int
    spill_bytes: int
    dynamic_shared_bytes: int
    producer_warps: int
    programs_per_cta: int
    cluster_size: int
    ptxas_log: str
    @property
    def sass(self) -> str:
        """The cubin's machine code (SASS) by nvdisasm; raises Error without a cubin or nvdisasm."""

class Launcher:
    def __call__(self, *args: Any, num_warps: int = 4, num_stages: int = 3,
                 backend: str | None = None, stream: Any = None, chip: str | None = None,
                 warp_specialize: bool = False, ping_pong: bool = False, cluster_size: int = 0,
                 max_registers: int = 0, **constants: Any) -> None: ...

class Kernel:
    name: str
    param_names: list[str]
    signatures: list[list[str]]
    def __getitem__(self, grid: Grid) -> Launcher: ...
    def ir(self, *args: Any, stage: str = "tile", debug_info: bool = False, **constants: Any) -> str: ...
    def compile(self, *args: Any, chip: str = "sm_80", num_warps: int = 4, num_stages: int = 3,
                assemble: bool = True, warp_specialize: bool = False, ping_pong: bool = False, cluster_size: int = 0,
                max_registers: int = 0, **constants: Any) -> CompiledKernel: ...
    def max_resident_programs(self, *args: Any, num_warps: int = 4, num_stages: int = 3,
                              backend: str | None = None, chip: str | None = None, warp_specialize: bool = False,
                              ping_pong: bool = False, cluster_size: int = 0, max_registers: int = 0,
                              **constants: Any) -> int: ...

class Config:
    constants: dict[str, int]
    num_warps: int
    num_stages: int
    warp_specialize: bool
    ping_pong: bool
    cluster_size: int
    max_registers: int
    def __init__(self, constants: Mapping[str, int] = ..., num_warps: int = 4, num_stages: int = 3,
                 warp_specialize: bool = False, ping_pong: bool = False, cluster_size: int = 0,
                 max_registers: int = 0) -> None: ...
    def __getitem__(self, name: str) -> int: ...

class AutotunedLauncher:
    def __call__(self, *args: Any, backend: str | None = None, stream: Any = None,
                 chip: str | None = None, **arguments: Any) -> None: ...

class Autotuner:
    kernel: Kernel
    configs: list[Config]
    def __getitem__(self, grid: Grid) -> AutotunedLauncher: ...
    def best(self, *args: Any, backend: str | None = None, stream: Any = None,
             chip: str | None = None, **arguments: Any) -> Config: ...
    def trials(self, *args: Any, backend: str | None = None, stream: Any = None,
               chip: str | None = None, **arguments: Any) -> list[tuple[Config, float, str | None]]: ...

def autotune(kernel: Kernel, configs: Iterable[Config], key: Iterable[str] = (), *,
             restore: Iterable[str] = (), warmup: int = 2, rep: int = 10,
             measure: Callable[[Config, Callable[[], None]], float] | None = None,
             cache: bool = True, verbose: bool = False) -> Autotuner: ...
def cdiv(a: int, b: int) -> int: ...
def gpu_available() -> tuple[bool, str]: ...
def load(name: str, sources: Union[str, PathLike, Iterable[Union[str, PathLike]]],
         extra_cflags: Iterable[str] = ..., extra_include_paths: Iterable[str] = ...,
         build_directory: Union[str, PathLike, None] = None, verbose: bool = False) -> ModuleType: ...

examples: ModuleType
