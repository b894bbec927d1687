// FakeDriverTest.h - for the tests of driver_path_test, which run the GPU
// path against the recording fake driver (FakeCuda.h): the fake opened
// instead of libcuda, and a recorded launch's parameters read back.
#pragma once

#include "FakeCuda.h"
#include "tegula/device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tegula::fakecuda {

/// Set during the test binary's static initialisation, before any driver
/// use: the runtime opens the fake, not libcuda. Tests assert it (which
/// also keeps it from being optimised away).
inline const bool kUsingFakeDriver = [] {
  setenv("TEGULA_CUDA_DRIVER", TEGULA_FAKE_CUDA_PATH, 1);
  return true;
}();

/// A test on the fake driver: it is the one opened, its records and hooks
/// start empty, and no hook outlives the test.
class FakeDriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(kUsingFakeDriver);
    std::string why;
    ASSERT_TRUE(gpu_available(&why)) << why;
    ASSERT_NE(device_info().name.find("fake"), std::string::npos) << "the real driver was opened";
    tegula_fake_cuda_reset();
    tegula_fake_cuda_on_launch(nullptr);
  }
  void TearDown() override { tegula_fake_cuda_on_launch(nullptr); }
};

/// Parameter `i` of a recorded launch as a T, its size checked against T's.
template <class T> T paramAs(const Launch &l, size_t i) {
  EXPECT_EQ(l.params.at(i).size(), sizeof(T)) << "parameter " << i;
  T v{};
  std::memcpy(&v, l.params.at(i).data(), std::min(sizeof v, l.params.at(i).size()));
  return v;
}

} // namespace tegula::fakecuda
