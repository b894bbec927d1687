//===- ScratchBarriers.h - which scratch users need their leading barrier -*- C++ -*-===//
//
// A cross-warp reduction, a scan's warp totals and a convert_layout through
// shared memory lower the same way: a barrier (earlier users of the bytes
// are done), writes to the op's scratch, a barrier, reads of it. The
// second barrier is what the op needs; the first guards bytes that an
// earlier op may still be reading. It is redundant where every access since
// the last barrier on every path to the op - in practice the reads after
// the previous such op's second barrier - touches other bytes: two
// reductions a row in a loop (LayerNorm's backward) keep two barriers a
// row instead of four once their buffers are apart.
//
// `allocate-shared-memory` keeps a buffer live until the next such op where
// that is cheap (so the two get different bytes); `elide-scratch-barriers`
// asks leadingBarrierIsRedundant once offsets are known.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace tegula::analysis {

/// Set by `elide-scratch-barriers`: the lowering leaves out the op's
/// leading barrier.
inline constexpr llvm::StringLiteral kSkipLeadingBarrierAttr = "tilegpu.skip_leading_barrier";

/// Buffers up to this size (a row's statistics, not a tile) live until the
/// next scratch exchange even where that adds bytes, in kernels within
/// static shared memory.
inline constexpr int64_t kSmallScratchBytes = 1024;

/// Whether `op` lowers to barrier, writes of its scratch, barrier, reads of
/// it - and nothing else touching shared memory: a reduction or a scan
/// across warps, or a convert_layout between threads.
bool isScratchExchange(mlir::Operation *op);

/// The ops holding the next scratch exchange on each way forward from `op`
/// (the exchange itself, or a loop or branch around one - and then the next
/// one after it too, which a skipped branch or loop reaches): later in its
/// block, past an enclosing loop's back edge (not `op` itself) and past
/// its exit. Empty when none comes before the kernel's end.
llvm::SmallVector<mlir::Operation *> nextScratchExchanges(mlir::Operation *op);

/// Whether the scratch exchange `op` (with its offset assigned) can do
/// without its leading barrier: on every path to it, every shared byte
/// touched since the last barrier lies outside its buffer. Conservative: an
/// op it does not know (rings, TMA, dots, atomics) or reaching a
/// warp-specialised split makes the answer no (inside a consumer branch,
/// after another exchange, the consumers' own barriers count).
bool leadingBarrierIsRedundant(mlir::Operation *op);

} // namespace tegula::analysis
