//===- SharedMemoryUsage.h - which ops need shared memory, and how much -*- C++ -*-===//
//
// The one place that says how many bytes of shared memory an op's lowering
// uses as scratch. `allocate-shared-memory` sizes its buffers from it and
// `lower-tilegpu-to-llvm` lays its data out with the same element sizes, so
// the two cannot drift apart.
//
// Today every user needs its buffer only while it runs (write, barrier,
// read, barrier): cross-warp reductions, convert_layout / trans / reshape
// that move elements between threads, the FMA dot's operands, and the old
// value of a scalar atomic shared from thread 0.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/LinearLayout.h"
#include "compiler/layout/SharedSwizzle.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace tegula::analysis {

/// Per op: the byte offset of its buffer in the module's shared memory.
inline constexpr llvm::StringLiteral kSharedOffsetAttr = "tilegpu.shared_offset";
/// Per op in a ping-pong kernel's consumer region: the bytes between its
/// buffer's copies, one per program of the CTA (program_slot).
inline constexpr llvm::StringLiteral kSharedSlotStrideAttr = "tilegpu.shared_slot_stride";
/// Per module: the bytes of shared memory a program (CTA) needs.
inline constexpr llvm::StringLiteral kSharedBytesAttr = "tilegpu.shared_bytes";
/// Set by the lowering when the scratch is dynamic shared memory (more than
/// kMaxStaticSharedBytes): the bytes every launch must provide.
inline constexpr llvm::StringLiteral kDynamicSharedBytesAttr = "tilegpu.dynamic_shared_bytes";
/// The most shared memory a kernel may declare statically (48 KiB); beyond
/// it, up to the device's opt-in limit, only dynamically.
inline constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
/// Every buffer starts on a 16-byte boundary (the widest shared access).
inline constexpr int64_t kSharedAlignment = 16;
/// wgmma operand tiles start on the 128-byte swizzle's period (1024 bytes),
/// and so does the scratch itself.
inline constexpr int64_t kWgmmaTileAlignment = 1024;

/// TMA writes a block into shared memory at a 128-byte aligned address; its
/// mbarrier (8 bytes) follows the block.
inline constexpr int64_t kTmaAlignment = 128;
inline constexpr int64_t kTmaBarrierBytes = 8;
/// A tile.descriptor_load / tile.descriptor_store that use-tma gave to TMA.
bool isTmaLoad(mlir::Operation *op);
bool isTmaStore(mlir::Operation *op);
/// A TMA store that waits for its copy's read of the staged block only
/// before the next store stages one (marked tilegpu.tma_store_deferred: a
/// warp-specialised persistent kernel's, with a tilegpu.tma_store_wait after
/// its tile loop): the outermost loop around it, through which the block's
/// bytes stay reserved; else null.
mlir::Operation *deferredTmaStoreLoop(mlir::Operation *op);
inline constexpr llvm::StringLiteral kTmaStoreDeferredAttr = "tilegpu.tma_store_deferred";
/// The bytes of its block in shared memory, rounded up to kTmaAlignment
/// (where its mbarrier starts); a swizzled store's staging tile's bytes, a
/// swizzled load's tile's.
int64_t tmaBlockBytes(mlir::Operation *op);
/// A TMA store through a swizzled map (tilegpu.tma_swizzle): the tile its
/// block is staged in (layout::tmaStoreTile), with two resident blocks
/// where layout::tmaStoreStaging allows it; nullopt for other stores, and
/// when the stored value has no layout yet.
std::optional<layout::SharedTile> tmaStoreStagingTile(mlir::Operation *op);
/// A TMA load through a swizzled map (tilegpu.tma_swizzle): the tile its
/// boxes land in (layout::tmaStoreTile's, one box per swizzle-wide block of
/// columns); nullopt for other loads.
std::optional<layout::SharedTile> tmaLoadTile(mlir::Operation *op);

/// Bytes of shared memory `op` needs while it runs; 0 when it needs none
/// (also for ops whose tiles have no layout yet).
int64_t sharedScratchBytes(mlir::Operation *op);
/// The alignment `op`'s buffer needs (kSharedAlignment, or
/// kWgmmaTileAlignment for a tile.dot on wgmma and a ring of shared tiles).
int64_t sharedScratchAlignment(mlir::Operation *op);
/// A tile.dot whose accumulator has the wgmma layout (mma version 3).
bool isWgmmaDot(mlir::Operation *op);

/// Bytes one cross-warp partial of a reduction takes (at least 32 bits, so
/// sub-word partials never share a word).
int64_t reducePartialBytes(mlir::Type elem);
/// Bytes one element takes on its way between threads (pointers as i64, i1
/// as a byte).
int64_t exchangeSlotBytes(mlir::Type elem);

/// For each register of `dst`, the register of `src` in the same thread
/// holding the element that `project` maps it to; nullopt when some element
/// would have to cross threads. Decides whether a broadcast, expand_dims or
/// convert_layout is a register move or goes through shared memory.
std::optional<std::vector<int32_t>>
inThreadRegisterMap(const layout::LinearLayout &src, const layout::LinearLayout &dst,
                    const std::function<std::vector<int32_t>(std::vector<int32_t>)> &project);

/// The offset `allocate-shared-memory` gave `op`, if any.
std::optional<int64_t> sharedOffset(mlir::Operation *op);

} // namespace tegula::analysis
