//===- LoweringCommon.h - shared pieces of the tilegpu -> LLVM lowering ---===//
//
// Internal to compiler/transforms: the type converter (a tile with layout L
// becomes L's registers, 1:N), per-thread index math derived from linear
// layouts, and the pattern sets of each lowering file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/LinearLayout.h"
#include "compiler/layout/SharedSwizzle.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace tegula::lowering {

constexpr int kWarpSize = 32;
/// The module's shared memory (address space 3), `tilegpu.shared_bytes`
/// long; each user's buffer starts at its `tilegpu.shared_offset`.
constexpr const char *kScratchSymbol = "tegula_scratch";

/// The linear layout of an encoded tile type.
layout::LinearLayout layoutOf(mlir::Type tensorType);
mlir::Value i32Const(mlir::OpBuilder &b, mlir::Location loc, int64_t v);
/// lane and warp of the current thread within its program (the layouts'
/// lane and warp): tid.x % 32 and tid.x / 32, or in a ping-pong kernel's
/// consumers those of programThreadIndex.
std::pair<mlir::Value, mlir::Value> laneAndWarp(mlir::OpBuilder &b, mlir::Location loc);
/// The current thread's index among its program's threads: tid.x, or in a
/// ping-pong kernel's consumer region tid.x % (32 * num_warps) - each
/// consumer warpgroup runs its own program.
mlir::Value programThreadIndex(mlir::OpBuilder &b, mlir::Location loc);
/// The program's index along x: ctaid.x, or in a ping-pong kernel
/// 2 * ctaid.x + program_slot (what prints and assertions report).
mlir::Value programIdX(mlir::OpBuilder &b, mlir::Location loc);
/// i1: the first thread of the program (thread 0 of the CTA, or of a
/// ping-pong kernel's consumer warpgroup).
mlir::Value isProgramLeader(mlir::OpBuilder &b, mlir::Location loc);
/// Programs a CTA of `module` runs: its tilegpu.programs_per_cta (2 in a
/// ping-pong kernel), else 1.
int64_t programsPerCta(mlir::Operation *moduleOrInside);
/// CTAs per thread-block cluster of `module`: its tilegpu.cluster_size
/// (multicast TMA rings), else 1.
int64_t clusterSize(mlir::Operation *moduleOrInside);
/// tilegpu.program_slot at the insertion point: which of the CTA's programs
/// the thread runs (consumers) or fills the rings of (producer warps).
mlir::Value programSlot(mlir::OpBuilder &b, mlir::Location loc);
/// For every register of this thread, its coordinates (one i32 per dim).
/// `addDisjoint`: a register's constant that shares no bit with what the
/// lane and warp may set is added rather than XORed - the same value, and an
/// offset the backends fold into an address ([r + imm]) where an XOR takes a
/// register of its own (a cross-warp reduction's many slots, hoisted out of
/// a persistent kernel's tile loop, spilled beside its accumulator).
llvm::SmallVector<llvm::SmallVector<mlir::Value>>
coordinates(mlir::OpBuilder &b, mlir::Location loc, const layout::LinearLayout &ll, bool addDisjoint = false);
/// Which copies of a layout's elements act: registers with a set bit in
/// `duplicateRegisters` repeat another register's element, and `threadOwns`
/// (i1) is false in threads whose lane/warp bits only repeat other threads'.
struct Owners {
  int32_t duplicateRegisters = 0;
  mlir::Value threadOwns;
};
Owners ownersOf(mlir::OpBuilder &b, mlir::Location loc, const layout::LinearLayout &ll);

/// Memory element type: i1 is stored as a byte, fp8 as its bits (i8).
mlir::Type memoryType(mlir::Type pointee);

/// The integer type and PTX register constraint ("h", "r", "l") that carry
/// `elem` through inline assembly, and conversions to and from it.
std::pair<mlir::Type, std::string> asmRegister(mlir::Type elem);
mlir::Value toAsmInt(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Type asmType);
mlir::Value fromAsmInt(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Type elem);
/// PTX type suffix for loads of `elem`: u8, b16, b32, b64.
std::string ptxType(mlir::Type elem);
/// The bits (i32) of f32 `f` rounded to tf32 - nearest, ties to even, like
/// TMA's TFLOAT32 tensor maps and the interpreter (round_to_tf32 in
/// tegula/dtype.h); Inf and NaN stay Inf and NaN. `cvt` (sm_90 code, for
/// mma and wgmma operands only): one cvt.rn.tf32.f32 where integer
/// arithmetic takes seven instructions - per element of every tf32 operand,
/// they bounded the tf32 GEMMs. The PTX ISA does not promise what cvt leaves
/// in the low 13 bits, which the tensor cores do not read; tf32x3's
/// x - tf32(x) needs them zero and rounds without cvt.
mlir::Value tf32Bits(mlir::OpBuilder &b, mlir::Location loc, mlir::Value f, bool cvt = false);
/// Elements narrower than 32 bits packed into 32-bit words, the first in
/// the low bits (values.size() * width a multiple of 32), and back.
llvm::SmallVector<mlir::Value> packWords(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange values);
llvm::SmallVector<mlir::Value> unpackWords(mlir::OpBuilder &b, mlir::Location loc,
                                           mlir::ValueRange words, mlir::Type elem);
/// A global load's or store's cache hints in PTX: `ld`/`st` + `opcode`
/// (".volatile.global", ".global.cg", ".global.L1::evict_last.L2::cache_hint")
/// and, for an eviction policy, the createpolicy that makes the L2 policy
/// register %tegula_policy, the access's last operand.
struct CacheQualifiers {
  std::string opcode = ".global";
  std::string policy; // "createpolicy...;" or empty
};
CacheQualifiers cacheQualifiers(tile::CacheModifier cache, tile::EvictionPolicy evict, bool isVolatile);
/// `access` (one PTX statement without its `;`) with the hints' policy
/// register made in a scope of its own and passed last.
std::string withCachePolicy(const CacheQualifiers &q, const std::string &access);

/// `@pred st.<space>[.vN].bW [ptr], {values}` (space: "global" or
/// "shared"); several values make one vector store (more than four narrow
/// ones go as 32-bit words: PTX vectors have at most four elements); a
/// global store takes `hints`' qualifiers.
void predicatedStore(mlir::OpBuilder &b, mlir::Location loc, mlir::Value ptr,
                     mlir::ValueRange values, mlir::Value pred, llvm::StringRef space,
                     const CacheQualifiers &hints = {});

/// The owners of `values` (the registers of `type`) store them into the
/// shared tile `tile` that starts at `base`, in vectors of up to 16 bytes
/// where the layouts allow (8-bit and 16-bit elements packed into words).
/// `stmatrix` (sm_90 code only): 16-bit mma fragments go out with
/// stmatrix.x4 where layout::stmatrixRows allows - four registers' words
/// of a lane in one instruction instead of four st.shared.b32. `onlyBlock`
/// (a tile with resident blocks, layout::tmaStoreStaging): only the
/// registers whose elements land in that block.
void storeSharedTile(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange values, mlir::RankedTensorType type,
                     const layout::SharedTile &tile, mlir::Value base, bool stmatrix = false,
                     std::optional<int32_t> onlyBlock = std::nullopt);

/// The registers of `type` read from the shared tile `tile` at `base` (the
/// inverse of storeSharedTile): 16-bit mma fragments with ldmatrix.x4 where
/// layout::stmatrixRows allows (sm_75 code and up), else in vectors of up to
/// 16 bytes where the layouts allow. `elem` is the registers' type.
llvm::SmallVector<mlir::Value> loadSharedTile(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                                              mlir::Type elem, const layout::SharedTile &tile, mlir::Value base);

/// Who runs code in `block`: every thread, or - in a warp-specialised
/// kernel, split by an scf.if marked tilegpu.warp_specialized - its then
/// region (the producer warps) or its else region (the consumers: the warps
/// of the tile program).
enum class WarpRole { All, Producer, Consumer };
WarpRole warpRoleAt(mlir::Block *block);

/// Whether `op` is a dot the tensor cores run as wgmma from shared memory
/// (tilegpu.dot_shared / dot_shared_b with a version-3 mma result).
bool isWgmmaDot(mlir::Operation *op);

/// The barrier of the threads running the tile program: bar.sync 0 (every
/// thread), or in a warp-specialised kernel's consumer branch bar.sync 1
/// over the consumer warps alone (the producers never reach it); in a
/// ping-pong kernel bar.sync 1 + slot over the program's warpgroup.
void ctaBarrier(mlir::OpBuilder &b, mlir::Location loc);

/// The barrier before a scratch exchange writes its buffer (earlier users
/// of the bytes are done), unless elide-scratch-barriers found none needed.
void leadingBarrier(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op);

/// Inline PTX with side effects; returns its result (null for none).
mlir::Value inlinePtx(mlir::OpBuilder &b, mlir::Location loc, mlir::Type result,
                      mlir::ValueRange args, const std::string &body,
                      const std::string &constraints);

/// Tiles with a tilegpu encoding become one value per register; pointers
/// become `!llvm.ptr<1>`.
struct TileTypeConverter : mlir::LLVMTypeConverter {
  explicit TileTypeConverter(mlir::MLIRContext *ctx, bool tf32Cvt = false);
  /// The target rounds f32 to tf32 in one instruction, cvt.rn.tf32.f32
  /// (sm_90 on; lower-tilegpu-to-llvm's chip): see tf32Bits.
  bool tf32Cvt = false;
  /// The target has atom.add.noftz.bf16 (sm_90 on); before, a bf16 atomic
  /// add is a compare-and-swap loop.
  bool bf16AtomicAdd = false;
};

/// The start (`!llvm.ptr<3>`) of the shared-memory buffer that
/// allocate-shared-memory gave `op`. Buffers of ops whose lives do not
/// overlap share bytes, so every user begins with a barrier (the earlier
/// users' reads are done) before it writes; none is needed at its end. Patterns check that `op` has one
/// (analysis::sharedOffset) before they build anything. In a ping-pong
/// kernel a consumer's buffer has a copy per program,
/// `tilegpu.shared_slot_stride` bytes apart.
mlir::Value sharedBuffer(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op);
/// The shared address of stage `stage` (i32) of the ring `ring` (lowered: a
/// shared pointer) whose type is `type`.
mlir::Value ringStage(mlir::OpBuilder &b, mlir::Location loc, mlir::Value ring, mlir::Value stage,
                      tilegpu::SharedTilesType type);
/// The failure a pattern reports for a shared-memory user without an offset.
inline constexpr const char *kNoSharedOffset =
    "no tilegpu.shared_offset: run allocate-shared-memory first";

void populateDotOperandPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateAsyncCopyPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateDotPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateWgmmaPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateAtomicPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateExchangePatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateHistogramPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populatePrintPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateFp8Patterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateTmaPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateWarpRolePatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateReducePatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateScanPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateElementwisePatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);
void populateInlineAsmPatterns(const TileTypeConverter &types, mlir::RewritePatternSet &patterns);

} // namespace tegula::lowering
