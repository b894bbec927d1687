//===- Launching.h - Python arguments and options as a launch -*- C++ -*-===//
//
// Shared by tegula.Kernel's launcher (Module.cpp) and tegula.Autotuner's
// (Autotune.cpp): arguments matched to parameters, the overload the arrays
// select, the grid and the launch options read from keywords.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Arguments.h"

#include "tegula/python.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <vector>

namespace tegula::python {

/// Parameter i of `k`, for errors.
ArgName paramWhat(const KernelSet &k, size_t i);

/// `s` as UTF-8 without a copy (Python caches it in the string).
std::string_view utf8(pybind11::handle s);

/// Positional and keyword arguments matched to the parameters `names` of
/// kernel `kernel`; keywords named in `options` are the launch's, not the
/// kernel's. TypeError for too many, unknown, doubled or missing ones.
std::vector<pybind11::object> bindParameters(std::string_view kernel, const std::vector<std::string> &names,
                                             pybind11::args args, pybind11::kwargs kwargs,
                                             std::span<const std::string_view> options);

/// kwargs[name] (borrowed), or null when absent or None.
pybind11::handle option(pybind11::kwargs kwargs, PyObject *name);

/// The overload the arrays select, and the converted arguments.
struct Resolved {
  const Kernel *kernel = nullptr;
  std::vector<Arg> args;
};
/// `bound` (one object per parameter of `k`) as the arguments of the
/// overload their arrays select.
Resolved resolve(const KernelSet &k, const std::vector<pybind11::object> &bound, ArgumentLifetimes &keep);

/// A grid: a tuple of 1-3 ints, or a callable of a dict of the arguments by
/// parameter name (`names`, `bound`) and, when given, the items of `extra`.
Grid toGrid(pybind11::handle grid, std::string_view kernel, const std::vector<std::string> &names,
            const std::vector<pybind11::object> &bound, pybind11::handle extra = {});

/// backend=: none means $TEGULA_BACKEND, else the interpreter.
std::optional<Backend> backendOf(pybind11::kwargs kwargs);
/// Keyword options by name: an int (TypeError for another type, ValueError
/// past i32), a bool (True/False, or 0/1), a str ("" when absent).
int intOption(pybind11::kwargs kwargs, PyObject *name, int fallback);
bool boolOption(pybind11::kwargs kwargs, PyObject *name, bool fallback);
std::string stringOption(pybind11::kwargs kwargs, PyObject *name);
/// The stream a launch runs on (stream=, else torch's current stream when a
/// torch CUDA tensor is among `bound`, else 0).
uint64_t streamFor(pybind11::kwargs kwargs, const std::vector<pybind11::object> &bound);
/// num_warps, num_stages, backend, stream, chip, warp_specialize, ping_pong
/// from the keywords (the grid is the caller's).
LaunchOptions launchOptions(pybind11::kwargs kwargs, const std::vector<pybind11::object> &bound);

/// Defines tegula.Config, tegula.Autotuner and its launcher (Autotune.cpp)
/// in the extension module, after tegula.Kernel.
void bindAutotune(pybind11::module_ &m);

} // namespace tegula::python
