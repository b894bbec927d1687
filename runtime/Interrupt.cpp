//===- Interrupt.cpp - the flag CPU-backend launches poll ----------------===//
#include "tegula/interrupt.h"

#include <atomic>

namespace tegula {
namespace {
// Lock-free, so a signal handler may set it.
std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);
} // namespace

void request_interrupt() noexcept { g_requested.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { g_requested.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return g_requested.load(std::memory_order_relaxed); }

} // namespace tegula
