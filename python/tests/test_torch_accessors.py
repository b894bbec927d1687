"""torch tensors are read through their C accessors (data_ptr, dtype, is_cuda,
is_contiguous, numel; the stream through torch._C._cuda_getCurrentRawStream),
not through __cuda_array_interface__ / __dlpack__, which torch implements in
Python (41 us a launch of three tensors on an H100, 2026-11-26). Where torch is
not importable (CI) a stand-in module named torch, with the attributes Tegula
reads, checks the logic; with torch, test_arrays_and_errors' torch cases run
the real thing."""
import importlib.util
import sys
import types

import numpy as np
import pytest

import tegula
from tegula import examples

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is not None,
                                reason="torch is importable: the real tensors are tested instead")


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class _Device:
    def __init__(self, kind):
        self.type = kind

    def __str__(self):
        return self.type


def _stand_in_torch():
    torch = types.ModuleType("torch")
    for name in ("float32", "float16", "bfloat16", "float64", "int32", "int64", "int8", "int16", "bool",
                 "uint8"):
        setattr(torch, name, _Dtype(name))
    numpy_dtypes = {np.float32: torch.float32, np.int32: torch.int32, np.uint8: torch.uint8}
    streams = []

    class Tensor:
        """Host memory of a numpy array, described as torch describes a tensor."""

        def __init__(self, array, device="cpu", contiguous=True):
            self.array, self.dtype = array, numpy_dtypes[array.dtype.type]
            self.is_cuda, self.is_cpu = device == "cuda", device == "cpu"
            self.device, self._contiguous = _Device(device), contiguous

        def data_ptr(self):
            return self.array.__array_interface__["data"][0]

        def numel(self):
            return self.array.size

        def is_contiguous(self):
            return self._contiguous

        def get_device(self):
            return 3 if self.is_cuda else -1

        @property
        def __cuda_array_interface__(self):
            raise AssertionError("read through __cuda_array_interface__")

        def __dlpack__(self, stream=None):
            raise AssertionError("read through __dlpack__")

    def raw_stream(device):
        streams.append(device)
        return 0x1234

    torch.Tensor = Tensor
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=raw_stream)
    return torch, streams


# One stand-in for the session, as torch is one module: Tegula keeps
# torch.Tensor and the dtypes it first sees.
_TORCH, _STREAMS = _stand_in_torch()


@pytest.fixture
def torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _TORCH)
    _STREAMS.clear()
    _TORCH.streams = _STREAMS
    return _TORCH


def test_host_tensors_are_read_through_their_accessors(torch, rng):
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    out = np.zeros(300, dtype=np.float32)
    examples.vector_add[(3,)](torch.Tensor(x), torch.Tensor(y), torch.Tensor(out), 300, BLOCK=128,
                              backend="interp")
    np.testing.assert_array_equal(out, x + y)


def test_tensor_errors_name_the_parameter(torch):
    x = np.zeros(64, dtype=np.float32)
    add = examples.vector_add[(1,)]
    with pytest.raises(ValueError, match="argument 'y' \\(#1\\) of kernel 'vector_add': the array is not contiguous"):
        add(torch.Tensor(x), torch.Tensor(x, contiguous=False), torch.Tensor(x), 64, BLOCK=64, backend="interp")
    with pytest.raises(TypeError, match="arrays of uint8 are not supported"):
        add(torch.Tensor(x), torch.Tensor(np.zeros(64, np.uint8)), torch.Tensor(x), 64, BLOCK=64, backend="interp")
    with pytest.raises(TypeError, match="expects an array of f32, got one of int32"):
        add(torch.Tensor(x), torch.Tensor(np.zeros(64, np.int32)), torch.Tensor(x), 64, BLOCK=64, backend="interp")
    with pytest.raises(ValueError, match="argument 'x' \\(#0\\) .* the tensor is on meta, which Tegula cannot use"):
        add(torch.Tensor(x, device="meta"), torch.Tensor(x), torch.Tensor(x), 64, BLOCK=64, backend="interp")


def test_a_cuda_tensor_launches_on_torchs_current_stream_of_its_device(torch):
    x = np.zeros(64, dtype=np.float32)
    with pytest.raises(tegula.Error):  # the interpreter refuses device arrays, after the stream is read
        examples.vector_add[(1,)](torch.Tensor(x, device="cuda"), torch.Tensor(x, device="cuda"),
                                  torch.Tensor(x, device="cuda"), 64, BLOCK=64, backend="interp")
    assert torch.streams == [3]
