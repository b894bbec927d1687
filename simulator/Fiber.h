//===- Fiber.h - cooperative stack switching for simulated threads -*- C++ -*-===//
//
// Each simulated GPU thread is a fiber. On x86-64 a switch saves the
// callee-saved registers and swaps stack pointers (a few ns); elsewhere it
// falls back to ucontext, whose swapcontext makes a system call per switch
// (~240 ns here), which dominated the simulator's run time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace tegula::sim {

struct Fiber {
#if defined(__x86_64__)
  void *sp = nullptr;
#else
  ucontext_t context;
#endif
};

/// Make `fiber` start `entry` on the stack [stack, stack + bytes) at its
/// first switch. `entry` must never return (it switches away for good).
void fiberInit(Fiber &fiber, char *stack, size_t bytes, void (*entry)());

/// Save the running context in `from`, continue `to`.
void fiberSwitch(Fiber &from, Fiber &to);

} // namespace tegula::sim
