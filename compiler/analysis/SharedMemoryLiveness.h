//===- SharedMemoryLiveness.h - live ranges and offsets of shared buffers -*- C++ -*-===//
//
// Shared-memory buffers live over intervals of a linear program order; two
// buffers may share bytes only when their intervals are disjoint. Loops make
// a buffer that lives across iterations (made before the loop and used in
// it, or carried from one iteration to the next) live for the whole loop.
// `allocate-shared-memory` is the client; the pieces are here so they can
// be tested without ops that make such buffers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <vector>

namespace tegula::analysis {

/// Positions [first, last] in a ProgramOrder, both included.
struct LiveInterval {
  int64_t first = 0, last = 0;
  bool overlaps(const LiveInterval &o) const { return first <= o.last && o.first <= last; }
  bool operator==(const LiveInterval &) const = default;
};

/// Every op nested in `root` numbered in pre-order: an op comes before the
/// ops of its regions, which come before the op's next sibling.
class ProgramOrder {
public:
  explicit ProgramOrder(mlir::Operation *root);

  /// From `op` to the last op nested in it.
  LiveInterval extent(mlir::Operation *op) const;

  /// A buffer made by `def` and used by `users` (ops in the same root):
  /// from the first of them to the last, widened to the whole of every loop
  /// that holds some of them but not all (the buffer must survive every
  /// iteration), and to the innermost loop around all of them when a user
  /// comes before the def (the buffer is carried to the next iteration).
  /// With no users this is the def's own extent: a buffer used only while
  /// its op runs.
  LiveInterval liveRange(mlir::Operation *def, llvm::ArrayRef<mlir::Operation *> users = {}) const;

private:
  llvm::DenseMap<mlir::Operation *, LiveInterval> extents_;
};

/// A buffer to place: its live range and size in; its offset out.
struct SharedBuffer {
  LiveInterval live;
  int64_t bytes = 0;
  int64_t offset = -1;
  int64_t alignment = 1; // at least packSharedBuffers' alignment
};

/// Gives every buffer an offset, a multiple of `alignment`, such that
/// buffers with overlapping live ranges use disjoint bytes: largest first,
/// each at the lowest offset that fits (first fit). Returns the bytes the
/// whole set needs (0 for none).
int64_t packSharedBuffers(std::vector<SharedBuffer> &buffers, int64_t alignment);

} // namespace tegula::analysis
