//===- interrupt.h - stopping CPU-backend launches in flight ---*- C++ -*-===//
//
// The interpreter and the simulator run a launch on the calling thread,
// possibly for minutes; request_interrupt() asks every one in flight to stop
// at its next program, loop iteration or scheduling round, where it throws
// tegula::Interrupted. Python's bindings call it from Ctrl-C (the launch then
// raises KeyboardInterrupt). GPU launches are not affected.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/error.h"

namespace tegula {

/// A CPU-backend launch stopped by request_interrupt().
class Interrupted : public Error {
public:
  using Error::Error;
};

/// Asks the launches in flight to stop. Async-signal-safe: a signal
/// handler may call it.
void request_interrupt() noexcept;
/// Forgets a request (before new launches that should run).
void clear_interrupt() noexcept;
/// Whether a stop was asked for (the backends poll it).
bool interrupt_requested() noexcept;

} // namespace tegula
