//===- CtrlC.h - Ctrl-C stops a launch the interpreter runs ----*- C++ -*-===//
//
// A launch runs with the GIL released, so Python's own SIGINT handler only
// trips a flag Python reads after the launch - minutes later in the
// interpreter. While a CtrlCStopsLaunches lives, SIGINT also asks Tegula's
// CPU-backend launches to stop (tegula::request_interrupt), then runs the
// handler that was there (Python's); the launch throws tegula::Interrupted,
// which the bindings raise as KeyboardInterrupt. Nested and concurrent
// launches share one installation; the last to finish restores the handler.
//
// Every extension module that launches (_tegula, _gpt) would have its own
// copy of this header's state (their symbols are hidden), so its own
// installation - and two, restored in either order by concurrent launches,
// could leave a handler that chains to itself. They share one instead:
// _tegula owns the state (CtrlCState) and publishes it as the capsule
// tegula._tegula._ctrl_c, and each module registers the interrupt flag of
// the runtime it links (joinCtrlC: libtegula's, one for all of them in the
// shared build; each module's own were the runtime linked statically).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/interrupt.h"

#include <pybind11/pybind11.h>

#include <atomic>
#include <csignal>
#include <mutex>

namespace tegula::python {

struct CtrlCState {
  std::mutex mutex;
  int depth = 0;
  struct sigaction previous {};
  // Each module's request_interrupt / clear_interrupt (its runtime's flag);
  // slots are filled once and never emptied, so a signal handler may read
  // them.
  static constexpr int kModules = 8;
  using Flag = void (*)() noexcept;
  std::atomic<Flag> request[kModules] = {}, clear[kModules] = {};

  void add(Flag requestFn, Flag clearFn) {
    std::lock_guard lock(mutex);
    for (int i = 0; i < kModules; ++i) {
      if (request[i].load() == requestFn)
        return;
      if (!request[i].load()) {
        clear[i].store(clearFn);
        request[i].store(requestFn);
        return;
      }
    }
  }
  void clearAll() {
    for (auto &c : clear)
      if (Flag f = c.load())
        f();
  }
};

/// This module's view of the shared state (set by joinCtrlC).
inline CtrlCState *&ctrlCState() {
  static CtrlCState *state = nullptr;
  return state;
}

/// _tegula (`owner`): makes the state and publishes it on `m`; any other
/// module: finds it in tegula._tegula. Either registers this module's flag.
inline void joinCtrlC(pybind11::module_ &m, bool owner) {
  if (owner) {
    static CtrlCState state;
    ctrlCState() = &state;
    m.attr("_ctrl_c") = pybind11::capsule(&state, "tegula._ctrl_c");
  } else {
    auto capsule = pybind11::module_::import("tegula._tegula").attr("_ctrl_c").cast<pybind11::capsule>();
    ctrlCState() = capsule.get_pointer<CtrlCState>();
  }
  ctrlCState()->add(&tegula::request_interrupt, &tegula::clear_interrupt);
}

class CtrlCStopsLaunches {
public:
  CtrlCStopsLaunches() {
    CtrlCState &s = *ctrlCState();
    std::lock_guard lock(s.mutex);
    if (s.depth++ > 0)
      return;
    s.clearAll();
    struct sigaction ours {};
    ours.sa_handler = &onSigint;
    sigemptyset(&ours.sa_mask);
    if (sigaction(SIGINT, &ours, &s.previous) != 0)
      s.previous.sa_handler = SIG_DFL;
    else if (s.previous.sa_handler == SIG_IGN) // ignored: keep it so
      sigaction(SIGINT, &s.previous, nullptr);
  }
  ~CtrlCStopsLaunches() {
    CtrlCState &s = *ctrlCState();
    std::lock_guard lock(s.mutex);
    if (--s.depth > 0)
      return;
    if (s.previous.sa_handler != SIG_IGN)
      sigaction(SIGINT, &s.previous, nullptr);
    s.clearAll(); // a request outlives no launch: a later one must run
  }
  CtrlCStopsLaunches(const CtrlCStopsLaunches &) = delete;
  CtrlCStopsLaunches &operator=(const CtrlCStopsLaunches &) = delete;

private:
  static void onSigint(int sig) {
    CtrlCState &s = *ctrlCState();
    for (auto &r : s.request) // every module's launches
      if (CtrlCState::Flag f = r.load())
        f();
    const struct sigaction &p = s.previous;
    if (p.sa_flags & SA_SIGINFO) {
      if (p.sa_sigaction)
        p.sa_sigaction(sig, nullptr, nullptr);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler) {
      p.sa_handler(sig);
    }
  }
};

} // namespace tegula::python
