//===- GpuLaunch.h - load and launch compiled kernels -----------*- C++ -*-===//
//
// The GPU half of a launch: the current device (primary context of
// $TEGULA_DEVICE, default 0), modules loaded from cubin (or PTX through the
// driver's JIT), and a launch that passes device buffers as they are and
// stages host buffers (copied to the device, written ones copied back).
// Every driver call is checked and errors name the call, the code and the
// kernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceErrorReport.h"
#include "runtime/TensorMap.h"
#include "tegula/kernel.h"

#include <memory>
#include <string>
#include <vector>

namespace tegula::runtime {

struct GpuDevice {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;
  int multiprocessors = 0; // SMs
  /// The compile target for this device: sm_80, sm_86, sm_90a, ...
  const std::string &chip() const { return chip_; }

private:
  friend const GpuDevice &currentDevice();
  std::string chip_;
};

/// The device kernels run on; initialises the driver and its context on
/// first use. Throws tegula::Error ("no CUDA driver ...") without one.
const GpuDevice &currentDevice();

/// A kernel loaded into the current context.
class LoadedKernel {
public:
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel &) = delete;
  LoadedKernel &operator=(const LoadedKernel &) = delete;
  /// Load from a cubin, or from PTX (driver JIT) when the cubin is empty.
  /// `dynamicSharedBytes`: what each launch provides (above 48 KiB the
  /// kernel is opted in first; an error names the device's limit).
  /// `tensorMaps`: the hidden TMA parameters each launch encodes and
  /// appends after the kernel's own. `programsPerCta` 2 (ping-pong): each
  /// CTA runs two programs of numWarps warps; the launch passes the grid's
  /// program count along x as a last hidden parameter. `clusterSize` > 1:
  /// the kernel declares clusters of that many CTAs along x
  /// (.reqnctapercluster), so the grid's x must be a multiple of it.
  /// `errorSites`: what each place the kernel stops on purpose says
  /// (CompiledKernel::error_sites); the module gets a record to report in.
  static std::shared_ptr<LoadedKernel> load(const std::vector<char> &cubin, const std::string &ptx,
                                            const std::string &name, int dynamicSharedBytes = 0,
                                            std::vector<TensorMapSpec> tensorMaps = {}, int producerWarps = 0,
                                            int programsPerCta = 1, int clusterSize = 1,
                                            std::vector<std::string> errorSites = {});
  const std::string &name() const { return name_; }
  void *function() const { return function_; }
  int dynamicSharedBytes() const { return dynamicShared_; }
  const std::vector<TensorMapSpec> &tensorMaps() const { return tensorMaps_; }
  /// Warps every launch adds to num_warps (a warp-specialised kernel's producers).
  int producerWarps() const { return producerWarps_; }
  int programsPerCta() const { return programsPerCta_; }
  int clusterSize() const { return clusterSize_; }

private:
  std::vector<TensorMapSpec> tensorMaps_;
  LoadedKernel() = default;
  std::string name_;
  int dynamicShared_ = 0, producerWarps_ = 0, programsPerCta_ = 1, clusterSize_ = 1;
  void *module_ = nullptr, *function_ = nullptr;
  std::unique_ptr<DeviceErrorSlot> errorSlot_; // released after the module unloads
};

/// How many CTAs of `kernel` (numWarps warps a program, its producers and
/// dynamic shared memory) the current device runs at once: whole clusters
/// only, for a kernel in clusters (cuOccupancyMaxActiveClusters), else the
/// CTAs an SM holds times the SMs.
int maxResidentCtas(const LoadedKernel &kernel, int numWarps);

/// Launch with 32 * numWarps threads per program. Device buffers are passed
/// as they are; host buffers are staged: copied in, and after the wait the
/// ones that are not read-only are copied back. A launch with no host
/// buffers does not wait (TEGULA_LAUNCH_BLOCKING=1 makes it). Arguments
/// follow the kernel's parameters; tl::constant ones are not passed.
/// `stream`: a CUstream of the current context (0: the default stream).
/// `paramNames` name the parameters in errors (tensor maps TMA refuses).
void launchKernel(const LoadedKernel &kernel, Grid grid, int numWarps,
                  const std::vector<ParamInfo> &params, const std::vector<Arg> &args,
                  uint64_t stream = 0, const std::vector<std::string> &paramNames = {});

/// Whether launches are profiled (tegula::profile_kernels, TEGULA_PROFILE=1).
bool profilingLaunches();

/// One profiled launch: an event on `stream` now, another when launched()
/// says the launch was enqueued, and only then a record of it
/// (runtime/Profile.cpp). A launch that fails leaves no record.
class ProfiledLaunch {
public:
  ProfiledLaunch(std::string kernel, uint64_t stream);
  ~ProfiledLaunch();
  ProfiledLaunch(const ProfiledLaunch &) = delete;
  ProfiledLaunch &operator=(const ProfiledLaunch &) = delete;
  void launched();

private:
  std::string kernel_;
  uint64_t stream_;
  void *start_ = nullptr, *end_ = nullptr; // CUevent
  bool done_ = false;
};

} // namespace tegula::runtime
