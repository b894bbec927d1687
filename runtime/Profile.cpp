//===- Profile.cpp - GPU time per kernel, from events around launches -----===//
//
// While profiling is on, runtime::launchKernel brackets each launch with a
// pair of CUDA events on its stream; kernel_profile() waits for them and sums
// the elapsed times per kernel name. The events come from a pool (creating
// one costs more than a launch) and are kept for the process. Off, a launch
// pays one relaxed atomic load.
//
//===----------------------------------------------------------------------===//
#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tegula {
namespace runtime {
namespace {

struct Record {
  std::string kernel;
  CUevent start, end;
};

struct Profiler {
  std::atomic<bool> on{[] {
    const char *env = std::getenv("TEGULA_PROFILE");
    return env && *env && std::string(env) != "0";
  }()};
  std::mutex mutex;
  std::vector<Record> records;
  std::vector<CUevent> pool; // events of records already read

  CUevent event() {
    if (!pool.empty()) {
      CUevent e = pool.back();
      pool.pop_back();
      return e;
    }
    Driver &d = Driver::get();
    CUevent e;
    d.check(d.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate (TEGULA_PROFILE)");
    return e;
  }
};

Profiler &profiler() {
  static Profiler *p = new Profiler; // never destroyed: launches may run during exit
  return *p;
}

} // namespace

bool profilingLaunches() { return profiler().on.load(std::memory_order_relaxed); }

ProfiledLaunch::ProfiledLaunch(const std::string &kernel, uint64_t stream) : stream_(stream) {
  Profiler &p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  record_ = p.records.size();
  p.records.push_back({kernel, p.event(), p.event()});
  Driver &d = Driver::get();
  d.check(d.cuEventRecord(p.records.back().start, reinterpret_cast<CUstream>(stream)), "cuEventRecord", kernel);
}

void ProfiledLaunch::launched() {
  Profiler &p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  done_ = true;
  if (record_ >= p.records.size()) // kernel_profile() ran on another thread meanwhile
    return;
  Driver &d = Driver::get();
  const Record &r = p.records[record_];
  d.check(d.cuEventRecord(r.end, reinterpret_cast<CUstream>(stream_)), "cuEventRecord", r.kernel);
}

ProfiledLaunch::~ProfiledLaunch() {
  if (done_)
    return;
  // The launch failed: its record would never end.
  Profiler &p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (record_ + 1 == p.records.size()) {
    p.pool.push_back(p.records.back().start);
    p.pool.push_back(p.records.back().end);
    p.records.pop_back();
  }
}

} // namespace runtime

void profile_kernels(bool on) { runtime::profiler().on.store(on, std::memory_order_relaxed); }

bool profiling_kernels() { return runtime::profilingLaunches(); }

std::vector<KernelProfile> kernel_profile() {
  runtime::Profiler &p = runtime::profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  std::map<std::string, KernelProfile> byKernel;
  if (!p.records.empty()) {
    runtime::currentDevice();
    runtime::Driver &d = runtime::Driver::get();
    for (const runtime::Record &r : p.records) {
      d.check(d.cuEventSynchronize(r.end), "cuEventSynchronize (kernel_profile)", r.kernel);
      float ms = 0;
      d.check(d.cuEventElapsedTime(&ms, r.start, r.end), "cuEventElapsedTime (kernel_profile)", r.kernel);
      KernelProfile &k = byKernel[r.kernel];
      k.kernel = r.kernel;
      k.calls += 1;
      k.total_ms += ms;
      p.pool.push_back(r.start);
      p.pool.push_back(r.end);
    }
    p.records.clear();
  }
  std::vector<KernelProfile> out;
  for (auto &[name, k] : byKernel)
    out.push_back(std::move(k));
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelProfile &a, const KernelProfile &b) { return a.total_ms > b.total_ms; });
  return out;
}

} // namespace tegula
