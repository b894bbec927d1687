// GpuMain.h - the frame every GPU benchmark's main shares: without a GPU it
// prints "skipped: <why>" and exits 0 (CI's machines have none, and the
// benchmarks' ctest entries run there), otherwise it runs the body with the
// device's description; a tegula::Error the body lets out prints
// "error: <what>" and exits 1.
#pragma once

#include "tegula/device.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <string>
#include <type_traits>
#include <utility>

namespace tegula::bench {

/// `body(const DeviceInfo &)` returns nothing (exit 0) or an exit status.
template <class Body> int runOnGpu(Body &&body) {
  std::string why;
  if (!gpu_available(&why)) {
    fmt::print("skipped: {}\n", why);
    return 0;
  }
  try {
    const DeviceInfo info = device_info();
    if constexpr (std::is_void_v<std::invoke_result_t<Body, const DeviceInfo &>>) {
      std::forward<Body>(body)(info);
      return 0;
    } else {
      return std::forward<Body>(body)(info);
    }
  } catch (const Error &e) {
    fmt::print("error: {}\n", e.what());
    return 1;
  }
}

} // namespace tegula::bench
