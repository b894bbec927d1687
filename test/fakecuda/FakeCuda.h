//===- FakeCuda.h - a recording CUDA driver in host memory, for tests -*- C++ -*-===//
//
// libtegula-fake-cuda.so implements the driver entry points Tegula's runtime
// opens (runtime/CudaDriver.h) on the CPU, so the host half of a GPU launch -
// argument packing, staging, tensor maps, shared-memory opt-in, streams,
// error paths - runs and is checked in CI, where there is no GPU. It is what
// TEGULA_CUDA_DRIVER points at in `driver_path_test` and in the host
// launch-overhead benchmark. It never runs a kernel: a launch is checked
// against the PTX the module was loaded from (parameter sizes, .maxntid,
// the shared-memory limit) and recorded; a test may install a hook that
// plays the kernel's part on the "device" memory (plain host memory).
//
// TEGULA_FAKE_CUDA_ARCH ("90" by default) is the device's compute capability;
// TEGULA_FAKE_CUDA_RECORD=0 keeps no record of launches (a benchmark's loop).
//
// Each call that the real driver would refuse is refused with the CUresult
// the driver documents, so a misuse shows up here first.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <string>
#include <map>
#include <vector>

namespace tegula::fakecuda {

/// One cuLaunchKernel as the fake saw it.
struct Launch {
  std::string kernel;
  unsigned grid[3] = {}, block[3] = {};
  unsigned sharedBytes = 0;
  CUstream stream = nullptr;
  /// Each parameter's bytes, sized as the PTX .entry declares it (tensor
  /// maps: 128 bytes each, after the kernel's own parameters).
  std::vector<std::vector<uint8_t>> params;
  /// Stream order: this is launch `seq` of its stream (counted from the
  /// driver's start), and for every other stream, how many of its launches
  /// this one is ordered after (through cuEventRecord + cuStreamWaitEvent,
  /// transitively) - the GPU may run the rest concurrently with it.
  size_t seq = 0;
  std::map<CUstream, size_t> after;
};

/// A tensor map the fake encoded: the arguments cuTensorMapEncodeTiled got,
/// innermost dimension first (the driver's order).
struct TensorMap {
  CUtensorMapDataType dtype{};
  unsigned rank = 0;
  uint64_t address = 0;
  uint64_t dims[5] = {}, strides[4] = {}; // strides in bytes, of dims 1..rank-1
  uint16_t box[5] = {}, elementStrides[5] = {}; // each at most 256 / 8
  CUtensorMapSwizzle swizzle{};
};

/// A loaded kernel's parameters and thread limit, as the fake read them from
/// its PTX or cubin.
struct Signature {
  std::vector<size_t> bytes;
  std::vector<bool> pointer;
  unsigned maxThreads[3] = {}; // .maxntid; 0: none declared
  int registers = 0;            // per thread (cuFuncGetAttribute NUM_REGS)
};

struct Stats {
  size_t liveAllocations = 0, liveBytes = 0;
  size_t launches = 0, encodes = 0, synchronizes = 0;
  size_t copiesToDevice = 0, copiesToHost = 0;
};

/// The driver's state (C++ functions: tests link the library); thread-safe.
/// Launches since the last reset (copies).
std::vector<Launch> tegula_fake_cuda_launches();
Stats tegula_fake_cuda_stats();
/// Forget recorded launches and counters (allocations stay).
void tegula_fake_cuda_reset();
/// Calls in the order they were made, names only ("cuMemAlloc", ...), since the last reset.
std::vector<std::string> tegula_fake_cuda_calls();
/// The next call to `call` (e.g. "cuLaunchKernel") returns `result`.
void tegula_fake_cuda_fail_next(const char *call, CUresult result);
/// cuFuncGetAttribute(NUM_REGS) answers `count` for every function (0: what
/// its cubin records, or its PTX's .maxnreg, else 32) - another compiler's
/// allocation.
void tegula_fake_cuda_allocate_registers(int count);
/// Runs at each launch after it is checked, before it is recorded: plays the
/// kernel (reads and writes "device" memory, which is host memory).
void tegula_fake_cuda_on_launch(std::function<void(const Launch &)> hook);
Signature tegula_fake_cuda_signature(CUfunction function);
/// The "device" memory of module variable `name` in the loaded module that
/// holds `kernel` (any one, if several are loaded); null: none.
void *tegula_fake_cuda_global(const char *kernel, const char *name);
/// Decodes 128 bytes the fake's cuTensorMapEncodeTiled wrote; false if they are not one.
bool tegula_fake_cuda_decode_tensor_map(const void *bytes, TensorMap *out);

} // namespace tegula::fakecuda
