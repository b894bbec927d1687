//===- Simulator.h - run lowered GPU kernels on the CPU ----------*- C++ -*-===//
//
// `TEGULA_BACKEND=sim`: the per-thread LLVM + NVVM module the GPU back end
// would turn into PTX is instrumented (InstrumentForSimulator.cpp), compiled
// for a baseline host CPU and linked against the simulator's own symbol
// table (HostJit.h), and run CTA by CTA with one fiber
// per thread (Runtime.h). See docs/simulator.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "simulator/Runtime.h"
#include "tegula/kernel.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Operation;
}

namespace tegula::sim {

struct SimOptions {
  bool detectRaces = true;
  /// Unset: $TEGULA_SIM_SCHEDULE ("round-robin", "lowest-first",
  /// "highest-first", "shuffled" or "shuffled:SEED"), else round-robin
  /// (Runtime.h).
  std::optional<Schedule> schedule;
  /// Shuffled's seed (with `schedule`; else the environment's, or 1).
  uint64_t scheduleSeed = 1;
  /// The CTAs from the last to the first (LaunchConfig::lastCtaFirst).
  bool lastCtaFirst = false;
  /// Capture vprintf output here instead of printing it (tests).
  std::string *printed = nullptr;
  /// Price each access site's traffic as warp-wide requests
  /// (RunStats::traffic, MemoryProfile.h). Unset: $TEGULA_SIM_PROFILE=1,
  /// which also prints the table (formatMemoryProfile) to stderr.
  std::optional<bool> profileMemory;
};

class SimKernel {
public:
  /// Instrument a copy of `lowered` (a module after the GPU pipeline for
  /// `chip`) and JIT-compile it. Throws tegula::Error if part of it cannot be
  /// simulated, or if it needs more shared memory than a CTA of `chip` (no
  /// chip: of any GPU) gets.
  static std::shared_ptr<SimKernel> prepare(mlir::Operation *lowered, const std::string &kernel,
                                            const std::string &chip = "");
  ~SimKernel();

  /// Run the grid. Arguments follow the kernel's parameters (tl::constant
  /// ones are compiled in and skipped); buffers are used in place.
  RunStats run(Grid grid, const std::vector<ParamInfo> &params,
               const std::vector<std::string> &paramNames, const std::vector<Arg> &args,
               const SimOptions &options = {}) const;

  /// `stats.traffic` as a table, the costliest sites first, each named.
  std::string memoryProfile(const RunStats &stats) const;

  /// The instrumented module, as text (TEGULA_DUMP=sim).
  const std::string &instrumentedIR() const;
  int threads() const;
  /// The functions the compiled kernel calls outside itself; each is
  /// provided by the simulator's host symbol table (HostFunctions.cpp).
  const std::vector<std::string> &externalSymbols() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace tegula::sim
