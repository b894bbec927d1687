//===- CudaDriver.cpp - the CUDA driver API, loaded at run time -----------===//
#include "runtime/CudaDriver.h"

#include "runtime/DeviceErrorReport.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <cstdlib>

#include <mutex>

namespace tegula::runtime {
namespace {

// The versioned symbol a cuda.h name stands for (cuMemAlloc -> cuMemAlloc_v2).
#define TEGULA_STR2(x) #x
#define TEGULA_STR(x) TEGULA_STR2(x)

struct LoadResult {
  Driver *driver = nullptr;
  std::string error;
};

} // namespace

/// Opens libcuda once; the result (driver or reason) is kept for the process.
struct DriverLoader {
  static LoadResult load();
};

static LoadResult &loaded() {
  static LoadResult result = DriverLoader::load();
  return result;
}

bool Driver::available(std::string *why) {
  LoadResult &r = loaded();
  if (!r.driver && why)
    *why = r.error;
  return r.driver != nullptr;
}

Driver &Driver::get() {
  LoadResult &r = loaded();
  if (!r.driver)
    throw Error(r.error);
  return *r.driver;
}

LoadResult DriverLoader::load() {
  {
    LoadResult r;
    // TEGULA_CUDA_DRIVER: another driver library (one outside the loader's
    // path, or the recording fake the tests use).
    const char *env = std::getenv("TEGULA_CUDA_DRIVER");
    const char *name = env && *env ? env : "libcuda.so.1";
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *err = dlerror();
      r.error = fmt::format("no CUDA driver: cannot load {} ({}); the GPU backend needs an "
                            "NVIDIA driver — use TEGULA_BACKEND=interp to run on the CPU",
                            name, err ? err : "unknown error");
      return r;
    }
    static Driver driver;
    driver.handle_ = handle;
    std::string missing;
#define TEGULA_LOAD_FN(fn)                                                                 \
  driver.fn = reinterpret_cast<decltype(driver.fn)>(dlsym(handle, TEGULA_STR(fn)));        \
  if (!driver.fn)                                                                          \
    missing += std::string(missing.empty() ? "" : ", ") + TEGULA_STR(fn);
    TEGULA_CUDA_DRIVER_FUNCTIONS(TEGULA_LOAD_FN)
#undef TEGULA_LOAD_FN
    if (!missing.empty()) {
      r.error = fmt::format("no CUDA driver: {} lacks {} (driver too old?)", name, missing);
      return r;
    }
    CUresult init = driver.cuInit(0);
    if (init != CUDA_SUCCESS) {
      r.error = fmt::format("no CUDA driver: cuInit failed: {}", driver.describe(init));
      return r;
    }
    driver.cuDriverGetVersion(&driver.version_);
    r.driver = &driver;
    return r;
  }
}

std::string Driver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(result, &name);
  if (cuGetErrorString)
    cuGetErrorString(result, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("CUresult {}", int(result)),
                     text ? text : "no description");
}

void Driver::check(CUresult result, std::string_view call, std::string_view kernel) const {
  if (result == CUDA_SUCCESS)
    return;
  // Keep only the function name of the call expression.
  std::string_view fn = call.substr(0, call.find('('));
  // A kernel that trapped or faulted is reported by whatever call comes
  // next. One that stopped on purpose left a report (DeviceErrorReport.h);
  // a fault of the hardware (an access out of bounds) says nothing, and the
  // simulator runs the same code and says where.
  const bool kernelFault = result == CUDA_ERROR_ILLEGAL_INSTRUCTION || result == CUDA_ERROR_LAUNCH_FAILED ||
                           result == CUDA_ERROR_ASSERT || result == CUDA_ERROR_ILLEGAL_ADDRESS ||
                           result == CUDA_ERROR_MISALIGNED_ADDRESS;
  std::string why;
  if (kernelFault) {
    const std::string reports = describeDeviceErrors();
    why = reports.empty() ? "; a kernel trapped or faulted (an access out of bounds or misaligned, a stop whose "
                            "report did not arrive) and this process's CUDA context is now unusable: "
                            "TEGULA_BACKEND=sim runs the same compiled code on the CPU and says where and why"
                          : fmt::format("; this process's CUDA context is now unusable:\n{}", reports);
  }
  throw Error(fmt::format("{} failed{}: {}{}", fn, kernel.empty() ? "" : fmt::format(" for kernel '{}'", kernel),
                          describe(result), why));
}

} // namespace tegula::runtime
