//===- print.h - where the CPU backends' tl::print lines go -----*- C++ -*-===//
//
// The interpreter and the simulator print tl::print's lines on the calling
// thread; by default to the process's stdout. A handler takes them instead:
// Python's bindings pass them to sys.stdout, so a notebook, pytest's capsys
// or contextlib.redirect_stdout sees them. The GPU's lines come from CUDA's
// vprintf, which the driver writes to the process's stdout after a
// synchronisation - no handler reaches them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string_view>

namespace tegula {

/// Takes one print's text (whole lines, each ending in '\n').
using PrintHandler = std::function<void(std::string_view text)>;

/// Makes `handler` take the CPU backends' prints (an empty one: stdout);
/// returns the handler it replaces. Thread-safe; a print in flight finishes
/// with the old one.
PrintHandler set_print_handler(PrintHandler handler);

namespace detail {
/// Hands `text` to the handler, or writes it to stdout (and flushes).
void emit_print(std::string_view text);
} // namespace detail

} // namespace tegula
