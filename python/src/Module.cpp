//===- Module.cpp - tegula._tegula: the Python extension -------------------===//
//
// Defines tegula.Kernel (a tegula::python::KernelSet: the instantiations of
// one DSL function published under a name), its Triton-style launcher
// (`k[grid](*args, BLOCK=..., num_warps=...)`), introspection (ir, compile)
// and tegula.Error. Kernel modules (TEGULA_PYTHON_MODULE) import this one
// and publish KernelSets; the examples module is one of them.
//
//===----------------------------------------------------------------------===//
#include "Arguments.h"

#include "tegula/python.h"

#include <fmt/format.h>

#include <cstdlib>

namespace py = pybind11;
using namespace tegula;
using tegula::python::KernelSet;

namespace {

python::ArgName paramWhat(const KernelSet &k, size_t i) {
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
std::vector<py::object> bindParameters(const KernelSet &k, py::args args, py::kwargs kwargs,
                                       std::initializer_list<std::string_view> options) {
  const size_t n = k.param_names.size();
  if (args.size() > n)
    throw py::type_error(fmt::format("kernel '{}' takes {} arguments ({}), {} were given", k.name, n,
                                     fmt::join(k.param_names, ", "), args.size()));
  std::vector<py::object> bound(n);
  for (size_t i = 0; i < args.size(); ++i)
    bound[i] = py::reinterpret_borrow<py::object>(args[i]);
  for (auto [key, value] : kwargs) {
    const std::string_view name = utf8(key);
    if (std::find(options.begin(), options.end(), name) != options.end())
      continue;
    auto it = std::find(k.param_names.begin(), k.param_names.end(), name);
    if (it == k.param_names.end())
      throw py::type_error(fmt::format("kernel '{}' has no parameter '{}' (parameters: {})", k.name,
                                       name, fmt::join(k.param_names, ", ")));
    size_t i = size_t(it - k.param_names.begin());
    if (bound[i])
      throw py::type_error(fmt::format("kernel '{}' got two values for '{}'", k.name, name));
    bound[i] = py::reinterpret_borrow<py::object>(value);
  }
  for (size_t i = 0; i < n; ++i)
    if (!bound[i])
      throw py::type_error(fmt::format("kernel '{}' is missing argument '{}' (#{})", k.name,
                                       k.param_names[i], i));
  return bound;
}

/// kwargs[name] (borrowed), or null when absent or None.
py::handle option(py::kwargs kwargs, PyObject *name) {
  PyObject *v = PyDict_GetItemWithError(kwargs.ptr(), name);
  if (!v && PyErr_Occurred())
    throw py::error_already_set();
  return v == Py_None ? nullptr : v;
}

/// The overload the arrays select, and the converted arguments.
struct Resolved {
  const Kernel *kernel = nullptr;
  std::vector<Arg> args;
};

Resolved resolve(const KernelSet &k, const std::vector<py::object> &bound,
                 python::ArgumentLifetimes &keep) {
  const std::vector<ParamInfo> &params0 = k.overloads.front().params();
  // Look at every array once (DLPack capsules are consumed).
  std::vector<std::optional<python::ArrayView>> views(bound.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    if (params0[i].kind != ParamInfo::Kind::Pointer)
      continue;
    if (bound[i].is_none())
      throw py::type_error(fmt::format("{} expects an array, got None", paramWhat(k, i).text()));
    views[i] = python::viewArray(bound[i], paramWhat(k, i), keep);
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
    r.args.push_back(views[i] ? python::arrayArg(*views[i], p, paramWhat(k, i))
                              : python::scalarArg(bound[i], p, paramWhat(k, i)));
  }
  return r;
}

Grid toGrid(py::handle g, const KernelSet &k, const std::vector<py::object> &bound) {
  py::object value = py::reinterpret_borrow<py::object>(g);
  if (PyCallable_Check(g.ptr())) { // grid(meta): meta maps parameter names to values
    py::dict meta;
    for (size_t i = 0; i < bound.size(); ++i)
      meta[py::str(k.param_names[i])] = bound[i];
    value = py::reinterpret_borrow<py::object>(g)(meta);
  }
  std::vector<int64_t> dims;
  if (PyLong_Check(value.ptr()))
    dims.push_back(value.cast<int64_t>());
  else if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value))
    for (py::handle d : value) {
      py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));
      if (!index)
        throw py::error_already_set();
      dims.push_back(py::cast<int64_t>(index));
    }
  else
    throw py::type_error(fmt::format("kernel '{}': the grid is a tuple of 1 to 3 ints (or a "
                                     "callable of the arguments returning one), got {}",
                                     k.name, py::repr(value).cast<std::string>()));
  if (dims.empty() || dims.size() > 3)
    throw py::value_error(fmt::format("kernel '{}': the grid has 1 to 3 dimensions, got {}", k.name,
                                      dims.size()));
  for (int64_t d : dims)
    if (d < 0 || d > int64_t(UINT32_MAX))
      throw py::value_error(fmt::format("kernel '{}': grid dimension {} is out of range", k.name, d));
  Grid grid;
  grid.x = uint32_t(dims[0]);
  if (dims.size() > 1)
    grid.y = uint32_t(dims[1]);
  if (dims.size() > 2)
    grid.z = uint32_t(dims[2]);
  return grid;
}

std::optional<Backend> backendOf(py::kwargs kwargs) {
  static PyObject *const name = python::interned("backend");
  py::handle v = option(kwargs, name);
  if (!v)
    return std::nullopt; // $TEGULA_BACKEND, else the interpreter
  return parse_backend(std::string(utf8(v)));
}

int intOption(py::kwargs kwargs, PyObject *name, int fallback) {
  py::handle v = option(kwargs, name);
  return v ? py::cast<int>(v) : fallback;
}

/// The CUstream a launch runs on: `stream=` (an int handle, a torch.cuda.Stream
/// or a cupy Stream), else torch's current stream when a torch CUDA tensor is
/// among the arguments (so launches are ordered with the caller's torch work),
/// else 0 (the default stream).
uint64_t streamFor(py::kwargs kwargs, const std::vector<py::object> &bound) {
  static PyObject *const name = python::interned("stream");
  if (py::handle s = option(kwargs, name)) {
    if (PyLong_Check(s.ptr()))
      return s.cast<uint64_t>();
    if (py::hasattr(s, "cuda_stream")) // torch.cuda.Stream
      return s.attr("cuda_stream").cast<uint64_t>();
    if (py::hasattr(s, "ptr")) // cupy.cuda.Stream
      return s.attr("ptr").cast<uint64_t>();
    throw py::type_error(fmt::format("stream= takes an int (a CUstream), a torch.cuda.Stream or a "
                                     "cupy Stream, not {}",
                                     py::str(py::type::handle_of(s).attr("__name__")).cast<std::string>()));
  }
  py::handle tensor = python::torchModule() ? python::torchTensorType() : py::handle();
  if (!tensor)
    return 0;
  static PyObject *const isCuda = python::interned("is_cuda"), *const getDevice = python::interned("get_device");
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
      py::object c = python::torchModule().attr("_C");
      return py::hasattr(c, "_cuda_getCurrentRawStream") ? py::object(c.attr("_cuda_getCurrentRawStream")).release()
                                                         : py::handle();
    }();
    if (rawStream) {
      py::object device = py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(a.ptr(), getDevice));
      if (!device)
        throw py::error_already_set();
      return rawStream(device).cast<uint64_t>();
    }
    return python::torchModule().attr("cuda").attr("current_stream")(a.attr("device"))
        .attr("cuda_stream").cast<uint64_t>();
  }
  return 0;
}

/// `k[grid]`: launches over `grid` when called.
struct Launcher {
  KernelSet kernel;
  py::object grid;

  void operator()(py::args args, py::kwargs kwargs) const {
    static PyObject *const numWarps = python::interned("num_warps"),
                           *const numStages = python::interned("num_stages"),
                           *const chip = python::interned("chip"),
                           *const warpSpecialize = python::interned("warp_specialize"),
                           *const pingPong = python::interned("ping_pong");
    std::vector<py::object> bound =
        bindParameters(kernel, args, kwargs,
                       {"num_warps", "num_stages", "backend", "stream", "chip", "warp_specialize", "ping_pong"});
    python::ArgumentLifetimes keep;
    Resolved r = resolve(kernel, bound, keep);
    LaunchOptions opts;
    opts.grid = toGrid(grid, kernel, bound);
    opts.num_warps = intOption(kwargs, numWarps, 4);
    opts.num_stages = intOption(kwargs, numStages, 3);
    opts.backend = backendOf(kwargs);
    opts.stream = streamFor(kwargs, bound);
    if (py::handle c = option(kwargs, chip))
      opts.chip = std::string(utf8(c));
    if (py::handle ws = option(kwargs, warpSpecialize))
      opts.warp_specialize = ws.cast<bool>();
    if (py::handle pp = option(kwargs, pingPong))
      opts.ping_pong = pp.cast<bool>();
    py::gil_scoped_release unlocked; // interpreter and simulator runs can be long
    r.kernel->launch(opts, r.args);
  }
};

std::string ir(const KernelSet &k, py::args args, py::kwargs kwargs) {
  std::vector<py::object> bound = bindParameters(k, args, kwargs, {"stage", "debug_info"});
  python::ArgumentLifetimes keep;
  Resolved r = resolve(k, bound, keep);
  std::string stage = kwargs.contains("stage") ? kwargs["stage"].cast<std::string>() : "tile";
  bool debug = kwargs.contains("debug_info") && kwargs["debug_info"].cast<bool>();
  return r.kernel->ir(r.args, stage, debug);
}

CompiledKernel compile(const KernelSet &k, py::args args, py::kwargs kwargs) {
  std::vector<py::object> bound =
      bindParameters(k, args, kwargs,
                     {"chip", "num_warps", "num_stages", "assemble", "warp_specialize", "ping_pong"});
  python::ArgumentLifetimes keep;
  Resolved r = resolve(k, bound, keep);
  CompileOptions opts;
  if (kwargs.contains("chip"))
    opts.chip = kwargs["chip"].cast<std::string>();
  static PyObject *const numWarps = python::interned("num_warps"),
                         *const numStages = python::interned("num_stages");
  opts.num_warps = intOption(kwargs, numWarps, 4);
  opts.num_stages = intOption(kwargs, numStages, 3);
  if (kwargs.contains("assemble"))
    opts.assemble = kwargs["assemble"].cast<bool>();
  if (kwargs.contains("warp_specialize"))
    opts.warp_specialize = kwargs["warp_specialize"].cast<bool>();
  if (kwargs.contains("ping_pong"))
    opts.ping_pong = kwargs["ping_pong"].cast<bool>();
  py::gil_scoped_release unlocked;
  return r.kernel->compile(r.args, opts);
}

} // namespace

PYBIND11_MODULE(_tegula, m) {
  m.doc() = "Tegula's C++ core: kernels, launches, compilation (import tegula instead)";

  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const Error &e) {
      py::set_error(error, e.what());
    }
  });

  py::class_<CompiledKernel>(m, "CompiledKernel",
                             "A kernel compiled for the GPU: PTX, cubin and ptxas's report")
      .def_readonly("ptx", &CompiledKernel::ptx)
      .def_property_readonly("cubin",
                             [](const CompiledKernel &c) { return py::bytes(c.cubin.data(), c.cubin.size()); })
      .def_readonly("registers", &CompiledKernel::registers)
      .def_readonly("shared_bytes", &CompiledKernel::shared_bytes)
      .def_readonly("spill_bytes", &CompiledKernel::spill_bytes)
      .def_readonly("dynamic_shared_bytes", &CompiledKernel::dynamic_shared_bytes)
      .def_readonly("producer_warps", &CompiledKernel::producer_warps)
      .def_readonly("programs_per_cta", &CompiledKernel::programs_per_cta)
      .def_readonly("ptxas_log", &CompiledKernel::ptxas_log)
      .def_property_readonly("sass", &CompiledKernel::sass,
                             "The cubin's machine code (SASS) by nvdisasm, disassembled on each access; "
                             "raises tegula.Error without a cubin or nvdisasm")
      .def("__repr__", [](const CompiledKernel &c) {
        return fmt::format("<CompiledKernel: {} bytes of PTX, cubin {} bytes, {} registers, {} B "
                           "shared, {} B spilled>",
                           c.ptx.size(), c.cubin.size(), c.registers,
                           c.shared_bytes + c.dynamic_shared_bytes, c.spill_bytes);
      });

  py::class_<Launcher>(m, "Launcher", "A kernel bound to a grid: call it with the arguments")
      .def("__call__", &Launcher::operator());

  py::class_<KernelSet>(m, "Kernel", R"doc(A Tegula kernel written in the C++ DSL.

Launch it like a Triton kernel: ``k[grid](*args, **constants, num_warps=4,
num_stages=3, backend=None, stream=None, chip=None, warp_specialize=False,
ping_pong=False)``;
``grid`` is a tuple of
1-3 ints or a callable taking a dict of the arguments by parameter name;
``chip`` is the compile target (default: the GPU's; "sm_80" in the simulator,
where "sm_90a" runs Hopper's wgmma code). Arrays are numpy arrays or
anything with ``__dlpack__`` / ``__cuda_array_interface__`` (torch, cupy);
``backend`` is "interp", "sim" or "gpu" (default: $TEGULA_BACKEND, else
"interp"); ``warp_specialize`` gives sm_90a TMA-fed loops a producer
warpgroup; ``ping_pong`` (num_warps=4) also runs two programs per CTA, each on
its own consumer warpgroup.)doc")
      .def_readonly("name", &KernelSet::name)
      .def_readonly("param_names", &KernelSet::param_names)
      .def_property_readonly("signatures",
                             [](const KernelSet &k) {
                               std::vector<std::vector<std::string>> sigs;
                               for (const Kernel &o : k.overloads) {
                                 std::vector<std::string> s;
                                 for (const ParamInfo &p : o.params())
                                   s.push_back(fmt::format(
                                       "{}{}",
                                       p.kind == ParamInfo::Kind::Pointer    ? "*"
                                       : p.kind == ParamInfo::Kind::Constant ? "constexpr "
                                                                             : "",
                                       p.any_dtype ? "any" : std::string(dtype_name(p.dtype))));
                                 sigs.push_back(s);
                               }
                               return sigs;
                             },
                             "Per instantiation, each parameter's type ('*bf16': an array)")
      .def("__getitem__",
           [](const KernelSet &k, py::object grid) { return Launcher{k, std::move(grid)}; })
      .def("ir", &ir,
           "The tile IR of the specialisation these arguments select (stage='traced' or 'tile', "
           "debug_info=False)")
      .def("compile", &compile,
           "Compile the specialisation these arguments select: chip='sm_80' or 'sm_90a', "
           "num_warps, num_stages, assemble=True, warp_specialize=False, ping_pong=False; returns a "
           "CompiledKernel")
      .def("__repr__", [](const KernelSet &k) {
        return fmt::format("<tegula.Kernel {}({}), {} instantiation{}>", k.name,
                           fmt::join(k.param_names, ", "), k.overloads.size(),
                           k.overloads.size() == 1 ? "" : "s");
      });

  // For tegula.testing.do_bench: events on the stream launches use, and a
  // buffer to overwrite between calls (an L2 flush).
  py::class_<Event>(m, "_Event")
      .def(py::init<>())
      .def("record", py::overload_cast<>(&Event::record))
      .def("synchronize", &Event::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("elapsed_ms", &Event::elapsed_ms);
  py::class_<DeviceBuffer>(m, "_DeviceBytes")
      .def(py::init([](size_t bytes) { return DeviceBuffer(bytes, DType::i8); }))
      .def("fill", [](DeviceBuffer &b, uint8_t value) { b.fill_bytes(value); })
      .def_property_readonly("ptr", &DeviceBuffer::device_ptr);

  // GPU time per kernel (runtime/Profile.cpp): tegula.testing.profile().
  m.def("profile_kernels", &profile_kernels, py::arg("on"),
        "Turns timing of every GPU launch (two events on its stream) on or off");
  m.def(
      "kernel_profile",
      [] {
        std::vector<KernelProfile> profile;
        {
          py::gil_scoped_release unlocked; // waits for the GPU
          profile = kernel_profile();
        }
        py::list out;
        for (const KernelProfile &k : profile)
          out.append(py::make_tuple(k.kernel, k.calls, k.total_ms));
        return out;
      },
      "[(kernel, calls, milliseconds)] of the launches timed since the last call, most GPU time first");
  m.def("gpu_available", [] {
    std::string why;
    bool ok = gpu_available(&why);
    return py::make_tuple(ok, why);
  }, "(available, reason): whether a CUDA driver and device are usable");
}
