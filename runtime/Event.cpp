//===- Event.cpp - GPU timing with events on the default stream -----------===//
#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace tegula {

using runtime::Driver;

Event::Event() {
  runtime::currentDevice(); // "no CUDA driver ..." here
  Driver &d = Driver::get();
  CUevent ev;
  d.check(d.cuEventCreate(&ev, CU_EVENT_DEFAULT), "cuEventCreate");
  event_ = ev;
}

Event::~Event() {
  if (!event_)
    return;
  try { // best effort, as for buffers
    runtime::currentDevice();
    Driver::get().cuEventDestroy(static_cast<CUevent>(event_));
  } catch (...) {
  }
}

Event::Event(Event &&other) noexcept
    : event_(std::exchange(other.event_, nullptr)),
      recorded_(std::exchange(other.recorded_, false)) {}

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    std::swap(event_, other.event_);
    std::swap(recorded_, other.recorded_);
  }
  return *this;
}

namespace {
void *live(void *event, const char *what) {
  if (!event)
    throw Error(fmt::format("Event::{} on a moved-from event", what));
  runtime::currentDevice(); // this thread's context
  return event;
}
} // namespace

void Event::record() { record(0); }

void Event::record(uint64_t stream) {
  CUevent ev = static_cast<CUevent>(live(event_, "record"));
  Driver &d = Driver::get();
  d.check(d.cuEventRecord(ev, reinterpret_cast<CUstream>(stream)), "cuEventRecord");
  recorded_ = true;
}

void Event::make_wait(uint64_t stream) const {
  CUevent ev = static_cast<CUevent>(live(event_, "make_wait"));
  if (!recorded_)
    throw Error("Event::make_wait: the event was never recorded");
  Driver &d = Driver::get();
  d.check(d.cuStreamWaitEvent(reinterpret_cast<CUstream>(stream), ev, 0), "cuStreamWaitEvent");
}

void Event::synchronize() const {
  CUevent ev = static_cast<CUevent>(live(event_, "synchronize"));
  if (!recorded_)
    throw Error("Event::synchronize: the event was never recorded");
  Driver &d = Driver::get();
  d.check(d.cuEventSynchronize(ev), "cuEventSynchronize");
}

float Event::elapsed_ms(const Event &start) const {
  CUevent end = static_cast<CUevent>(live(event_, "elapsed_ms"));
  CUevent begin = static_cast<CUevent>(live(start.event_, "elapsed_ms"));
  if (!recorded_ || !start.recorded_)
    throw Error(fmt::format("Event::elapsed_ms: the {} event was never recorded",
                            start.recorded_ ? "end" : "start"));
  Driver &d = Driver::get();
  float ms = 0;
  d.check(d.cuEventElapsedTime(&ms, begin, end), "cuEventElapsedTime");
  return ms;
}

Timing time_ms(const std::function<void()> &fn, int iters, int warmup) {
  if (iters < 1 || warmup < 0)
    throw Error(fmt::format("tegula::time_ms: needs iters >= 1 and warmup >= 0 (got {} and {})",
                            iters, warmup));
  const size_t n = size_t(iters);
  std::vector<Event> start(n), stop(n); // created before any work is enqueued
  for (int i = 0; i < warmup; ++i)
    fn();
  for (size_t i = 0; i < n; ++i) {
    start[i].record();
    fn();
    stop[i].record();
  }
  stop.back().synchronize();
  std::vector<double> ms(n);
  for (size_t i = 0; i < n; ++i)
    ms[i] = stop[i].elapsed_ms(start[i]);
  std::sort(ms.begin(), ms.end());
  Timing t;
  t.iters = iters;
  t.min = ms.front();
  t.max = ms.back();
  size_t mid = ms.size() / 2;
  t.median = ms.size() % 2 ? ms[mid] : (ms[mid - 1] + ms[mid]) / 2;
  return t;
}

} // namespace tegula
