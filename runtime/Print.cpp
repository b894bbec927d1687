//===- Print.cpp - the CPU backends' print handler -------------------------===//
#include "tegula/print.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

namespace tegula {
namespace {
std::mutex gMutex;
// Shared: a print copies the pointer under the lock and calls the handler
// outside it (a handler may print, or take a lock of its own - the GIL).
std::shared_ptr<const PrintHandler> gHandler;
} // namespace

PrintHandler set_print_handler(PrintHandler handler) {
  std::shared_ptr<const PrintHandler> next =
      handler ? std::make_shared<const PrintHandler>(std::move(handler)) : nullptr;
  std::lock_guard<std::mutex> lock(gMutex);
  std::shared_ptr<const PrintHandler> previous = std::exchange(gHandler, std::move(next));
  return previous ? *previous : PrintHandler();
}

void detail::emit_print(std::string_view text) {
  std::shared_ptr<const PrintHandler> handler;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    handler = gHandler;
  }
  if (handler) {
    (*handler)(text);
    return;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

} // namespace tegula
