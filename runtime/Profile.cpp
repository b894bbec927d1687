//===- Profile.cpp - GPU time per kernel, from events around launches -----===//
//
// While profiling is on, runtime::launchKernel brackets each launch with a
// pair of CUDA events on its stream; kernel_profile() waits for them and sums
// the elapsed times per kernel name and ProfileLabel (a thread-local string
// the launch reads as it is enqueued). Each launch owns its two events until it
// has been enqueued; only then does its record join the list, so a failed
// launch or a concurrent kernel_profile() cannot leave a half-made record.
// Events come from a pool (creating one costs more than a launch) and are
// kept for the process. Off, a launch pays one relaxed atomic load.
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
#include <utility>
#include <vector>

namespace tegula {
namespace runtime {
namespace {

struct Record {
  std::string kernel, label;
  CUevent start, end;
};

/// The innermost ProfileLabel of this thread ("" outside any).
thread_local std::string currentLabel;

struct Profiler {
  std::atomic<bool> on{[] {
    const char *env = std::getenv("TEGULA_PROFILE");
    return env && *env && std::string(env) != "0";
  }()};
  std::mutex mutex;
  std::vector<Record> records; // launches enqueued, not yet read
  std::vector<CUevent> pool;   // events no record holds

  CUevent take() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!pool.empty()) {
        CUevent e = pool.back();
        pool.pop_back();
        return e;
      }
    }
    Driver &d = Driver::get();
    CUevent e;
    d.check(d.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate (TEGULA_PROFILE)");
    return e;
  }
  void giveBack(CUevent a, CUevent b) {
    std::lock_guard<std::mutex> lock(mutex);
    pool.push_back(a);
    pool.push_back(b);
  }
};

Profiler &profiler() {
  static Profiler *p = new Profiler; // never destroyed: launches may run during exit
  return *p;
}

} // namespace

bool profilingLaunches() { return profiler().on.load(std::memory_order_relaxed); }

ProfiledLaunch::ProfiledLaunch(std::string kernel, uint64_t stream)
    : kernel_(std::move(kernel)), stream_(stream) {
  Profiler &p = profiler();
  start_ = p.take();
  end_ = p.take();
  Driver &d = Driver::get();
  try {
    d.check(d.cuEventRecord(static_cast<CUevent>(start_), reinterpret_cast<CUstream>(stream_)), "cuEventRecord",
            kernel_);
  } catch (...) {
    p.giveBack(static_cast<CUevent>(start_), static_cast<CUevent>(end_));
    throw;
  }
}

void ProfiledLaunch::launched() {
  Driver &d = Driver::get();
  d.check(d.cuEventRecord(static_cast<CUevent>(end_), reinterpret_cast<CUstream>(stream_)), "cuEventRecord",
          kernel_);
  Profiler &p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.records.push_back({std::move(kernel_), currentLabel, static_cast<CUevent>(start_), static_cast<CUevent>(end_)});
  done_ = true;
}

ProfiledLaunch::~ProfiledLaunch() {
  if (!done_) // the launch failed: no record
    profiler().giveBack(static_cast<CUevent>(start_), static_cast<CUevent>(end_));
}

} // namespace runtime

void profile_kernels(bool on) { runtime::profiler().on.store(on, std::memory_order_relaxed); }

ProfileLabel::ProfileLabel(std::string label) : previous_(std::exchange(runtime::currentLabel, std::move(label))) {}

ProfileLabel::~ProfileLabel() { runtime::currentLabel = std::move(previous_); }

bool profiling_kernels() { return runtime::profilingLaunches(); }

std::vector<KernelProfile> kernel_profile() {
  runtime::Profiler &p = runtime::profiler();
  std::vector<runtime::Record> records;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    records.swap(p.records);
  }
  std::map<std::pair<std::string, std::string>, KernelProfile> byKernel;
  try {
    if (!records.empty()) {
      runtime::currentDevice();
      runtime::Driver &d = runtime::Driver::get();
      for (const runtime::Record &r : records) {
        d.check(d.cuEventSynchronize(r.end), "cuEventSynchronize (kernel_profile)", r.kernel);
        float ms = 0;
        d.check(d.cuEventElapsedTime(&ms, r.start, r.end), "cuEventElapsedTime (kernel_profile)", r.kernel);
        KernelProfile &k = byKernel[{r.kernel, r.label}];
        k.kernel = r.kernel;
        k.label = r.label;
        k.calls += 1;
        k.total_ms += ms;
      }
    }
  } catch (...) {
    // A fault in a kernel (reported here): the records are dropped, their
    // events stay usable.
    for (const runtime::Record &r : records)
      p.giveBack(r.start, r.end);
    throw;
  }
  for (const runtime::Record &r : records)
    p.giveBack(r.start, r.end);
  std::vector<KernelProfile> out;
  for (auto &[name, k] : byKernel)
    out.push_back(std::move(k));
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelProfile &a, const KernelProfile &b) { return a.total_ms > b.total_ms; });
  return out;
}

} // namespace tegula
