// python.h - exposing C++ DSL kernels to Python.
//
// A kernel library becomes an importable Python module with one macro:
//
//   #include "tegula/python.h"
//   #include "my_kernels.h"
//
//   TEGULA_PYTHON_MODULE(my_kernels, m) {
//     m.kernel("vector_add", vector_add, {"x", "y", "out", "n", "BLOCK"});
//     // Several instantiations under one name: the launch picks the one whose
//     // pointer parameters match the arrays' dtypes.
//     m.kernel("softmax", softmax<float>, {"x", "out", "n_cols", "BLOCK"});
//     m.kernel("softmax", softmax<tegula::bfloat16>, {"x", "out", "n_cols", "BLOCK"});
//   }
//
// built with CMake's tegula_add_python_module(my_kernels kernels.cpp) or at
// run time with tegula.load("my_kernels", sources=["kernels.cpp"]). In
// Python each name is a tegula.Kernel, launched like Triton's:
//
//   import tegula, my_kernels
//   my_kernels.vector_add[(tegula.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
//
// The module imports tegula._tegula, which defines the Kernel type (one
// definition shared by every kernel module: both link libtegula.so).
#pragma once

#include "tegula/kernel.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace tegula::python {

/// The kernels published under one Python name: instantiations of one DSL
/// function for different element types (overloads, resolved per launch by
/// the dtypes of the array arguments), and their parameter names.
struct KernelSet {
  std::string name;
  std::vector<Kernel> overloads;
  std::vector<std::string> param_names;
};

/// What a TEGULA_PYTHON_MODULE body registers kernels with.
class ModuleBuilder {
public:
  explicit ModuleBuilder(pybind11::module_ &m) : m_(m) {}

  /// Publishes `fn` as `name`; a second call with the same name and the same
  /// parameter names adds an overload. Parameter names are required: Python
  /// passes constants by keyword.
  /// Errors (they surface as the import's) name the line of this call.
  template <class... P>
  ModuleBuilder &kernel(const std::string &name, void (*fn)(P...), std::vector<std::string> param_names,
                        std::source_location where = std::source_location::current()) {
    auto fail = [&](const std::string &what) {
      throw Error(std::string(where.file_name()) + ":" + std::to_string(where.line()) + ": " + what);
    };
    std::optional<Kernel> k;
    try { // (it checks the names: as many as parameters, none twice)
      k = tegula::kernel(name, fn, param_names);
    } catch (const Error &e) {
      fail(e.what());
    }
    if (pybind11::hasattr(m_, name.c_str())) {
      auto &set = m_.attr(name.c_str()).cast<KernelSet &>();
      if (set.param_names != param_names)
        fail("overloads of '" + name + "' name their parameters differently");
      set.overloads.push_back(std::move(*k));
      return *this;
    }
    m_.attr(name.c_str()) = pybind11::cast(KernelSet{name, {std::move(*k)}, std::move(param_names)});
    return *this;
  }

  pybind11::module_ &module() { return m_; }

private:
  pybind11::module_ &m_;
};

} // namespace tegula::python

/// Defines Python module `name` whose body (a block using `builder`, a
/// tegula::python::ModuleBuilder) registers kernels.
#define TEGULA_PYTHON_MODULE(name, builder)                                                       \
  static void tegula_python_register_##name(::tegula::python::ModuleBuilder &);                  \
  PYBIND11_MODULE(name, pymodule) {                                                              \
    pybind11::module_::import("tegula._tegula");                                                 \
    ::tegula::python::ModuleBuilder b(pymodule);                                                 \
    tegula_python_register_##name(b);                                                            \
  }                                                                                              \
  static void tegula_python_register_##name(::tegula::python::ModuleBuilder &builder)
