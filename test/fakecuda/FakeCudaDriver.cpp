//===- FakeCudaDriver.cpp - a recording CUDA driver in host memory ------===//
//
// See FakeCuda.h. Handles are pointers to the fake's own objects; device
// addresses are host addresses of allocations it tracks, so every copy,
// memset and pointer parameter is checked against a live allocation.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"
#include "FakeModuleImage.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>

namespace tegula::fakecuda {
namespace {

constexpr uint32_t kTensorMapMagic = 0x54474d50; // "TGMP"
constexpr int kOptinShared = 232448;

struct Module {
  std::map<std::string, std::unique_ptr<Function>> functions;
  /// Module-scope variables: name -> zero-initialised "device" memory (an
  /// allocation copies may target, not counted in Stats).
  std::map<std::string, std::pair<void *, size_t>> globals;
};

/// A stream's place in the stream order: its launches so far, and how many
/// of each other stream's launches its next one is ordered after.
struct StreamOrder {
  size_t launches = 0;
  std::map<CUstream, size_t> after;
};

struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
  // At the record: the recording stream and the launches it covered -
  // what a stream waiting on the event is then ordered after.
  CUstream stream = nullptr;
  StreamOrder order;
};

struct State {
  std::mutex mutex;
  std::map<uint64_t, size_t> allocations; // base -> bytes
  std::set<Module *> modules;
  std::map<void *, size_t> hostAllocations; // cuMemHostAlloc's (mapped: the device address is the same)
  std::set<void *> streams;
  std::map<CUstream, StreamOrder> order; // nullptr: the default stream
  std::set<Event *> events;
  std::map<std::string, CUresult> failNext;
  int registers = 0; // tegula_fake_cuda_allocate_registers: every function's count (0: as compiled)
  std::function<void(const Launch &)> hook;
  std::vector<Launch> launches;
  std::vector<std::string> calls;
  Stats stats;
};

State &state() {
  static State *s = new State; // never destroyed: the runtime calls in at exit
  return *s;
}

/// TEGULA_FAKE_CUDA_RECORD=0: launches are checked and counted, not kept,
/// and calls not logged (a benchmark's loop would grow the record).
bool recording() {
  static const bool on = [] {
    const char *v = std::getenv("TEGULA_FAKE_CUDA_RECORD");
    return !(v && std::string_view(v) == "0");
  }();
  return on;
}

/// Records the call; returns the injected failure, if one is pending.
CUresult enter(State &s, const char *call) {
  if (recording())
    s.calls.emplace_back(call);
  if (auto it = s.failNext.find(call); it != s.failNext.end()) {
    CUresult r = it->second;
    s.failNext.erase(it);
    return r;
  }
  return CUDA_SUCCESS;
}

#define FAKE_ENTER(name)                                                                   \
  State &s = state();                                                                      \
  std::lock_guard<std::mutex> lock(s.mutex);                                               \
  if (CUresult injected = enter(s, name); injected != CUDA_SUCCESS)                        \
  return injected

/// Whether [address, address + bytes) lies inside one live allocation.
bool inAllocation(const State &s, uint64_t address, size_t bytes) {
  auto it = s.allocations.upper_bound(address);
  if (it == s.allocations.begin())
    return false;
  --it;
  return address >= it->first && address + bytes <= it->first + it->second;
}

/// The bytes a tensor map parameter must hold (FakeCuda.h's TensorMap, tagged).
struct EncodedMap {
  uint32_t magic;
  TensorMap map;
};
static_assert(sizeof(EncodedMap) <= sizeof(CUtensorMap));

} // namespace

std::vector<Launch> tegula_fake_cuda_launches() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.launches;
}

Stats tegula_fake_cuda_stats() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.stats;
}

void tegula_fake_cuda_reset() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.launches.clear();
  s.calls.clear();
  s.failNext.clear();
  const size_t live = s.stats.liveAllocations, bytes = s.stats.liveBytes;
  s.stats = Stats{};
  s.stats.liveAllocations = live;
  s.stats.liveBytes = bytes;
}

std::vector<std::string> tegula_fake_cuda_calls() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.calls;
}

void tegula_fake_cuda_fail_next(const char *call, CUresult result) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.failNext[call] = result;
}

void tegula_fake_cuda_allocate_registers(int count) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.registers = count;
}

void tegula_fake_cuda_on_launch(std::function<void(const Launch &)> hook) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.hook = std::move(hook);
}

Signature tegula_fake_cuda_signature(CUfunction function) {
  const auto *fn = reinterpret_cast<const Function *>(function);
  Signature out;
  for (const Parameter &p : fn->params) {
    out.bytes.push_back(p.bytes);
    out.pointer.push_back(p.pointer);
  }
  std::copy(fn->maxThreads, fn->maxThreads + 3, out.maxThreads);
  out.registers = fn->registers;
  return out;
}

void *tegula_fake_cuda_global(const char *kernel, const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (Module *m : s.modules)
    if (m->functions.count(kernel))
      if (auto it = m->globals.find(name); it != m->globals.end())
        return it->second.first;
  return nullptr;
}

bool tegula_fake_cuda_decode_tensor_map(const void *bytes, TensorMap *out) {
  EncodedMap e;
  std::memcpy(&e, bytes, sizeof e);
  if (e.magic != kTensorMapMagic)
    return false;
  *out = e.map;
  return true;
}

} // namespace tegula::fakecuda

using namespace tegula::fakecuda;

// --- the driver API -------------------------------------------------------
extern "C" {

CUresult cuInit(unsigned flags) {
  FAKE_ENTER("cuInit");
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDriverGetVersion(int *version) {
  FAKE_ENTER("cuDriverGetVersion");
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
#define FAKE_NAME(e) case e: *name = #e; return CUDA_SUCCESS;
    FAKE_NAME(CUDA_SUCCESS)
    FAKE_NAME(CUDA_ERROR_INVALID_VALUE)
    FAKE_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    FAKE_NAME(CUDA_ERROR_NOT_INITIALIZED)
    FAKE_NAME(CUDA_ERROR_INVALID_DEVICE)
    FAKE_NAME(CUDA_ERROR_INVALID_IMAGE)
    FAKE_NAME(CUDA_ERROR_INVALID_HANDLE)
    FAKE_NAME(CUDA_ERROR_NOT_FOUND)
    FAKE_NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    FAKE_NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    FAKE_NAME(CUDA_ERROR_LAUNCH_FAILED)
    FAKE_NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
    FAKE_NAME(CUDA_ERROR_INVALID_PTX)
#undef FAKE_NAME
  default:
    *name = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  switch (error) {
  case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *text = "out of memory"; return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *text = "an illegal memory access was encountered"; return CUDA_SUCCESS;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: *text = "too many resources requested for launch"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND: *text = "named symbol not found"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_IMAGE: *text = "device kernel image is invalid"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_HANDLE: *text = "invalid resource handle"; return CUDA_SUCCESS;
  default: *text = "fake driver error"; return CUDA_SUCCESS;
  }
}

CUresult cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  FAKE_ENTER("cuDeviceGetName");
  if (device != 0 || length <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, size_t(length), "Tegula fake CUDA driver (host memory)");
  return CUDA_SUCCESS;
}

/// TEGULA_FAKE_CUDA_ARCH ("90" by default, "80", ...) is the compute capability.
static int fakeArch() {
  const char *arch = std::getenv("TEGULA_FAKE_CUDA_ARCH");
  return arch && *arch ? std::atoi(arch) : 90;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device) {
  FAKE_ENTER("cuDeviceGetAttribute");
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = fakeArch() / 10; return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = fakeArch() % 10; return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = kOptinShared; return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 2619000; return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 5120; return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE; // only what Tegula asks for
  }
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice device) {
  FAKE_ENTER("cuDeviceTotalMem");
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = size_t(80) << 30;
  return CUDA_SUCCESS;
}

static int fakeContext; // the primary context's handle

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *ctx = reinterpret_cast<CUcontext>(&fakeContext);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  FAKE_ENTER("cuCtxSetCurrent");
  return ctx == reinterpret_cast<CUcontext>(&fakeContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  ++s.stats.synchronizes;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  FAKE_ENTER("cuMemAlloc");
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  s.allocations[*ptr] = bytes;
  ++s.stats.liveAllocations;
  s.stats.liveBytes += bytes;
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr ptr) {
  FAKE_ENTER("cuMemFree");
  auto it = s.allocations.find(ptr);
  if (it == s.allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  --s.stats.liveAllocations;
  s.stats.liveBytes -= it->second;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void *>(ptr));
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned flags) {
  FAKE_ENTER("cuMemHostAlloc");
  if (!ptr || bytes == 0 || (flags & ~unsigned(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                                                CU_MEMHOSTALLOC_WRITECOMBINED)))
    return CUDA_ERROR_INVALID_VALUE;
  void *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = p;
  s.hostAllocations[p] = bytes;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *ptr) {
  FAKE_ENTER("cuMemFreeHost");
  auto it = s.hostAllocations.find(ptr);
  if (it == s.hostAllocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  s.hostAllocations.erase(it);
  std::free(ptr);
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr *device, void *host, unsigned flags) {
  FAKE_ENTER("cuMemHostGetDevicePointer");
  if (!device || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto it = s.hostAllocations.upper_bound(host);
  if (it == s.hostAllocations.begin())
    return CUDA_ERROR_INVALID_VALUE;
  --it;
  const auto *base = static_cast<const char *>(it->first), *p = static_cast<const char *>(host);
  if (p >= base + it->second)
    return CUDA_ERROR_INVALID_VALUE;
  *device = reinterpret_cast<CUdeviceptr>(host); // unified addressing: the host's own address
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD");
  if (!inAllocation(s, dst, bytes) || (!src && bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  ++s.stats.copiesToDevice;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH");
  if (!inAllocation(s, src, bytes) || (!dst && bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  ++s.stats.copiesToHost;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoD");
  if (!inAllocation(s, dst, bytes) || !inAllocation(s, src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  FAKE_ENTER("cuMemsetD8");
  if (!inAllocation(s, dst, count))
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void *>(dst), value, count);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  FAKE_ENTER("cuModuleLoadData");
  if (!image)
    return CUDA_ERROR_INVALID_VALUE;
  auto m = std::make_unique<Module>();
  const char *bytes = static_cast<const char *>(image);
  if (std::memcmp(bytes, "\x7f" "ELF", 4) == 0) {
    m->functions = parseCubin(bytes);
  } else {
    std::string_view ptx(bytes);
    if (ptx.find(".version") == std::string_view::npos || ptx.find(".target") == std::string_view::npos)
      return CUDA_ERROR_INVALID_IMAGE;
    m->functions = parsePtx(ptx);
  }
  const auto globals = std::memcmp(bytes, "\x7f" "ELF", 4) == 0 ? parseCubinGlobals(bytes) : parsePtxGlobals(bytes);
  for (const auto &[name, size] : globals) {
    void *p = std::aligned_alloc(256, (std::max<size_t>(size, 1) + 255) / 256 * 256);
    std::memset(p, 0, size);
    m->globals[name] = {p, size};
    s.allocations[reinterpret_cast<uint64_t>(p)] = size;
  }
  Module *raw = m.release();
  s.modules.insert(raw);
  *module = reinterpret_cast<CUmodule>(raw);
  return CUDA_SUCCESS;
}

/// The driver's JIT: PTX for a newer target than the device fails, with
/// ptxas's message in the error log buffer when one is given.
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned numOptions, CUjit_option *options,
                            void **values) {
  const char *bytes = static_cast<const char *>(image);
  if (bytes && std::memcmp(bytes, "\x7f" "ELF", 4) != 0) {
    std::string_view ptx(bytes);
    const size_t target = ptx.find(".target sm_");
    if (target != std::string_view::npos && std::atoi(bytes + target + 11) > fakeArch()) {
      char *log = nullptr;
      size_t size = 0;
      for (unsigned i = 0; i < numOptions; ++i) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
          log = static_cast<char *>(values[i]);
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
          size = size_t(reinterpret_cast<uintptr_t>(values[i]));
      }
      if (log && size)
        std::snprintf(log, size, "ptxas application ptx input, line 2; fatal   : SM version specified by "
                      ".target is higher than default SM version assumed");
      return CUDA_ERROR_INVALID_PTX;
    }
  }
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(CUmodule module) {
  FAKE_ENTER("cuModuleUnload");
  Module *m = reinterpret_cast<Module *>(module);
  if (!s.modules.erase(m))
    return CUDA_ERROR_INVALID_HANDLE;
  for (auto &[name, global] : m->globals) {
    s.allocations.erase(reinterpret_cast<uint64_t>(global.first));
    std::free(global.first);
  }
  delete m;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  Module *m = reinterpret_cast<Module *>(module);
  if (!s.modules.count(m))
    return CUDA_ERROR_INVALID_HANDLE;
  auto it = m->functions.find(name);
  if (it == m->functions.end())
    return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(it->second.get());
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal(CUdeviceptr *address, size_t *bytes, CUmodule module, const char *name) {
  FAKE_ENTER("cuModuleGetGlobal");
  Module *m = reinterpret_cast<Module *>(module);
  if (!s.modules.count(m) || !name)
    return CUDA_ERROR_INVALID_HANDLE;
  auto it = m->globals.find(name);
  if (it == m->globals.end())
    return CUDA_ERROR_NOT_FOUND;
  if (address)
    *address = reinterpret_cast<CUdeviceptr>(it->second.first);
  if (bytes)
    *bytes = it->second.second;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attribute, CUfunction function) {
  FAKE_ENTER("cuFuncGetAttribute");
  if (attribute == CU_FUNC_ATTRIBUTE_NUM_REGS) {
    *value = s.registers ? s.registers : reinterpret_cast<Function *>(function)->registers;
    return CUDA_SUCCESS;
  }
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    return CUDA_ERROR_INVALID_VALUE;
  *value = 1024;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value < 0 ||
      value > kOptinShared)
    return CUDA_ERROR_INVALID_VALUE;
  reinterpret_cast<Function *>(function)->maxDynamicShared = value;
  return CUDA_SUCCESS;
}

/// Occupancy as an H100 has it: 132 SMs of 2048 threads, 64K registers and
/// 228 KiB of shared memory (1 KiB of it reserved per CTA), 32 CTAs each.
static int fakeCtasPerSm(int registers, int threads, size_t shared) {
  if (threads <= 0 || threads > 1024 || shared > size_t(kOptinShared))
    return 0;
  const int byThreads = 2048 / threads;
  const int byRegisters = 65536 / (threads * std::max(1, registers));
  const int byShared = int((233472) / (shared + 1024));
  return std::min({32, byThreads, byRegisters, byShared});
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction function, int threads, size_t shared) {
  FAKE_ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!blocks || !function)
    return CUDA_ERROR_INVALID_VALUE;
  // The registers a thread as cuFuncGetAttribute reports them.
  const int registers = s.registers ? s.registers : reinterpret_cast<Function *>(function)->registers;
  *blocks = fakeCtasPerSm(registers, threads, shared);
  return CUDA_SUCCESS;
}

/// Clusters stay within a GPC: this fake's 132 SMs form seven GPCs of 18
/// and one of 6, so clusters of 4 leave SMs idle as a real H100's do.
CUresult cuOccupancyMaxActiveClusters(int *clusters, CUfunction function, const CUlaunchConfig *config) {
  FAKE_ENTER("cuOccupancyMaxActiveClusters");
  if (!clusters || !function || !config || config->gridDimX == 0)
    return CUDA_ERROR_INVALID_VALUE;
  const int registers = s.registers ? s.registers : reinterpret_cast<Function *>(function)->registers;
  const int perSm = fakeCtasPerSm(registers, int(config->blockDimX), size_t(config->sharedMemBytes));
  const int size = int(config->gridDimX); // the kernel's own cluster shape: a grid of one cluster
  *clusters = 7 * (18 * perSm / size) + 6 * perSm / size;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream stream,
                        void **kernelParams, void **extra) {
  std::function<void(const Launch &)> hook;
  Launch launch;
  {
    FAKE_ENTER("cuLaunchKernel");
    const Function *fn = reinterpret_cast<const Function *>(function);
    if (!fn || extra)
      return CUDA_ERROR_INVALID_VALUE;
    if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || !bx || !by || !bz ||
        uint64_t(bx) * by * bz > 1024 || bz > 64)
      return CUDA_ERROR_INVALID_VALUE;
    const unsigned block[3] = {bx, by, bz};
    for (int i = 0; i < 3; ++i)
      if (fn->maxThreads[0] && block[i] > std::max(fn->maxThreads[i], 1u))
        return CUDA_ERROR_INVALID_VALUE; // more threads than the kernel's .maxntid
    if (int(shared) > fn->maxDynamicShared)
      return CUDA_ERROR_INVALID_VALUE; // above 48 KiB without cuFuncSetAttribute
    if (stream && !s.streams.count(stream))
      return CUDA_ERROR_INVALID_HANDLE;
    launch.kernel = fn->name;
    std::copy(block, block + 3, launch.block);
    launch.grid[0] = gx, launch.grid[1] = gy, launch.grid[2] = gz;
    launch.sharedBytes = shared;
    launch.stream = stream;
    StreamOrder &order = s.order[stream];
    launch.seq = order.launches++;
    launch.after = order.after;
    if (!fn->params.empty() && !kernelParams)
      return CUDA_ERROR_INVALID_VALUE;
    const bool keep = recording() || s.hook;
    for (size_t i = 0; i < fn->params.size(); ++i) {
      const Parameter &p = fn->params[i];
      const auto *bytes = static_cast<const uint8_t *>(kernelParams[i]);
      if (p.tensorMap && reinterpret_cast<uintptr_t>(bytes) % 64)
        return CUDA_ERROR_INVALID_VALUE; // __grid_constant__ CUtensorMap: 64-byte aligned
      if (keep)
        launch.params.emplace_back(bytes, bytes + p.bytes);
      if (p.pointer && p.bytes == 8) {
        uint64_t address;
        std::memcpy(&address, bytes, 8);
        if (address && !inAllocation(s, address, 1))
          return CUDA_ERROR_ILLEGAL_ADDRESS; // a host pointer, or a freed buffer
      }
      if (p.tensorMap) {
        TensorMap map;
        if (!tegula_fake_cuda_decode_tensor_map(bytes, &map) || !inAllocation(s, map.address, 1))
          return CUDA_ERROR_ILLEGAL_ADDRESS;
      }
    }
    ++s.stats.launches;
    hook = s.hook;
  }
  if (hook)
    hook(launch); // outside the lock: it may copy memory through the driver
  if (!recording())
    return CUDA_SUCCESS;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.launches.push_back(std::move(launch));
  return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType dtype, cuuint32_t rank,
                                void *globalAddress, const cuuint64_t *globalDim,
                                const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                                const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                                CUtensorMapFloatOOBfill) {
  FAKE_ENTER("cuTensorMapEncodeTiled");
  // The rules cuTensorMapEncodeTiled documents for non-interleaved maps.
  static const std::map<CUtensorMapDataType, unsigned> elementBytes = {
      {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1},    {CU_TENSOR_MAP_DATA_TYPE_UINT16, 2},
      {CU_TENSOR_MAP_DATA_TYPE_UINT32, 4},   {CU_TENSOR_MAP_DATA_TYPE_INT32, 4},
      {CU_TENSOR_MAP_DATA_TYPE_UINT64, 8},   {CU_TENSOR_MAP_DATA_TYPE_INT64, 8},
      {CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2},  {CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4},
      {CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8},  {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2},
      {CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 4}};
  auto size = elementBytes.find(dtype);
  if (!tensorMap || size == elementBytes.end() || rank < 1 || rank > 5 ||
      interleave != CU_TENSOR_MAP_INTERLEAVE_NONE)
    return CUDA_ERROR_INVALID_VALUE;
  const uint64_t address = reinterpret_cast<uint64_t>(globalAddress);
  if (address % 16 || reinterpret_cast<uintptr_t>(tensorMap) % 64)
    return CUDA_ERROR_INVALID_VALUE;
  EncodedMap e{};
  e.magic = kTensorMapMagic;
  e.map.dtype = dtype;
  e.map.rank = rank;
  e.map.address = address;
  e.map.swizzle = swizzle;
  for (unsigned i = 0; i < rank; ++i) {
    if (globalDim[i] == 0 || globalDim[i] > (uint64_t(1) << 32) || boxDim[i] == 0 ||
        boxDim[i] > 256 || elementStrides[i] == 0 || elementStrides[i] > 8)
      return CUDA_ERROR_INVALID_VALUE;
    e.map.dims[i] = globalDim[i];
    e.map.box[i] = uint16_t(boxDim[i]);
    e.map.elementStrides[i] = uint16_t(elementStrides[i]);
    if (i + 1 < rank) {
      if (globalStrides[i] % 16 || globalStrides[i] >= (uint64_t(1) << 40))
        return CUDA_ERROR_INVALID_VALUE;
      e.map.strides[i] = globalStrides[i];
    }
  }
  const uint64_t innerBytes = uint64_t(boxDim[0]) * elementStrides[0] * size->second;
  if ((uint64_t(boxDim[0]) * size->second) % 16)
    return CUDA_ERROR_INVALID_VALUE; // the inner box dimension: a multiple of 16 bytes
  const unsigned span = swizzle == CU_TENSOR_MAP_SWIZZLE_128B  ? 128
                        : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                        : swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32
                                                               : 0;
  if (span && innerBytes > span)
    return CUDA_ERROR_INVALID_VALUE; // a swizzled box's rows fit the swizzle span
  std::memset(tensorMap, 0, sizeof *tensorMap);
  std::memcpy(tensorMap, &e, sizeof e);
  ++s.stats.encodes;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned) {
  FAKE_ENTER("cuStreamCreate");
  void *handle = new char;
  s.streams.insert(handle);
  *stream = reinterpret_cast<CUstream>(handle);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream stream) {
  FAKE_ENTER("cuStreamDestroy");
  if (!s.streams.erase(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  s.order.erase(stream); // a new stream at the same address starts afresh
  for (auto &[other, order] : s.order)
    order.after.erase(stream);
  delete reinterpret_cast<char *>(stream);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  FAKE_ENTER("cuStreamSynchronize");
  if (stream && !s.streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  ++s.stats.synchronizes;
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned) {
  FAKE_ENTER("cuEventCreate");
  auto *e = new Event;
  s.events.insert(e);
  *event = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  FAKE_ENTER("cuEventDestroy");
  auto *e = reinterpret_cast<Event *>(event);
  if (!s.events.erase(e))
    return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER("cuEventRecord");
  auto *e = reinterpret_cast<Event *>(event);
  if (!s.events.count(e) || (stream && !s.streams.count(stream)))
    return CUDA_ERROR_INVALID_HANDLE;
  e->at = std::chrono::steady_clock::now();
  e->recorded = true;
  e->stream = stream;
  e->order = s.order[stream];
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  FAKE_ENTER("cuStreamWaitEvent");
  auto *e = reinterpret_cast<Event *>(event);
  if (!s.events.count(e) || (stream && !s.streams.count(stream)) || flags)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!e->recorded)
    return CUDA_SUCCESS; // as the driver: waiting on a never-recorded event waits for nothing
  StreamOrder &waiter = s.order[stream];
  size_t &own = waiter.after[e->stream];
  own = std::max(own, e->order.launches);
  for (const auto &[other, count] : e->order.after) // transitively
    if (other != stream) {
      size_t &n = waiter.after[other];
      n = std::max(n, count);
    }
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) {
  FAKE_ENTER("cuEventSynchronize");
  return s.events.count(reinterpret_cast<Event *>(event)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  FAKE_ENTER("cuEventElapsedTime");
  auto *a = reinterpret_cast<Event *>(start), *b = reinterpret_cast<Event *>(end);
  if (!s.events.count(a) || !s.events.count(b))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded)
    return CUDA_ERROR_INVALID_VALUE;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return CUDA_SUCCESS;
}

} // extern "C"
