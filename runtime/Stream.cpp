//===- Stream.cpp - streams of the caller's own, ordered by events ---------===//
#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"

namespace tegula {

using runtime::Driver;

Stream::Stream() {
  runtime::currentDevice(); // "no CUDA driver ..." here
  Driver &d = Driver::get();
  CUstream stream;
  d.check(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  stream_ = stream;
  // Events that only order (no timing: cheaper to record).
  for (void **event : {&waitEvent_, &joinEvent_}) {
    CUevent ev;
    d.check(d.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    *event = ev;
  }
}

Stream::~Stream() {
  try { // best effort, as for buffers: the stream's work finishes first
    runtime::currentDevice();
    Driver &d = Driver::get();
    d.cuStreamSynchronize(static_cast<CUstream>(stream_));
    for (void *event : {waitEvent_, joinEvent_})
      d.cuEventDestroy(static_cast<CUevent>(event));
    d.cuStreamDestroy(static_cast<CUstream>(stream_));
  } catch (...) {
  }
}

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
