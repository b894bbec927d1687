//===- Module.cpp - tegula._tegula: the Python extension -------------------===//
//
// Defines tegula.Kernel (a tegula::python::KernelSet: the instantiations of
// one DSL function published under a name), its Triton-style launcher
// (`k[grid](*args, BLOCK=..., num_warps=...)`), introspection (ir, compile)
// and tegula.Error. Kernel modules (TEGULA_PYTHON_MODULE) import this one
// and publish KernelSets; the examples module is one of them.
//
//===----------------------------------------------------------------------===//
#include "CtrlC.h"
#include "Launching.h"

#include "tegula/print.h"
#include "tegula/python.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace py = pybind11;
using namespace tegula;
using tegula::python::KernelSet;
using namespace tegula::python;

namespace {

using tegula::python::kLaunchKeywords; // python.h's: what launchOptions reads

/// `k[grid]`: launches over `grid` when called.
struct Launcher {
  KernelSet kernel;
  py::object grid;

  void operator()(py::args args, py::kwargs kwargs) const {
    std::vector<py::object> bound =
        bindParameters(kernel.name, kernel.param_names, args, kwargs, kLaunchKeywords);
    python::ArgumentLifetimes keep;
    Resolved r = resolve(kernel, bound, keep);
    LaunchOptions opts = launchOptions(kwargs, bound);
    opts.grid = toGrid(grid, kernel.name, kernel.param_names, bound);
    py::gil_scoped_release unlocked; // interpreter and simulator runs can be long
    python::CtrlCStopsLaunches interruptible;
    r.kernel->launch(opts, r.args);
  }
};

std::string ir(const KernelSet &k, py::args args, py::kwargs kwargs) {
  static constexpr std::string_view kIrKeywords[] = {"stage", "debug_info"};
  std::vector<py::object> bound = bindParameters(k.name, k.param_names, args, kwargs, kIrKeywords);
  python::ArgumentLifetimes keep;
  Resolved r = resolve(k, bound, keep);
  std::string stage = kwargs.contains("stage") ? kwargs["stage"].cast<std::string>() : "tile";
  bool debug = kwargs.contains("debug_info") && kwargs["debug_info"].cast<bool>();
  return r.kernel->ir(r.args, stage, debug);
}

int max_resident_programs(const KernelSet &k, py::args args, py::kwargs kwargs) {
  std::vector<py::object> bound =
      bindParameters(k.name, k.param_names, args, kwargs, kLaunchKeywords);
  python::ArgumentLifetimes keep;
  Resolved r = resolve(k, bound, keep);
  LaunchOptions opts = launchOptions(kwargs, bound);
  py::gil_scoped_release unlocked; // may compile
  return r.kernel->max_resident_programs(opts, r.args);
}

CompiledKernel compile(const KernelSet &k, py::args args, py::kwargs kwargs) {
  static constexpr std::string_view kCompileKeywords[] = {"chip",      "num_warps",    "num_stages",
                                                          "assemble",  "warp_specialize", "ping_pong",
                                                          "cluster_size", "max_registers"};
  std::vector<py::object> bound = bindParameters(k.name, k.param_names, args, kwargs, kCompileKeywords);
  python::ArgumentLifetimes keep;
  Resolved r = resolve(k, bound, keep);
  CompileOptions opts;
  static PyObject *const chip = python::interned("chip"), *const numWarps = python::interned("num_warps"),
                         *const numStages = python::interned("num_stages"),
                         *const assemble = python::interned("assemble"),
                         *const warpSpecialize = python::interned("warp_specialize"),
                         *const pingPong = python::interned("ping_pong"),
                         *const clusterSize = python::interned("cluster_size"),
                         *const maxRegisters = python::interned("max_registers");
  if (std::string c = stringOption(kwargs, chip); !c.empty()) // None: the default
    opts.chip = c;
  opts.num_warps = intOption(kwargs, numWarps, 4);
  opts.num_stages = intOption(kwargs, numStages, 3);
  opts.assemble = boolOption(kwargs, assemble, true);
  opts.warp_specialize = boolOption(kwargs, warpSpecialize, false);
  opts.ping_pong = boolOption(kwargs, pingPong, false);
  opts.cluster_size = intOption(kwargs, clusterSize, 0);
  opts.max_registers = intOption(kwargs, maxRegisters, 0);
  py::gil_scoped_release unlocked;
  return r.kernel->compile(r.args, opts);
}

} // namespace

PYBIND11_MODULE(_tegula, m) {
  m.doc() = "Tegula's C++ core: kernels, launches, compilation (import tegula instead)";
  python::joinCtrlC(m, /*owner=*/true); // Ctrl-C's one installation, for every module

  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const Interrupted &e) {
      // Ctrl-C stopped a launch: Python's handler raises KeyboardInterrupt
      // (or whatever the program made of SIGINT); raised here if it did not.
      if (PyErr_CheckSignals() == 0)
        PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const Error &e) {
      py::set_error(error, e.what());
    }
  });

  // tl::print's lines from the interpreter and the simulator go to
  // sys.stdout, so a notebook, pytest's capsys or redirect_stdout sees them
  // (the GPU's vprintf writes to the process's stdout: a notebook's terminal).
  set_print_handler([](std::string_view text) {
    py::gil_scoped_acquire gil; // the launch released it
    PyObject *out = PySys_GetObject("stdout"); // borrowed
    bool written = false;
    if (out && out != Py_None) {
      py::object line = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(text.data(), py::ssize_t(text.size()), "replace"));
      PyObject *r = line ? PyObject_CallMethod(out, "write", "O", line.ptr()) : nullptr;
      written = r != nullptr;
      Py_XDECREF(r);
      if (written) {
        PyObject *f = PyObject_CallMethod(out, "flush", nullptr);
        Py_XDECREF(f);
      }
      PyErr_Clear(); // a closed or odd stdout: the text goes to the process's own instead
    }
    if (!written) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
  });
  // Python is gone after exit: launches from C++ threads print to stdout.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { set_print_handler({}); }));

  py::class_<CompiledKernel>(m, "CompiledKernel",
                             "A kernel compiled for the GPU: PTX, cubin and ptxas's report")
      .def_readonly("ptx", &CompiledKernel::ptx, "The PTX text (the kernel's .entry and what it calls)")
      .def_property_readonly("cubin",
                             [](const CompiledKernel &c) { return py::bytes(c.cubin.data(), c.cubin.size()); })
      .def_readonly("registers", &CompiledKernel::registers, "Registers a thread, from ptxas (0 without a cubin)")
      .def_readonly("shared_bytes", &CompiledKernel::shared_bytes, "Static shared memory a CTA, from ptxas")
      .def_readonly("spill_bytes", &CompiledKernel::spill_bytes,
                    "Bytes spilled to local memory a thread (stores + loads), from ptxas")
      .def_readonly("dynamic_shared_bytes", &CompiledKernel::dynamic_shared_bytes,
                    "Shared memory the launch provides dynamically (rings, scratch)")
      .def_readonly("producer_warps", &CompiledKernel::producer_warps,
                    "Warps of the TMA producer warpgroup a warp-specialised kernel adds (0 without)")
      .def_readonly("programs_per_cta", &CompiledKernel::programs_per_cta,
                    "Programs a CTA runs (2 with ping_pong, else 1)")
      .def_readonly("cluster_size", &CompiledKernel::cluster_size,
                    "CTAs a thread-block cluster the kernel was compiled for (1 without)")
      .def_readonly("ptxas_log", &CompiledKernel::ptxas_log, "What ptxas -v printed")
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
      .def("__repr__",
           [](const Launcher &l) {
             return fmt::format("<tegula.Launcher {}[{}]>", l.kernel.name, py::repr(l.grid).cast<std::string>());
           })
      .def("__call__", &Launcher::operator(),
           "Launch: the kernel's arguments by position or parameter name (arrays, ints, floats; tl::constant "
           "parameters usually by keyword), then options num_warps=4, num_stages=3, warp_specialize=False, "
           "ping_pong=False, cluster_size=0, max_registers=0, backend='interp'|'sim'|'gpu', chip=, stream= "
           "(docs/python.md)");

  py::class_<KernelSet>(m, "Kernel", R"doc(A Tegula kernel written in the C++ DSL.

Launch it like a Triton kernel: ``k[grid](*args, **constants, num_warps=4,
num_stages=3, backend=None, stream=None, chip=None, warp_specialize=False,
ping_pong=False, cluster_size=0, max_registers=0)``;
``grid`` is a tuple of
1-3 ints or a callable taking a dict of the arguments by parameter name;
``chip`` is the compile target (default: the GPU's; "sm_80" in the simulator,
where "sm_90a" runs Hopper's wgmma code). Arrays are numpy arrays or
anything with ``__dlpack__`` / ``__cuda_array_interface__`` (torch, cupy);
``backend`` is "interp", "sim" or "gpu" (default: $TEGULA_BACKEND, else
"interp"); ``warp_specialize`` gives sm_90a TMA-fed loops a producer
warpgroup; ``ping_pong`` (num_warps=4) also runs two programs per CTA, each on
its own consumer warpgroup; ``cluster_size`` (2 or 4, with warp_specialize)
runs programs in thread-block clusters whose ``tl::multicast`` descriptor
loads are fetched once per cluster; ``max_registers`` (16-255) caps the
registers a thread (the kernel's .maxnreg, Triton's maxnreg).)doc")
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
      .def("__call__",
           [](const KernelSet &k, py::args, py::kwargs) {
             throw py::type_error(fmt::format("kernel '{}' is launched over a grid, as in Triton: {}[grid]({}), "
                                              "e.g. {}[(tegula.cdiv(n, BLOCK),)](...)",
                                              k.name, k.name, fmt::join(k.param_names, ", "), k.name));
           })
      .def("ir", &ir,
           "The tile IR of the specialisation these arguments select (stage='traced' or 'tile', "
           "debug_info=False)")
      .def("compile", &compile,
           "Compile the specialisation these arguments select: chip='sm_80' or 'sm_90a', "
           "num_warps, num_stages, assemble=True, warp_specialize=False, ping_pong=False, cluster_size=0, "
           "max_registers=0; "
           "returns a "
           "CompiledKernel")
      .def("max_resident_programs", &max_resident_programs,
           "How many programs of this kernel the GPU runs at once, launched with these arguments and "
           "options (num_warps, num_stages, warp_specialize, ping_pong, cluster_size, ...): the grid of a "
           "persistent kernel. Whole thread-block clusters only (cuOccupancyMaxActiveClusters: may be "
           "fewer than the SMs); backend='gpu' only")
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
          out.append(py::make_tuple(k.label.empty() ? k.kernel : k.kernel + " (" + k.label + ")", k.calls,
                                    k.total_ms));
        return out;
      },
      "[(kernel, calls, milliseconds)] of the launches timed since the last call, most GPU time first; launches "
      "made under a C++ ProfileLabel (GPT-2's linear layers) as 'kernel (label)'");
  bindAutotune(m);

  m.def("gpu_available", [] {
    std::string why;
    bool ok = gpu_available(&why);
    return py::make_tuple(ok, why);
  }, "(available, reason): whether a CUDA driver and device are usable");
}
