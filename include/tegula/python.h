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

#include <algorithm>
#include <iterator>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
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

/// The keyword arguments a launch takes besides the kernel's own: no
/// kernel parameter may be named like one.
inline constexpr std::string_view kLaunchKeywords[] = {"num_warps",       "num_stages", "backend",
                                                       "stream",          "chip",       "warp_specialize",
                                                       "ping_pong",       "cluster_size", "max_registers"};

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
    if (name.rfind("__", 0) == 0)
      fail("'" + name + "' is a name Python gives module attributes of its own; give the kernel another name");
    // ir() and compile() take keywords of their own too.
    for (const std::string &p : param_names)
      if (p == "stage" || p == "debug_info" || p == "assemble" ||
          std::find(std::begin(kLaunchKeywords), std::end(kLaunchKeywords), p) != std::end(kLaunchKeywords))
        fail("parameter '" + p + "' of kernel '" + name + "' is named like the launch (or ir/compile) option " + p +
             "=; a keyword would be taken for one or the other: rename the parameter");
    if (pybind11::hasattr(m_, name.c_str())) {
      pybind11::object existing = m_.attr(name.c_str());
      if (!pybind11::isinstance<KernelSet>(existing))
        fail("'" + name + "' is already an attribute of the module, not a kernel; give the kernel another name");
      auto &set = existing.cast<KernelSet &>();
      if (set.param_names != param_names)
        fail("overloads of '" + name + "' name their parameters differently");
      for (const Kernel &other : set.overloads)
        if (sameTypes(other.params(), k->params()))
          fail("'" + name + "' already has an overload with these parameter types: a launch could never pick "
               "this one");
      set.overloads.push_back(std::move(*k));
      return *this;
    }
    m_.attr(name.c_str()) = pybind11::cast(KernelSet{name, {std::move(*k)}, std::move(param_names)});
    return *this;
  }

  pybind11::module_ &module() { return m_; }

private:
  static bool sameTypes(const std::vector<ParamInfo> &a, const std::vector<ParamInfo> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].kind != b[i].kind || a[i].dtype != b[i].dtype || a[i].any_dtype != b[i].any_dtype)
        return false;
    return true;
  }

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
