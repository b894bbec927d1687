// device.h - GPU memory and timing without staging: device-resident buffers,
// events, and a device-to-device copy.
//
//   tegula::DeviceBuffer x(n, tegula::DType::f32), out(n, tegula::DType::f32);
//   x.upload(host_x);                                   // std::vector<float>
//   k({.grid = g, .backend = tegula::Backend::GPU}, x, out, n, 1024); // no copies
//   auto t = tegula::time_ms([&] { k(...); }, 50);                    // t.median
//   out.download(host_out);
//
// Launches whose buffers all live on the device are asynchronous (like CUDA's):
// a fault inside the kernel is reported by the next call that waits for the
// GPU (download, Event::synchronize, tegula::synchronize), or right after the
// launch with TEGULA_LAUNCH_BLOCKING=1. Everything runs on the default stream
// of the current device ($TEGULA_DEVICE, default 0), so launches, copies and
// events are ordered with each other - except launches given a stream of
// their own (LaunchOptions::stream, e.g. torch's current stream).
//
// No MLIR and no cuda.h here: device addresses are plain integers.
#pragma once

#include "tegula/dtype.h"
#include "tegula/error.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace tegula {

/// Whether a CUDA driver and a usable GPU are present; `why` receives the
/// reason when not ("no CUDA driver: cannot load libcuda.so.1 (...)").
bool gpu_available(std::string *why = nullptr);

/// What the current device is; throws tegula::Error without a driver.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;           // "NVIDIA H100 80GB HBM3"
  std::string chip;           // the compile target: "sm_90a"
  int driver_version = 0;     // 13000 for CUDA 13.0
  size_t total_memory = 0;    // bytes
  int memory_clock_khz = 0;   // as the driver reports it
  int memory_bus_bits = 0;
  int multiprocessors = 0;    // SMs: the grid of a persistent kernel (2x with ping_pong: 2 programs a CTA)
  /// 2 * clock * bus width: the nominal DRAM bandwidth the attributes imply.
  double nominal_bandwidth_gbs() const {
    return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9;
  }
};
DeviceInfo device_info();

/// Waits for all work on the current device; reports an asynchronous fault.
void synchronize();

/// `count` elements of `dtype` in the current device's global memory. Owns
/// its allocation (freed in the destructor), move-only. Contents start
/// uninitialised. An empty buffer (count 0, or default-constructed or moved
/// from) holds no memory and needs no driver.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t count, DType dtype);
  /// A device copy of `host`.
  template <class T> static DeviceBuffer from(std::span<T> host) {
    DeviceBuffer b(host.size(), dtype_of_v<T>);
    b.upload(host);
    return b;
  }
  template <class T> static DeviceBuffer from(const std::vector<T> &host) {
    return from(std::span<const T>(host));
  }
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  size_t size() const { return count_; }
  DType dtype() const { return dtype_; }
  size_t bytes() const { return count_ * dtype_size(dtype_); }
  bool empty() const { return count_ == 0; }
  /// The device address (a CUdeviceptr); 0 when empty.
  uint64_t device_ptr() const { return ptr_; }

  /// Copy `host` into elements [offset, offset + host.size()). Synchronous.
  template <class T> void upload(std::span<T> host, size_t offset = 0) {
    upload_bytes(host.data(), host.size(), dtype_of_v<T>, offset);
  }
  template <class T> void upload(const std::vector<T> &host, size_t offset = 0) {
    upload(std::span<const T>(host), offset);
  }
  /// Copy elements [offset, offset + host.size()) into `host`. Waits for the
  /// kernels before it on the device.
  template <class T> void download(std::span<T> host, size_t offset = 0) const {
    static_assert(!std::is_const_v<T>, "download into a writable span");
    download_bytes(host.data(), host.size(), dtype_of_v<T>, offset);
  }
  template <class T> void download(std::vector<T> &host, size_t offset = 0) const {
    download(std::span<T>(host), offset);
  }
  /// The whole buffer on the host.
  template <class T> std::vector<T> to_host() const {
    std::vector<T> v(count_);
    download(std::span<T>(v));
    return v;
  }
  /// Every byte set to `value` (0xff makes f32/f16/bf16 NaN: a poisoned
  /// output). Asynchronous, ordered with launches.
  void fill_bytes(uint8_t value);

  /// Raw forms of upload/download: `count` elements of `dtype` (which must
  /// be this buffer's) at element `offset`.
  void upload_bytes(const void *host, size_t count, DType dtype, size_t offset);
  void download_bytes(void *host, size_t count, DType dtype, size_t offset) const;

private:
  void release() noexcept;
  uint64_t ptr_ = 0;
  size_t count_ = 0;
  DType dtype_ = DType::f32;
};

/// dst[0, src.bytes()) = src, on the device (cuMemcpyDtoD): the reference a
/// memory-bound kernel's bandwidth is compared with. Byte sizes must match
/// (dtypes may differ). Asynchronous, ordered with launches.
void copy(const DeviceBuffer &src, DeviceBuffer &dst);

/// A point in the default stream's work; two of them time what ran between.
class Event {
public:
  /// Creates the event; throws tegula::Error without a driver.
  Event();
  ~Event();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  /// Marks this point of the default stream.
  void record();
  /// Marks this point of `stream` (a handle, LaunchOptions::stream's).
  void record(uint64_t stream);
  /// Work given to `stream` from now on runs after the recorded point
  /// (cuStreamWaitEvent): orders two streams at a point of one's choosing.
  void make_wait(uint64_t stream) const;
  /// Waits until the GPU has reached the recorded point.
  void synchronize() const;
  /// Milliseconds between `start` and this event (both recorded, this one
  /// reached); about half a microsecond resolution.
  float elapsed_ms(const Event &start) const;

private:
  void *event_ = nullptr; // CUevent
  bool recorded_ = false;
};

/// A CUDA stream of the caller's own (non-blocking: nothing orders it with
/// the default stream implicitly): launches on it take
/// LaunchOptions::stream = handle(), and run concurrently with the default
/// stream's work except where wait_for / join_into order them. Throws
/// tegula::Error without a driver.
class Stream {
public:
  Stream();
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  /// For LaunchOptions::stream.
  uint64_t handle() const { return reinterpret_cast<uint64_t>(stream_); }
  /// Work given to this stream from now on runs after the work given to
  /// `other` (a stream handle; 0: the default stream) so far.
  void wait_for(uint64_t other);
  /// Work given to `other` from now on runs after this stream's so far.
  void join_into(uint64_t other);
  /// Waits until this stream's work is done; reports an asynchronous fault.
  void synchronize();

private:
  void *stream_ = nullptr;               // CUstream
  void *waitEvent_ = nullptr;            // recorded on `other` by wait_for
  void *joinEvent_ = nullptr;            // recorded on this stream by join_into
};

/// GPU time per kernel. While profiling is on (profile_kernels(true), or
/// TEGULA_PROFILE=1 from the start) each GPU launch is bracketed by a pair
/// of events on its stream - launches stay asynchronous, each costs two more
/// event records - and kernel_profile() waits for them, returns the time
/// per kernel name and label (most first) and forgets them. Records
/// accumulate until then (two pooled events each).
struct KernelProfile {
  std::string kernel;
  std::string label; // the ProfileLabel the launches were made under, or ""
  int calls = 0;
  double total_ms = 0;
};
void profile_kernels(bool on);
bool profiling_kernels();
std::vector<KernelProfile> kernel_profile();

/// While it lives, the launches this thread makes are profiled under
/// `label` too (the innermost of nested ones): one kernel run for several
/// purposes - GPT-2's linear layers, a GEMM for four shapes - reported apart
/// by kernel_profile(). Costs nothing while profiling is off but setting a
/// thread-local string.
class ProfileLabel {
public:
  explicit ProfileLabel(std::string label);
  ~ProfileLabel();
  ProfileLabel(const ProfileLabel &) = delete;
  ProfileLabel &operator=(const ProfileLabel &) = delete;

private:
  std::string previous_;
};

/// Per-call GPU time of `fn` over `iters` calls, after `warmup` calls.
struct Timing {
  double median = 0, min = 0, max = 0; // milliseconds
  int iters = 0;
};
/// Times `fn` (which enqueues GPU work, e.g. one launch on device buffers)
/// with an event pair around each call. All calls are enqueued before one
/// wait, so the GPU stays busy and host launch overhead is hidden as long as
/// enqueueing is faster than the work. Throws tegula::Error when iters < 1.
Timing time_ms(const std::function<void()> &fn, int iters = 20, int warmup = 3);

} // namespace tegula
