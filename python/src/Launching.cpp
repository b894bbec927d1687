//===- Launching.cpp - Python arguments and options as a launch ------------===//
//
// What every Python launch does before it reaches the C++ kernel: match
// positional and keyword arguments to parameters, choose the overload the
// arrays select, convert the arguments, and read the grid and the launch
// options (num_warps, stages, backend, stream, chip, ...) - shared by
// tegula.Kernel's launcher and tegula.Autotuner's.
//
//===----------------------------------------------------------------------===//
#include "Launching.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace py = pybind11;

namespace tegula::python {

ArgName paramWhat(const KernelSet &k, size_t i) {
  return {k.name, k.param_names[i], i};
}

/// `s` as UTF-8 without a copy (Python caches it in the string).
std::string_view utf8(py::handle s) {
  Py_ssize_t n = 0;
  const char *data = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (!data)
    throw py::error_already_set();
  return {data, size_t(n)};
}

/// Positional and keyword arguments matched to the kernel's parameters;
/// keywords named in `options` are the launch's, not the kernel's.
std::vector<py::object> bindParameters(std::string_view kernel, const std::vector<std::string> &names,
                                       py::args args, py::kwargs kwargs,
                                       std::span<const std::string_view> options) {
  const size_t n = names.size();
  if (args.size() > n)
    throw py::type_error(fmt::format("kernel '{}' takes {} arguments ({}), {} were given", kernel, n,
                                     fmt::join(names, ", "), args.size()));
  std::vector<py::object> bound(n);
  for (size_t i = 0; i < args.size(); ++i)
    bound[i] = py::reinterpret_borrow<py::object>(args[i]);
  for (auto [key, value] : kwargs) {
    const std::string_view name = utf8(key);
    if (std::find(options.begin(), options.end(), name) != options.end())
      continue;
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw py::type_error(fmt::format("kernel '{}' has no parameter '{}' (parameters: {})", kernel,
                                       name, fmt::join(names, ", ")));
    size_t i = size_t(it - names.begin());
    if (bound[i])
      throw py::type_error(fmt::format("kernel '{}' got two values for '{}'", kernel, name));
    bound[i] = py::reinterpret_borrow<py::object>(value);
  }
  for (size_t i = 0; i < n; ++i)
    if (!bound[i])
      throw py::type_error(fmt::format("kernel '{}' is missing argument '{}' (#{})", kernel,
                                       names[i], i));
  return bound;
}

/// kwargs[name] (borrowed), or null when absent or None.
py::handle option(py::kwargs kwargs, PyObject *name) {
  PyObject *v = PyDict_GetItemWithError(kwargs.ptr(), name);
  if (!v && PyErr_Occurred())
    throw py::error_already_set();
  return v == Py_None ? nullptr : v;
}

Resolved resolve(const KernelSet &k, const std::vector<py::object> &bound,
                 ArgumentLifetimes &keep) {
  const std::vector<ParamInfo> &params0 = k.overloads.front().params();
  // Look at every array once (DLPack capsules are consumed).
  std::vector<std::optional<ArrayView>> views(bound.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    if (params0[i].kind != ParamInfo::Kind::Pointer)
      continue;
    if (bound[i].is_none())
      throw py::type_error(fmt::format("{} expects an array, got None", paramWhat(k, i).text()));
    views[i] = viewArray(bound[i], paramWhat(k, i), keep);
    if (!views[i])
      throw py::type_error(fmt::format(
          "{} expects an array (numpy, or anything with __dlpack__ or __cuda_array_interface__), "
          "got {}",
          paramWhat(k, i).text(), py::str(py::type::handle_of(bound[i]).attr("__name__")).cast<std::string>()));
  }
  const Kernel *chosen = &k.overloads.front();
  if (k.overloads.size() > 1) {
    chosen = nullptr;
    for (const Kernel &o : k.overloads) {
      bool fits = true;
      for (size_t i = 0; i < bound.size() && fits; ++i) {
        const ParamInfo &p = o.params()[i];
        if (p.kind == ParamInfo::Kind::Pointer && !p.any_dtype)
          fits = views[i]->dtype && *views[i]->dtype == p.dtype;
      }
      if (fits) {
        chosen = &o;
        break;
      }
    }
    if (!chosen) {
      std::vector<std::string> given, have;
      for (size_t i = 0; i < bound.size(); ++i)
        if (views[i])
          given.push_back(views[i]->dtype_name);
      for (const Kernel &o : k.overloads) {
        std::vector<std::string> sig;
        for (const ParamInfo &p : o.params())
          if (p.kind == ParamInfo::Kind::Pointer)
            sig.push_back(std::string(dtype_name(p.dtype)));
        have.push_back(fmt::format("({})", fmt::join(sig, ", ")));
      }
      throw py::type_error(fmt::format("kernel '{}' has no instantiation for arrays of ({}); it has {}",
                                       k.name, fmt::join(given, ", "), fmt::join(have, ", ")));
    }
  }
  Resolved r{chosen, {}};
  r.args.reserve(bound.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    const ParamInfo &p = chosen->params()[i];
    r.args.push_back(views[i] ? arrayArg(*views[i], p, paramWhat(k, i))
                              : scalarArg(bound[i], p, paramWhat(k, i)));
  }
  return r;
}

Grid toGrid(py::handle g, std::string_view kernel, const std::vector<std::string> &names,
            const std::vector<py::object> &bound, py::handle extra) {
  py::object value = py::reinterpret_borrow<py::object>(g);
  if (PyCallable_Check(g.ptr())) { // grid(meta): meta maps parameter names to values
    py::dict meta;
    for (size_t i = 0; i < bound.size(); ++i)
      meta[py::str(names[i])] = bound[i];
    if (extra)
      for (auto [name, v] : py::reinterpret_borrow<py::dict>(extra))
        meta[name] = v;
    value = py::reinterpret_borrow<py::object>(g)(meta);
  }
  std::vector<int64_t> dims;
  // One dimension: any integer (`__index__`: numpy's too), not a bool.
  auto dimension = [&](py::handle d, size_t axis) {
    py::object index;
    if (!PyBool_Check(d.ptr()))
      index = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));
    if (!index) {
      PyErr_Clear();
      throw py::type_error(fmt::format("kernel '{}': grid dimension {} is {} {}, not an int{}", kernel, axis,
                                       PyFloat_Check(d.ptr()) ? "the float" : "the value", py::repr(d).cast<std::string>(),
                                       PyFloat_Check(d.ptr()) ? " (divide with tegula.cdiv(n, BLOCK))" : ""));
    }
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow)
      throw py::value_error(fmt::format("kernel '{}': grid dimension {} is out of range", kernel,
                                        py::str(index).cast<std::string>()));
    dims.push_back(int64_t(n));
  };
  if (PyIndex_Check(value.ptr()) && !PyBool_Check(value.ptr()))
    dimension(value, 0);
  else if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value)) {
    size_t axis = 0;
    for (py::handle d : value)
      dimension(d, axis++);
  } else
    throw py::type_error(fmt::format("kernel '{}': the grid is a tuple of 1 to 3 ints (or a "
                                     "callable of the arguments returning one), got {}",
                                     kernel, py::repr(value).cast<std::string>()));
  if (dims.empty() || dims.size() > 3)
    throw py::value_error(fmt::format("kernel '{}': the grid has 1 to 3 dimensions, got {}", kernel,
                                      dims.size()));
  for (int64_t d : dims) {
    if (d < 0 || d > int64_t(UINT32_MAX))
      throw py::value_error(fmt::format("kernel '{}': grid dimension {} is out of range", kernel, d));
  }
  // CUDA's limits (the C++ launch checks them on every backend too).
  if (dims[0] > 2147483647 || (dims.size() > 1 && dims[1] > 65535) || (dims.size() > 2 && dims[2] > 65535))
    throw py::value_error(fmt::format("kernel '{}': the grid {} is larger than a GPU launches (x up to "
                                      "2147483647, y and z up to 65535)",
                                      kernel, py::repr(value).cast<std::string>()));
  Grid grid;
  grid.x = uint32_t(dims[0]);
  if (dims.size() > 1)
    grid.y = uint32_t(dims[1]);
  if (dims.size() > 2)
    grid.z = uint32_t(dims[2]);
  return grid;
}

std::optional<Backend> backendOf(py::kwargs kwargs) {
  static PyObject *const name = interned("backend");
  py::handle v = option(kwargs, name);
  if (!v)
    return std::nullopt; // $TEGULA_BACKEND, else the interpreter
  if (!PyUnicode_Check(v.ptr()))
    throw py::type_error(fmt::format("backend= takes a str ('interp', 'sim' or 'gpu'), got {}",
                                     py::repr(v).cast<std::string>()));
  return parse_backend(std::string(utf8(v)));
}

namespace {
std::string optionName(PyObject *name) { return py::reinterpret_borrow<py::str>(name).cast<std::string>(); }
} // namespace

int intOption(py::kwargs kwargs, PyObject *name, int fallback) {
  py::handle v = option(kwargs, name);
  if (!v)
    return fallback;
  if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr()))
    throw py::type_error(fmt::format("{}= takes an int, got {} {}", optionName(name),
                                     py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>(),
                                     py::repr(v).cast<std::string>()));
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow || n < INT32_MIN || n > INT32_MAX)
    throw py::value_error(fmt::format("{}={} is out of range", optionName(name), py::repr(v).cast<std::string>()));
  return int(n);
}

bool boolOption(py::kwargs kwargs, PyObject *name, bool fallback) {
  py::handle v = option(kwargs, name);
  if (!v)
    return fallback;
  if (PyBool_Check(v.ptr()))
    return v.ptr() == Py_True;
  int overflow = 0;
  const long long n = PyLong_Check(v.ptr()) ? PyLong_AsLongLongAndOverflow(v.ptr(), &overflow) : -1;
  if (overflow || (n != 0 && n != 1))
    throw py::type_error(fmt::format("{}= takes True or False, got {}", optionName(name),
                                     py::repr(v).cast<std::string>()));
  return n == 1;
}

std::string stringOption(py::kwargs kwargs, PyObject *name) {
  py::handle v = option(kwargs, name);
  if (!v)
    return "";
  if (!PyUnicode_Check(v.ptr()))
    throw py::type_error(fmt::format("{}= takes a str, got {}", optionName(name), py::repr(v).cast<std::string>()));
  return std::string(utf8(v));
}

/// The CUstream a launch runs on: `stream=` (an int handle, a torch.cuda.Stream
/// or a cupy Stream), else torch's current stream when a torch CUDA tensor is
/// among the arguments (so launches are ordered with the caller's torch work),
/// else 0 (the default stream).
uint64_t streamFor(py::kwargs kwargs, const std::vector<py::object> &bound) {
  static PyObject *const name = interned("stream");
  if (py::handle s = option(kwargs, name)) {
    if (PyLong_Check(s.ptr())) {
      const unsigned long long handle = PyLong_AsUnsignedLongLong(s.ptr());
      if (PyErr_Occurred()) {
        PyErr_Clear();
        throw py::value_error(fmt::format("stream={} is not a CUstream handle (0 to 2**64 - 1)",
                                          py::repr(s).cast<std::string>()));
      }
      return handle;
    }
    if (py::hasattr(s, "cuda_stream")) // torch.cuda.Stream
      return s.attr("cuda_stream").cast<uint64_t>();
    if (py::hasattr(s, "ptr")) // cupy.cuda.Stream
      return s.attr("ptr").cast<uint64_t>();
    throw py::type_error(fmt::format("stream= takes an int (a CUstream), a torch.cuda.Stream or a "
                                     "cupy Stream, not {}",
                                     py::str(py::type::handle_of(s).attr("__name__")).cast<std::string>()));
  }
  py::handle tensor = torchModule() ? torchTensorType() : py::handle();
  if (!tensor)
    return 0;
  static PyObject *const isCuda = interned("is_cuda"), *const getDevice = interned("get_device");
  for (const py::object &a : bound) {
    const int isTensor = PyObject_IsInstance(a.ptr(), tensor.ptr());
    if (isTensor < 0)
      throw py::error_already_set();
    if (!isTensor)
      continue;
    py::object cuda = py::reinterpret_steal<py::object>(PyObject_GetAttr(a.ptr(), isCuda));
    if (!cuda)
      throw py::error_already_set();
    if (!cuda.cast<bool>())
      continue;
    // torch._C._cuda_getCurrentRawStream(device index): the CUstream as an
    // int, what Triton's launcher reads - torch.cuda.current_stream() builds
    // a Stream object in Python on every call.
    static const py::handle rawStream = [] { // kept for the process, like torch
      py::object c = torchModule().attr("_C");
      return py::hasattr(c, "_cuda_getCurrentRawStream") ? py::object(c.attr("_cuda_getCurrentRawStream")).release()
                                                         : py::handle();
    }();
    if (rawStream) {
      py::object device = py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(a.ptr(), getDevice));
      if (!device)
        throw py::error_already_set();
      return rawStream(device).cast<uint64_t>();
    }
    return torchModule().attr("cuda").attr("current_stream")(a.attr("device"))
        .attr("cuda_stream").cast<uint64_t>();
  }
  return 0;
}


LaunchOptions launchOptions(py::kwargs kwargs, const std::vector<py::object> &bound) {
  static PyObject *const numWarps = interned("num_warps"), *const numStages = interned("num_stages"),
                         *const chip = interned("chip"), *const warpSpecialize = interned("warp_specialize"),
                         *const pingPong = interned("ping_pong"), *const clusterSize = interned("cluster_size"),
                         *const maxRegisters = interned("max_registers");
  LaunchOptions opts;
  opts.num_warps = intOption(kwargs, numWarps, 4);
  opts.num_stages = intOption(kwargs, numStages, 3);
  opts.backend = backendOf(kwargs);
  opts.stream = streamFor(kwargs, bound);
  opts.chip = stringOption(kwargs, chip);
  opts.warp_specialize = boolOption(kwargs, warpSpecialize, false);
  opts.ping_pong = boolOption(kwargs, pingPong, false);
  opts.cluster_size = intOption(kwargs, clusterSize, 0);
  opts.max_registers = intOption(kwargs, maxRegisters, 0);
  return opts;
}

} // namespace tegula::python
