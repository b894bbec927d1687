//===- Autotune.cpp - tegula.Config and tegula.Autotuner -------------------===//
//
// tegula::Autotuner (include/tegula/autotune.h) from Python, launched like a
// kernel: `tuned[grid](*args)` without the tuned constants, the grid a tuple
// or a callable of the arguments and the chosen config's constants. One C++
// Autotuner per overload of the kernel (the arrays' element types pick it,
// and are part of the key anyway).
//
//===----------------------------------------------------------------------===//
#include "CtrlC.h"
#include "Launching.h"

#include "tegula/autotune.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>

namespace py = pybind11;

namespace tegula::python {
namespace {

py::dict constantsOf(const TuneConfig &c) {
  py::dict d;
  for (const auto &[name, value] : c.constants)
    d[py::str(name)] = value;
  return d;
}

std::string configRepr(const TuneConfig &c) {
  std::vector<std::string> parts;
  std::vector<std::string> items;
  for (const auto &[name, value] : c.constants)
    items.push_back(fmt::format("'{}': {}", name, value));
  parts.push_back(fmt::format("{{{}}}", fmt::join(items, ", ")));
  parts.push_back(fmt::format("num_warps={}", c.num_warps));
  parts.push_back(fmt::format("num_stages={}", c.num_stages));
  if (c.warp_specialize)
    parts.push_back("warp_specialize=True");
  if (c.ping_pong)
    parts.push_back("ping_pong=True");
  if (c.cluster_size > 1)
    parts.push_back(fmt::format("cluster_size={}", c.cluster_size));
  if (c.max_registers)
    parts.push_back(fmt::format("max_registers={}", c.max_registers));
  return fmt::format("tegula.Config({})", fmt::join(parts, ", "));
}

/// The launch options an autotuned launch may not set: its config does.
constexpr std::string_view kConfigOptions[] = {"num_warps", "num_stages", "warp_specialize", "ping_pong",
                                               "cluster_size", "max_registers"};

struct PyAutotuner {
  KernelSet kernel;
  std::vector<TuneConfig> configs;
  std::vector<std::string> tunedNames, givenNames;
  std::vector<size_t> tunedIndex; // in the kernel's parameters
  std::vector<Autotuner> tuners;  // one per overload

  PyAutotuner(KernelSet k, std::vector<TuneConfig> cs, std::vector<std::string> key, std::vector<std::string> restore,
              int warmup, int rep, py::object measure, bool cache, bool verbose)
      : kernel(std::move(k)), configs(std::move(cs)) {
    AutotuneOptions options{.key = std::move(key), .restore = std::move(restore), .warmup = warmup, .reps = rep,
                            .cache_on_disk = cache, .verbose = verbose};
    if (!measure.is_none()) {
      if (!PyCallable_Check(measure.ptr()))
        throw py::type_error("Autotuner: measure is a callable (config, run) -> milliseconds, or None");
      py::object errorType = py::module_::import("tegula._tegula").attr("Error");
      options.measure = [measure, errorType](const TuneConfig &c, const std::function<void()> &run) -> double {
        py::gil_scoped_acquire gil;
        // `run` launches with the tuner's locals: callable only while the
        // measure runs (a measure that keeps it gets an error, not a crash).
        auto live = std::make_shared<bool>(true);
        py::cpp_function pyRun([&run, live] {
          if (!*live)
            throw py::value_error("an autotuning measure's run() was called after the measure returned");
          py::gil_scoped_release unlocked;
          run();
        });
        struct Expire {
          std::shared_ptr<bool> live;
          ~Expire() { *live = false; }
        } expire{live};
        try {
          py::object ms = measure(py::cast(c), pyRun);
          if ((!PyFloat_Check(ms.ptr()) && !PyLong_Check(ms.ptr())) || PyBool_Check(ms.ptr()))
            throw py::type_error(fmt::format("an autotuning measure returns milliseconds (a number), got {}",
                                             py::repr(ms).cast<std::string>()));
          return ms.cast<double>();
        } catch (py::error_already_set &e) {
          if (e.matches(errorType)) // a config that cannot run: skipped like one timed in C++
            throw Error(py::str(e.value()).cast<std::string>());
          throw;
        }
      };
    }
    if (kernel.overloads.empty())
      throw py::value_error(fmt::format("Autotuner: kernel '{}' has no instantiation", kernel.name));
    for (const Kernel &o : kernel.overloads)
      tuners.emplace_back(o, configs, nullptr, options); // validates the configs, the key and restore
    for (const auto &[name, value] : configs.front().constants) {
      tunedNames.push_back(name);
      tunedIndex.push_back(size_t(std::find(kernel.param_names.begin(), kernel.param_names.end(), name) -
                                  kernel.param_names.begin()));
    }
    for (size_t i = 0; i < kernel.param_names.size(); ++i)
      if (std::find(tunedIndex.begin(), tunedIndex.end(), i) == tunedIndex.end())
        givenNames.push_back(kernel.param_names[i]);
  }

  /// The arguments without the tuned constants, bound, converted, and the
  /// tuner of the overload they select.
  struct Call {
    std::vector<py::object> given;
    std::vector<Arg> args;
    const Autotuner *tuner = nullptr;
    LaunchOptions opts;
  };
  Call bind(py::args args, py::kwargs kwargs, ArgumentLifetimes &keep) const {
    // The keywords looked at once, without building a string a launch.
    for (auto [key, value] : kwargs) {
      const std::string_view name = utf8(key);
      if (std::find(std::begin(kConfigOptions), std::end(kConfigOptions), name) != std::end(kConfigOptions) ||
          std::find(tunedNames.begin(), tunedNames.end(), name) != tunedNames.end())
        throw py::type_error(fmt::format("autotuned kernel '{}': {} comes from its configs, not the launch",
                                         kernel.name, name));
    }
    Call call;
    static constexpr std::string_view kTunedLaunchKeywords[] = {"backend", "stream", "chip"};
    call.given = bindParameters(kernel.name, givenNames, args, kwargs, kTunedLaunchKeywords);
    // Resolved with the first config's constants in their places; the tuner
    // puts each config's own there.
    std::vector<py::object> full(kernel.param_names.size());
    for (size_t i = 0, g = 0; i < full.size(); ++i) {
      auto t = std::find(tunedIndex.begin(), tunedIndex.end(), i);
      full[i] = t == tunedIndex.end() ? call.given[g++] : py::int_(configs.front()[tunedNames[size_t(t - tunedIndex.begin())]]);
    }
    Resolved r = resolve(kernel, full, keep);
    for (size_t i = 0; i < r.args.size(); ++i)
      if (std::find(tunedIndex.begin(), tunedIndex.end(), i) == tunedIndex.end())
        call.args.push_back(r.args[i]);
    call.tuner = &tuners[size_t(r.kernel - kernel.overloads.data())];
    call.opts = launchOptions(kwargs, call.given);
    return call;
  }
};

/// `tuned[grid]`: launches over `grid` when called.
struct AutotunedLauncher {
  std::shared_ptr<PyAutotuner> tuner;
  py::object grid;

  void operator()(py::args args, py::kwargs kwargs) const {
    ArgumentLifetimes keep;
    PyAutotuner::Call call = tuner->bind(args, kwargs, keep);
    const PyAutotuner &t = *tuner;
    const Autotuner::GridFn gridFn = [&](const TuneConfig &c, const TunedArgs &) {
      py::gil_scoped_acquire gil;
      return toGrid(grid, t.kernel.name, t.givenNames, call.given, constantsOf(c));
    };
    py::gil_scoped_release unlocked; // tuning runs every config
    CtrlCStopsLaunches interruptible;
    call.tuner->launch(call.opts, call.args, gridFn);
  }
};

} // namespace

void bindAutotune(py::module_ &m) {
  py::class_<TuneConfig>(m, "Config", R"doc(One candidate for tegula.autotune: values of the kernel's tuned
constants and the launch options that go with them, as in Triton:
``tegula.Config({"BM": 128, "BN": 256, "BK": 64}, num_warps=8, num_stages=3)``.)doc")
      .def(py::init([](const py::dict &constants, int num_warps, int num_stages, bool warp_specialize,
                       bool ping_pong, int cluster_size, int max_registers) {
             TuneConfig c{{}, num_warps, num_stages, warp_specialize, ping_pong, cluster_size, max_registers};
             for (auto [name, value] : constants) {
               if (!py::isinstance<py::str>(name) || !PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
                 throw py::type_error(fmt::format("tegula.Config: constants map names to ints, got {}: {}",
                                                  py::repr(name).cast<std::string>(),
                                                  py::repr(value).cast<std::string>()));
               int overflow = 0;
               const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
               if (overflow)
                 throw py::value_error(fmt::format("tegula.Config: constant '{}' = {} does not fit in 64 bits",
                                                   name.cast<std::string>(), py::repr(value).cast<std::string>()));
               c.constants.emplace_back(name.cast<std::string>(), int64_t(v));
             }
             return c;
           }),
           py::arg("constants") = py::dict(), py::arg("num_warps") = 4, py::arg("num_stages") = 3,
           py::arg("warp_specialize") = false, py::arg("ping_pong") = false, py::arg("cluster_size") = 0,
           py::arg("max_registers") = 0)
      .def_property_readonly("constants", &constantsOf, "The tuned constants' values by name")
      .def_readonly("num_warps", &TuneConfig::num_warps)
      .def_readonly("num_stages", &TuneConfig::num_stages)
      .def_readonly("warp_specialize", &TuneConfig::warp_specialize)
      .def_readonly("ping_pong", &TuneConfig::ping_pong)
      .def_readonly("cluster_size", &TuneConfig::cluster_size)
      .def_readonly("max_registers", &TuneConfig::max_registers)
      .def("__getitem__", [](const TuneConfig &c, const std::string &name) {
        for (const auto &[n, v] : c.constants)
          if (n == name)
            return v;
        throw py::key_error(name);
      })
      .def(
          "__eq__",
          [](const TuneConfig &a, const TuneConfig &b) {
            return a.constants == b.constants && a.num_warps == b.num_warps && a.num_stages == b.num_stages &&
                   a.warp_specialize == b.warp_specialize && a.ping_pong == b.ping_pong &&
                   a.cluster_size == b.cluster_size && a.max_registers == b.max_registers;
          },
          py::is_operator())
      .def("__hash__", [](const TuneConfig &c) { return py::hash(py::str(configRepr(c))); })
      .def("__repr__", &configRepr)
      // Picklable by every protocol (multiprocessing, a saved list of
      // configs): rebuilt by the constructor from its fields (py::pickle's
      // __setstate__ aborted the process under protocols 0 and 1).
      .def("__reduce__", [](const TuneConfig &c) {
        return py::make_tuple(py::type::of<TuneConfig>(),
                              py::make_tuple(constantsOf(c), c.num_warps, c.num_stages, c.warp_specialize,
                                             c.ping_pong, c.cluster_size, c.max_registers));
      });

  py::class_<AutotunedLauncher>(m, "AutotunedLauncher", "An autotuned kernel bound to a grid: call it with the arguments")
      .def("__call__", &AutotunedLauncher::operator(),
           "Launch with the fastest config (tuned on the first call for these shapes): the kernel's arguments "
           "without the tuned constants, and launch options as a Launcher takes them");

  py::class_<PyAutotuner, std::shared_ptr<PyAutotuner>>(m, "Autotuner", R"doc(A kernel launched with the fastest of
several configs (see tegula.autotune).)doc")
      .def(py::init<KernelSet, std::vector<TuneConfig>, std::vector<std::string>, std::vector<std::string>, int, int,
                    py::object, bool, bool>(),
           py::arg("kernel"), py::arg("configs"), py::arg("key") = std::vector<std::string>{},
           py::arg("restore") = std::vector<std::string>{}, py::arg("warmup") = 2, py::arg("rep") = 10,
           py::arg("measure") = py::none(), py::arg("cache") = true, py::arg("verbose") = false)
      .def("__getitem__",
           [](std::shared_ptr<PyAutotuner> t, py::object grid) { return AutotunedLauncher{std::move(t), std::move(grid)}; })
      .def(
          "best",
          [](const PyAutotuner &t, py::args args, py::kwargs kwargs) {
            ArgumentLifetimes keep;
            PyAutotuner::Call call = t.bind(args, kwargs, keep);
            py::gil_scoped_release unlocked;
            return call.tuner->best(call.opts, call.args);
          },
          "The config launches with these arguments (and backend=, chip=) use; raises tegula.Error when their "
          "key has not been tuned yet and would need timing (launch once first)")
      .def(
          "trials",
          [](const PyAutotuner &t, py::args args, py::kwargs kwargs) {
            ArgumentLifetimes keep;
            PyAutotuner::Call call = t.bind(args, kwargs, keep);
            std::vector<TuneTrial> trials;
            {
              py::gil_scoped_release unlocked; // the tuner's lock may be held by a tuning that needs the GIL
              trials = call.tuner->trials(call.opts, call.args);
            }
            py::list out;
            for (const TuneTrial &trial : trials)
              out.append(py::make_tuple(trial.config, trial.ms, trial.error.empty() ? py::object(py::none())
                                                                                     : py::str(trial.error)));
            return out;
          },
          "[(config, milliseconds, error or None)] of the tuning of these arguments' key in this process")
      .def_property_readonly("kernel", [](const PyAutotuner &t) { return t.kernel; })
      .def_property_readonly("configs", [](const PyAutotuner &t) { return t.configs; })
      .def("__repr__", [](const PyAutotuner &t) {
        return fmt::format("<tegula.Autotuner of {}({}), {} configs over {}>", t.kernel.name,
                           fmt::join(t.givenNames, ", "), t.configs.size(), fmt::join(t.tunedNames, ", "));
      });
}

} // namespace tegula::python
