// GptTestUtil.h - what the GPT-2 test suites share: the backends they run on
// (the GPU's cases skip with the reason without a driver) and where the
// committed fixtures are.
#pragma once

#include "runtime/CudaDriver.h"
#include "tegula/kernel.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace tegula::testing {

/// A suite parameterised by backend: interp, sim, gpu.
class GptBackendTest : public ::testing::TestWithParam<Backend> {
protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::GPU && !runtime::Driver::available(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

inline auto gptBackends() { return ::testing::Values(Backend::Interp, Backend::Sim, Backend::GPU); }

inline std::string gptBackendName(const ::testing::TestParamInfo<Backend> &info) {
  return info.param == Backend::Sim ? "sim" : info.param == Backend::GPU ? "gpu" : "interp";
}

/// A committed fixture directory (ending in '/'): in the source tree this was
/// built from, else relative to the working directory (a GPU machine runs
/// the tests from its copy of the tree).
inline std::string fixtureDir(const std::string &relative) {
  const std::string built = std::string(TEGULA_SOURCE_DIR) + "/" + relative + "/";
  return std::filesystem::exists(built) ? built : relative + "/";
}

} // namespace tegula::testing
