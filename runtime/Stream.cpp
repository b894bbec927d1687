//===- Stream.cpp - streams of the caller's own, ordered by events ---------===//
#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"

namespace tegula {

using runtime::Driver;

namespace {
/// Destroys what exists of a stream and its events (best effort).
void release(void *stream, void *waitEvent, void *joinEvent) {
  try {
    runtime::currentDevice();
    Driver &d = Driver::get();
    if (stream)
      d.cuStreamSynchronize(static_cast<CUstream>(stream)); // its work finishes first
    for (void *event : {waitEvent, joinEvent})
      if (event)
        d.cuEventDestroy(static_cast<CUevent>(event));
    if (stream)
      d.cuStreamDestroy(static_cast<CUstream>(stream));
  } catch (...) {
  }
}
} // namespace

Stream::Stream() {
  runtime::currentDevice(); // "no CUDA driver ..." here
  Driver &d = Driver::get();
  try {
    CUstream stream;
    d.check(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    stream_ = stream;
    // Events that only order (no timing: cheaper to record).
    for (void **event : {&waitEvent_, &joinEvent_}) {
      CUevent ev;
      d.check(d.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      *event = ev;
    }
  } catch (...) { // no destructor runs for a throwing constructor
    release(stream_, waitEvent_, joinEvent_);
    throw;
  }
}

Stream::~Stream() { release(stream_, waitEvent_, joinEvent_); }

void Stream::wait_for(uint64_t other) {
  runtime::currentDevice();
  Driver &d = Driver::get();
  // Re-recording is safe: a wait orders after the record made before it.
  d.check(d.cuEventRecord(static_cast<CUevent>(waitEvent_), reinterpret_cast<CUstream>(other)), "cuEventRecord");
  d.check(d.cuStreamWaitEvent(static_cast<CUstream>(stream_), static_cast<CUevent>(waitEvent_), 0),
          "cuStreamWaitEvent");
}

void Stream::join_into(uint64_t other) {
  runtime::currentDevice();
  Driver &d = Driver::get();
  d.check(d.cuEventRecord(static_cast<CUevent>(joinEvent_), static_cast<CUstream>(stream_)), "cuEventRecord");
  d.check(d.cuStreamWaitEvent(reinterpret_cast<CUstream>(other), static_cast<CUevent>(joinEvent_), 0),
          "cuStreamWaitEvent");
}

void Stream::synchronize() {
  runtime::currentDevice();
  Driver &d = Driver::get();
  d.check(d.cuStreamSynchronize(static_cast<CUstream>(stream_)), "cuStreamSynchronize");
}

} // namespace tegula
