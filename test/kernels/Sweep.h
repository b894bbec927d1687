// Sweep.h - what the randomised configuration sweeps (GemmSweepTest.cpp,
// AttentionSweepTest.cpp) share: how many draws from which seed, and where
// the draws run besides the interpreter - the simulator (in CI) or the GPU
// (when a driver is there: the same kinds of draws, other seeds).
#pragma once

#include "tegula/device.h"
#include "tegula/tegula.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace tegula::testing {

/// A sweep's seed and number of draws: the defaults, or <PREFIX>_SEED and
/// <PREFIX>_COUNT from the environment (to draw others); printed.
struct SweepPlan {
  uint32_t seed;
  int count;
};
inline SweepPlan sweep_plan(const char *name, const std::string &prefix, uint32_t seed, int count) {
  if (const char *s = std::getenv((prefix + "_SEED").c_str()))
    seed = uint32_t(std::strtoul(s, nullptr, 10));
  if (const char *c = std::getenv((prefix + "_COUNT").c_str()))
    count = std::atoi(c);
  std::printf("[%s] seed %u, %d draws\n", name, seed, count);
  return {seed, count};
}

/// Where the draws run: the simulator with the drawn chip, or the GPU -
/// where sm_90a code runs only on a Hopper device, so elsewhere such draws
/// run as sm_80 code.
struct SweepTarget {
  Backend backend;
  std::string deviceChip; // GPU only

  static SweepTarget sim() { return {Backend::Sim, ""}; }
  /// The GPU, or nothing (and why) without a driver.
  static std::optional<SweepTarget> gpu(std::string *why) {
    if (!gpu_available(why))
      return std::nullopt;
    return SweepTarget{Backend::GPU, device_info().chip};
  }
  std::string chipFor(const std::string &drawn) const {
    return backend == Backend::GPU && drawn == "sm_90a" && deviceChip != "sm_90a" ? "sm_80" : drawn;
  }
  const char *name() const { return backend == Backend::GPU ? "gpu" : "sim"; }
};

} // namespace tegula::testing
