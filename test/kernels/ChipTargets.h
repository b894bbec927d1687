// ChipTargets.h - a test parameterised over where compiled code runs: the
// simulator running the sm_80 or the sm_90a code, and a GPU (those cases
// skip with the reason without one, and sm_90a code without an sm_90a GPU).
#pragma once

#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace tegula::testing {

struct ChipTarget {
  Backend backend;
  std::string chip;
};
inline void PrintTo(const ChipTarget &t, std::ostream *os) {
  *os << (t.backend == Backend::GPU ? "gpu" : "sim") << " " << t.chip;
}
inline std::string chipTargetName(const ::testing::TestParamInfo<ChipTarget> &info) {
  return fmt::format("{}_{}", info.param.backend == Backend::GPU ? "gpu" : "sim", info.param.chip);
}

class ChipTargetTest : public ::testing::TestWithParam<ChipTarget> {
protected:
  void SetUp() override {
    if (GetParam().backend != Backend::GPU)
      return;
    std::string why;
    if (!runtime::Driver::available(&why))
      GTEST_SKIP() << "no GPU: " << why;
    if (GetParam().chip == "sm_90a" && runtime::currentDevice().chip() != "sm_90a")
      GTEST_SKIP() << "sm_90a code needs an sm_90a GPU; this one is "
                   << runtime::currentDevice().chip();
  }
  /// Launch options for this target.
  LaunchOptions target(Grid g = {1}, int warps = 4) const {
    return {.grid = g, .num_warps = warps, .backend = GetParam().backend, .chip = GetParam().chip};
  }
};

} // namespace tegula::testing

/// Instantiates `suite` (a ChipTargetTest) in the simulator (sm_80, sm_90a)
/// and on the GPU.
#define TEGULA_INSTANTIATE_CHIP_TARGETS(suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(Sim, suite,                                                              \
                           ::testing::Values(::tegula::testing::ChipTarget{::tegula::Backend::Sim, "sm_80"}, \
                                             ::tegula::testing::ChipTarget{::tegula::Backend::Sim, "sm_90a"}), \
                           ::tegula::testing::chipTargetName);                                     \
  INSTANTIATE_TEST_SUITE_P(Gpu, suite,                                                              \
                           ::testing::Values(::tegula::testing::ChipTarget{::tegula::Backend::GPU, "sm_80"}, \
                                             ::tegula::testing::ChipTarget{::tegula::Backend::GPU, "sm_90a"}), \
                           ::tegula::testing::chipTargetName)
