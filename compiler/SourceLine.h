//===- SourceLine.h - where in the user's source an op came from -*- C++ -*-===//
//
// The DSL gives every op the user's file and line (a FileLineColLoc, maybe
// inside a name, call-site or fused location). Errors and reports quote it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Visitors.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace tegula {

/// "file:line" of the first file location inside `loc`, or "".
inline std::string sourceLine(mlir::Location loc) {
  std::string out;
  loc->walk([&](mlir::Location l) {
    if (auto f = mlir::dyn_cast<mlir::FileLineColLoc>(l)) {
      out = fmt::format("{}:{}", f.getFilename().str(), f.getLine());
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return out;
}

/// "file:line: message", or the message alone when `loc` has no file: the
/// text of an error report's site, alike on every backend.
inline std::string siteText(mlir::Location loc, std::string_view message) {
  const std::string where = sourceLine(loc);
  return where.empty() ? std::string(message) : fmt::format("{}: {}", where, message);
}

} // namespace tegula
