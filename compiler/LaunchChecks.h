//===- LaunchChecks.h - what every backend refuses in a launch ---*- C++ -*-===//
//
// The options and numbers no GPU would run, refused alike by the
// interpreter, the simulator, compile and a GPU launch, so that a mistake
// shows on the first backend it meets. Internal to compiler/Kernel.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/dtype.h"

#include <optional>
#include <string>

namespace tegula::detail {

/// LaunchOptions / CompileOptions::max_registers: 0, or what .maxnreg takes.
void checkMaxRegisters(int maxRegisters, const std::string &kernel);

/// LaunchOptions / CompileOptions::num_warps and num_stages: a CTA holds at
/// most 1024 threads, in a power of two of warps; at least one stage.
void checkWarpsAndStages(int numWarps, int numStages, const std::string &kernel);

/// For a finite `v` that float type `t` would round to infinity (fp8: past
/// its largest finite value), that largest finite value; else nullopt. Such
/// a launch number was meant as something else.
std::optional<double> pastLargestFinite(double v, DType t);

} // namespace tegula::detail
