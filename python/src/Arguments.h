//===- Arguments.h - Python objects as kernel launch arguments -*- C++ -*-===//
//
// Arrays (numpy and anything with the buffer-free array protocols: DLPack's
// __dlpack__, CUDA's __cuda_array_interface__) and Python numbers become
// tegula::Arg, checked against the parameter they are passed for; every
// refusal is a Python exception that names the parameter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/kernel.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tegula::python {

/// What a launch must keep alive until the kernel has run (DLPack capsules
/// are consumed: their deleter runs when this goes away).
class ArgumentLifetimes {
public:
  ArgumentLifetimes() = default;
  ArgumentLifetimes(const ArgumentLifetimes &) = delete;
  ArgumentLifetimes &operator=(const ArgumentLifetimes &) = delete;
  ~ArgumentLifetimes();
  void keep(pybind11::object o) { objects_.push_back(std::move(o)); }
  void consumed(void *managedTensor) { dlpack_.push_back(managedTensor); }

private:
  std::vector<pybind11::object> objects_;
  std::vector<void *> dlpack_;
};

/// An array argument before conversion: where it lives and its element type
/// (for overload resolution), read without copying.
struct ArrayView {
  std::optional<DType> dtype; // none: an element type Tegula has not
  std::string dtype_name;     // as the array library spells it
  bool on_device = false;
  uint64_t address = 0;
  size_t count = 0;
  bool readonly = false;
};

/// Which argument of which kernel, for errors: formatted only when one is
/// raised (launches are a hot path).
struct ArgName {
  std::string_view kernel, param;
  size_t index = 0;
  /// "argument 'x' (#0) of kernel 'vector_add'"
  std::string text() const;
};

/// An interned Python string for `name`, a new reference the caller keeps
/// for the process (a static): attribute and keyword names looked up on
/// every launch, their hash computed once.
PyObject *interned(const char *name);

/// The torch module and torch.Tensor when torch has been imported, else
/// null (nothing is imported here: without torch no argument can be a
/// torch tensor). Borrowed: torch stays in sys.modules.
pybind11::handle torchModule();
pybind11::handle torchTensorType();

/// Describes `obj` if it is an array Tegula can pass; otherwise nullopt
/// (not an array at all). Throws ValueError for arrays it cannot take as
/// they are (strided views), naming `what`.
std::optional<ArrayView> viewArray(pybind11::handle obj, const ArgName &what,
                                   ArgumentLifetimes &keep);

/// The launch argument for array parameter `param` from its view, checked
/// (a device array for the interpreter is refused by the launch itself).
Arg arrayArg(const ArrayView &view, const ParamInfo &param, const ArgName &what);

/// The launch argument for scalar or constant parameter `param` from a
/// Python number (bool, int, float, or a 0-d numpy value).
Arg scalarArg(pybind11::handle obj, const ParamInfo &param, const ArgName &what);

} // namespace tegula::python
