//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// Tegula never links libcuda: it is opened with dlopen("libcuda.so.1") the
// first time a GPU is asked for (or the library $TEGULA_CUDA_DRIVER names),
// so the library builds, links and runs its CPU paths (interpreter,
// compiler, tests) on machines with no driver. Every
// call goes through check(), which names the call, the error and the kernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

namespace tegula::runtime {

// X-macro of every driver entry point Tegula uses.
#define TEGULA_CUDA_DRIVER_FUNCTIONS(X)                                                    \
  X(cuInit)                                                                                \
  X(cuDriverGetVersion)                                                                    \
  X(cuGetErrorName)                                                                        \
  X(cuGetErrorString)                                                                      \
  X(cuDeviceGet)                                                                           \
  X(cuDeviceGetCount)                                                                      \
  X(cuDeviceGetName)                                                                       \
  X(cuDeviceGetAttribute)                                                                  \
  X(cuDeviceTotalMem)                                                                      \
  X(cuDevicePrimaryCtxRetain)                                                              \
  X(cuDevicePrimaryCtxRelease)                                                             \
  X(cuCtxSetCurrent)                                                                       \
  X(cuCtxSynchronize)                                                                      \
  X(cuMemAlloc)                                                                            \
  X(cuMemFree)                                                                             \
  X(cuMemcpyHtoD)                                                                          \
  X(cuMemcpyDtoH)                                                                          \
  X(cuMemcpyDtoD)                                                                          \
  X(cuMemsetD8)                                                                            \
  X(cuMemHostAlloc)                                                                        \
  X(cuMemFreeHost)                                                                         \
  X(cuMemHostGetDevicePointer)                                                             \
  X(cuModuleLoadData)                                                                      \
  X(cuModuleLoadDataEx)                                                                    \
  X(cuModuleUnload)                                                                        \
  X(cuModuleGetFunction)                                                                   \
  X(cuModuleGetGlobal)                                                                     \
  X(cuFuncGetAttribute)                                                                    \
  X(cuFuncSetAttribute)                                                                    \
  X(cuLaunchKernel)                                                                        \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                           \
  X(cuOccupancyMaxActiveClusters)                                                          \
  X(cuTensorMapEncodeTiled)                                                                \
  X(cuStreamCreate)                                                                        \
  X(cuStreamDestroy)                                                                       \
  X(cuStreamSynchronize)                                                                   \
  X(cuStreamWaitEvent)                                                                     \
  X(cuEventCreate)                                                                         \
  X(cuEventDestroy)                                                                        \
  X(cuEventRecord)                                                                         \
  X(cuEventSynchronize)                                                                    \
  X(cuEventElapsedTime)

class Driver {
public:
  /// The loaded driver (cuInit done). Throws tegula::Error saying "no CUDA
  /// driver" and why, when libcuda.so.1 cannot be opened or initialised.
  static Driver &get();
  /// Whether get() would succeed; `why` receives the reason when not.
  static bool available(std::string *why = nullptr);

  /// Throws tegula::Error "CALL failed[ for kernel 'K']: NAME (description)"
  /// unless `result` is CUDA_SUCCESS.
  void check(CUresult result, std::string_view call, std::string_view kernel = {}) const;
  /// "CUDA_ERROR_INVALID_VALUE (invalid argument)".
  std::string describe(CUresult result) const;
  /// e.g. 13000 for CUDA 13.0.
  int version() const { return version_; }

#define TEGULA_DECLARE_FN(name) decltype(&::name) name = nullptr;
  TEGULA_CUDA_DRIVER_FUNCTIONS(TEGULA_DECLARE_FN)
#undef TEGULA_DECLARE_FN

private:
  friend struct DriverLoader;
  Driver() = default;
  void *handle_ = nullptr;
  int version_ = 0;
};

} // namespace tegula::runtime
