//===- GpuLaunch.cpp - load and launch compiled kernels -------------------===//
#include "runtime/GpuLaunch.h"

#include <optional>

#include "runtime/CudaDriver.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tegula::runtime {

const GpuDevice &currentDevice() {
  static GpuDevice device = [] {
    Driver &d = Driver::get();
    GpuDevice dev;
    if (const char *env = std::getenv("TEGULA_DEVICE"); env && *env)
      dev.ordinal = std::atoi(env);
    int count = 0;
    d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (dev.ordinal < 0 || dev.ordinal >= count)
      throw Error(fmt::format("TEGULA_DEVICE={} but the driver sees {} device(s)", dev.ordinal,
                              count));
    CUdevice handle;
    d.check(d.cuDeviceGet(&handle, dev.ordinal), "cuDeviceGet");
    char name[256] = {};
    d.check(d.cuDeviceGetName(name, sizeof name, handle), "cuDeviceGetName");
    dev.name = name;
    d.check(d.cuDeviceGetAttribute(&dev.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   handle),
            "cuDeviceGetAttribute");
    d.check(d.cuDeviceGetAttribute(&dev.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                   handle),
            "cuDeviceGetAttribute");
    d.check(d.cuDeviceGetAttribute(&dev.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, handle),
            "cuDeviceGetAttribute");
    if (dev.major < 8)
      throw Error(fmt::format("{} (sm_{}{}) is older than sm_80, the oldest GPU Tegula targets",
                              dev.name, dev.major, dev.minor));
    // Hopper's wgmma/TMA need the arch-specific target.
    dev.chip_ = fmt::format("sm_{}{}{}", dev.major, dev.minor, dev.major == 9 ? "a" : "");
    CUcontext ctx;
    d.check(d.cuDevicePrimaryCtxRetain(&ctx, handle), "cuDevicePrimaryCtxRetain");
    d.check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    return dev;
  }();
  // Threads other than the first need the context made current too (once
  // each: this runs on every launch, copy and event).
  thread_local bool current = false;
  if (!current) {
    CUcontext ctx;
    Driver &d = Driver::get();
    CUdevice handle;
    d.check(d.cuDeviceGet(&handle, device.ordinal), "cuDeviceGet");
    d.check(d.cuDevicePrimaryCtxRetain(&ctx, handle), "cuDevicePrimaryCtxRetain");
    d.check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    d.check(d.cuDevicePrimaryCtxRelease(handle), "cuDevicePrimaryCtxRelease");
    current = true;
  }
  return device;
}

namespace {
/// A kernel that moves registers between warpgroups (setmaxnreg) declares
/// its per-thread count (.maxnreg): the compiler sized the consumers'
/// increase so that it fits in the CTA's pool, threads x that count. The
/// pool is what the function was actually given, so a count other than the
/// declared one - another ptxas, the driver's JIT - would leave
/// setmaxnreg.inc waiting forever: refuse the kernel by name instead.
void checkRegisterPool(Driver &d, CUfunction fn, const std::string &ptx, const std::string &name) {
  // The entry's directives (between its parameter list and its body) and body.
  const size_t entry = ptx.find(".entry " + name + "(");
  const size_t params = entry == std::string::npos ? entry : ptx.find(')', entry);
  const size_t body = params == std::string::npos ? params : ptx.find('{', params);
  if (body == std::string::npos)
    return;
  const size_t next = ptx.find(".entry ", body);
  const size_t at = ptx.substr(params, body - params).find(".maxnreg ");
  if (at == std::string::npos || ptx.substr(body, next - body).find("setmaxnreg.") == std::string::npos)
    return;
  const int declared = std::atoi(ptx.c_str() + params + at + 9);
  int registers = 0;
  d.check(d.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute", name);
  if (registers != declared)
    throw Error(fmt::format("kernel '{}' moves registers between its warpgroups (setmaxnreg) in a pool of {} "
                            "registers a thread (its .maxnreg), but the loaded function was given {} (a cubin "
                            "from another ptxas, or the driver's JIT): its consumers' setmaxnreg.inc would wait "
                            "forever. Launch it without warp_specialize, or build its cubin with Tegula's ptxas",
                            name, declared, registers));
}

/// The module holding `name`: its cubin; without one, or when the driver
/// refuses it (a GPU other than the one it was built for), its PTX through
/// the driver's JIT, whose log a failure carries.
CUmodule loadModule(Driver &d, const std::vector<char> &cubin, const std::string &ptx,
                    const std::string &name) {
  CUmodule module = nullptr;
  if (!cubin.empty()) {
    const CUresult r = d.cuModuleLoadData(&module, cubin.data());
    if (r == CUDA_SUCCESS)
      return module;
    if (ptx.empty())
      d.check(r, "cuModuleLoadData", name);
    std::fprintf(stderr, "tegula: kernel '%s': the driver refused its cubin: %s; loading its PTX through the "
                 "driver's JIT\n", name.c_str(), d.describe(r).c_str());
  }
  std::array<char, 16384> log{};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(uintptr_t(log.size() - 1))};
  const CUresult r = d.cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS && log[0])
    throw Error(fmt::format("cuModuleLoadDataEx failed for kernel '{}': {}; the JIT says:\n{}", name,
                            d.describe(r), log.data()));
  d.check(r, "cuModuleLoadDataEx", name);
  return module;
}
} // namespace

std::shared_ptr<LoadedKernel> LoadedKernel::load(const std::vector<char> &cubin,
                                                 const std::string &ptx, const std::string &name,
                                                 int dynamicSharedBytes,
                                                 std::vector<TensorMapSpec> tensorMaps, int producerWarps,
                                                 int programsPerCta, int clusterSize,
                                                 std::vector<std::string> errorSites) {
  currentDevice();
  Driver &d = Driver::get();
  std::shared_ptr<LoadedKernel> k(new LoadedKernel());
  k->name_ = name;
  k->producerWarps_ = producerWarps;
  k->programsPerCta_ = programsPerCta;
  k->clusterSize_ = clusterSize;
  CUmodule module = loadModule(d, cubin, ptx, name);
  k->module_ = module;
  CUfunction fn;
  d.check(d.cuModuleGetFunction(&fn, module, name.c_str()), "cuModuleGetFunction", name);
  k->function_ = fn;
  checkRegisterPool(d, fn, ptx, name);
  k->errorSlot_ = DeviceErrorSlot::attach(module, name, std::move(errorSites));
  k->dynamicShared_ = dynamicSharedBytes;
  k->tensorMaps_ = std::move(tensorMaps);
  if (dynamicSharedBytes > 48 * 1024) {
    CUdevice device;
    int optin = 0;
    d.check(d.cuDeviceGet(&device, currentDevice().ordinal), "cuDeviceGet", name);
    d.check(d.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   device),
            "cuDeviceGetAttribute", name);
    if (dynamicSharedBytes > optin)
      throw Error(fmt::format("kernel '{}' needs {} bytes of shared memory per CTA; {} allows "
                              "at most {} (smaller tiles, fewer stages)",
                              name, dynamicSharedBytes, currentDevice().name, optin));
    d.check(d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 dynamicSharedBytes),
            "cuFuncSetAttribute", name);
  }
  return k;
}

int maxResidentCtas(const LoadedKernel &kernel, int numWarps) {
  const Driver &d = Driver::get();
  const unsigned threads = unsigned(32 * (numWarps * kernel.programsPerCta() + kernel.producerWarps()));
  auto fn = static_cast<CUfunction>(kernel.function());
  if (kernel.clusterSize() > 1) {
    // The cluster shape is the kernel's own (.reqnctapercluster); the grid
    // only has to be whole clusters.
    CUlaunchConfig config{};
    config.gridDimX = unsigned(kernel.clusterSize());
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = threads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = unsigned(kernel.dynamicSharedBytes());
    int clusters = 0;
    d.check(d.cuOccupancyMaxActiveClusters(&clusters, fn, &config), "cuOccupancyMaxActiveClusters", kernel.name());
    if (clusters < 1)
      throw Error(fmt::format("kernel '{}': no cluster of {} CTAs of {} threads and {} bytes of shared memory fits "
                              "on {} at once",
                              kernel.name(), kernel.clusterSize(), threads, kernel.dynamicSharedBytes(),
                              currentDevice().name));
    return clusters * kernel.clusterSize();
  }
  int perSm = 0;
  d.check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, fn, int(threads), size_t(kernel.dynamicSharedBytes())),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", kernel.name());
  if (perSm < 1)
    throw Error(fmt::format("kernel '{}': no CTA of {} threads and {} bytes of shared memory fits on an SM of {}",
                            kernel.name(), threads, kernel.dynamicSharedBytes(), currentDevice().name));
  return perSm * currentDevice().multiprocessors;
}

LoadedKernel::~LoadedKernel() {
  if (module_ && Driver::available())
    Driver::get().cuModuleUnload(static_cast<CUmodule>(module_)); // best effort at exit
  errorSlot_.reset(); // after: a report its kernel left stays listed
}

namespace {
/// TEGULA_LAUNCH_BLOCKING=1: wait after every launch, so an asynchronous
/// fault names the kernel that caused it.
bool launchBlocking() {
  static const bool on = [] {
    const char *env = std::getenv("TEGULA_LAUNCH_BLOCKING");
    return env && *env && std::string(env) != "0";
  }();
  return on;
}

/// `n` values of T on the stack when n <= N, else on the heap: a launch's
/// parameters without an allocation in the common case.
template <class T, size_t N> class LaunchStorage {
public:
  explicit LaunchStorage(size_t n) {
    if (n > N) {
      heap_.resize(n);
      data_ = heap_.data();
    }
  }
  T &operator[](size_t i) { return data_[i]; }
  T *data() { return data_; }

private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;
  T *data_ = inline_.data();
};
} // namespace

void launchKernel(const LoadedKernel &kernel, Grid grid, int numWarps,
                  const std::vector<ParamInfo> &params, const std::vector<Arg> &args,
                  uint64_t stream, const std::vector<std::string> &paramNames) {
  Driver &d = Driver::get();
  const std::string &name = kernel.name();
  struct DeviceCopy {
    CUdeviceptr ptr = 0;
    const Arg *arg = nullptr;
  };
  std::vector<DeviceCopy> copies; // staged host buffers only (no allocation without)
  // Scalars and device addresses live here until the launch reads them.
  LaunchStorage<std::array<char, 8>, 24> scalars(args.size());
  LaunchStorage<void *, 32> kernelParams(args.size() + kernel.tensorMaps().size() + 1);
  size_t numParams = 0;
  auto freeAll = [&] {
    for (DeviceCopy &c : copies)
      if (c.ptr)
        d.cuMemFree(c.ptr);
  };
  try {
    for (size_t i = 0; i < params.size(); ++i) {
      const ParamInfo &p = params[i];
      const Arg &a = args[i];
      if (p.kind == ParamInfo::Kind::Constant)
        continue;
      if (p.kind == ParamInfo::Kind::Pointer && a.on_device()) {
        CUdeviceptr ptr = a.device_ptr();
        std::memcpy(scalars[i].data(), &ptr, sizeof(CUdeviceptr));
      } else if (p.kind == ParamInfo::Kind::Pointer) {
        DeviceCopy c{0, &a};
        d.check(d.cuMemAlloc(&c.ptr, std::max<size_t>(a.bytes(), 1)), "cuMemAlloc", name);
        copies.push_back(c);
        if (a.bytes())
          d.check(d.cuMemcpyHtoD(c.ptr, a.data(), a.bytes()), "cuMemcpyHtoD", name);
        std::memcpy(scalars[i].data(), &copies.back().ptr, sizeof(CUdeviceptr));
      } else {
        switch (p.dtype) {
        case DType::i1: { int8_t v = a.as_int() != 0; std::memcpy(scalars[i].data(), &v, 1); break; }
        case DType::i8: { int8_t v = int8_t(a.as_int()); std::memcpy(scalars[i].data(), &v, 1); break; }
        case DType::i16: { int16_t v = int16_t(a.as_int()); std::memcpy(scalars[i].data(), &v, 2); break; }
        case DType::i32: { int32_t v = int32_t(a.as_int()); std::memcpy(scalars[i].data(), &v, 4); break; }
        case DType::i64: { int64_t v = a.as_int(); std::memcpy(scalars[i].data(), &v, 8); break; }
        case DType::f32: { float v = float(a.as_float()); std::memcpy(scalars[i].data(), &v, 4); break; }
        case DType::f64: { double v = a.as_float(); std::memcpy(scalars[i].data(), &v, 8); break; }
        default:
          throw Error(fmt::format("kernel '{}': {} scalar arguments are not supported on the GPU",
                                  name, dtype_name(p.dtype)));
        }
      }
      kernelParams[numParams++] = scalars[i].data();
    }
    // Hidden parameters: the TMA tensor maps, encoded for these buffers (once
    // per buffer and shape: the cache serves repeated launches).
    const std::vector<TensorMapSpec> &specs = kernel.tensorMaps();
    LaunchStorage<TensorMapBytes, 8> maps(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      CUdeviceptr base;
      std::memcpy(&base, scalars[size_t(specs[i].base)].data(), sizeof base);
      const ResolvedTensorMap resolved = resolveTensorMap(specs[i], uint64_t(base), args, paramNames, name);
      maps[i] = TensorMapCache::gpu().get(
          resolved, [&](const ResolvedTensorMap &m) { return encodeTensorMapForGpu(m, name); });
      kernelParams[numParams++] = maps[i].bytes.data();
    }
    // Ping-pong: CTA c runs programs 2c and 2c + 1 of the launch, which
    // tells the kernel how many there are.
    const int programs = kernel.programsPerCta();
    uint32_t programsX = grid.x;
    if (programs > 1)
      kernelParams[numParams++] = &programsX;
    const unsigned ctasX = unsigned((uint64_t(grid.x) + unsigned(programs) - 1) / unsigned(programs));
    if (ctasX % unsigned(kernel.clusterSize()) != 0)
      throw Error(fmt::format("kernel '{}' runs in thread-block clusters of {} CTAs along x, but the launch has {} "
                              "CTAs along x: make grid.x a multiple of {}",
                              name, kernel.clusterSize(), ctasX, kernel.clusterSize()));
    // The staging copies ran on the default stream; a caller's stream (which
    // may not synchronise with it) must not start the kernel before they land.
    if (!copies.empty() && stream)
      d.check(d.cuCtxSynchronize(), "cuCtxSynchronize", name);
    std::optional<ProfiledLaunch> profiled;
    if (profilingLaunches())
      profiled.emplace(name, stream);
    d.check(d.cuLaunchKernel(static_cast<CUfunction>(kernel.function()), ctasX, grid.y, grid.z,
                             unsigned(32 * (numWarps * programs + kernel.producerWarps())), 1, 1,
                             unsigned(kernel.dynamicSharedBytes()),
                             reinterpret_cast<CUstream>(stream), kernelParams.data(),
                             nullptr),
            "cuLaunchKernel", name);
    if (profiled)
      profiled->launched();
    // Only staged buffers force a wait (to copy back and free); launches on
    // device buffers alone stay asynchronous, so they can be timed back to back.
    if (!copies.empty() || launchBlocking())
      d.check(d.cuCtxSynchronize(), "cuCtxSynchronize", name);
    for (DeviceCopy &c : copies)
      if (!c.arg->readonly() && c.arg->bytes())
        d.check(d.cuMemcpyDtoH(c.arg->data(), c.ptr, c.arg->bytes()), "cuMemcpyDtoH", name);
  } catch (...) {
    freeAll();
    throw;
  }
  freeAll();
}

} // namespace tegula::runtime
