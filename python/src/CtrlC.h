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
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/interrupt.h"

#include <csignal>
#include <mutex>

namespace tegula::python {

class CtrlCStopsLaunches {
public:
  CtrlCStopsLaunches() {
    std::lock_guard lock(state().mutex);
    if (state().depth++ > 0)
      return;
    clear_interrupt();
    struct sigaction ours {};
    ours.sa_handler = &onSigint;
    sigemptyset(&ours.sa_mask);
    if (sigaction(SIGINT, &ours, &state().previous) != 0)
      state().previous.sa_handler = SIG_DFL;
    else if (state().previous.sa_handler == SIG_IGN) // ignored: keep it so
      sigaction(SIGINT, &state().previous, nullptr);
  }
  ~CtrlCStopsLaunches() {
    std::lock_guard lock(state().mutex);
    if (--state().depth > 0)
      return;
    if (state().previous.sa_handler != SIG_IGN)
      sigaction(SIGINT, &state().previous, nullptr);
    clear_interrupt(); // a request outlives no launch: a later one must run
  }
  CtrlCStopsLaunches(const CtrlCStopsLaunches &) = delete;
  CtrlCStopsLaunches &operator=(const CtrlCStopsLaunches &) = delete;

private:
  struct State {
    std::mutex mutex;
    int depth = 0;
    struct sigaction previous {};
  };
  static State &state() {
    static State s;
    return s;
  }
  static void onSigint(int sig) {
    request_interrupt();
    const struct sigaction &p = state().previous;
    if (p.sa_flags & SA_SIGINFO) {
      if (p.sa_sigaction)
        p.sa_sigaction(sig, nullptr, nullptr);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler) {
      p.sa_handler(sig);
    }
  }
};

} // namespace tegula::python
