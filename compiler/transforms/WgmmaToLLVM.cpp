//===- WgmmaToLLVM.cpp - tile.dot on Hopper's warpgroup MMA ---------------===//
//
// A dot whose accumulator has the wgmma layout (`#tilegpu.mma<{..., version
// = 3}>`, accelerate-dot with chip=sm_90a): its owners store A and B into
// shared memory in the swizzled tiles wgmma's matrix descriptors describe
// (layout/WgmmaOperands.h), fence the async proxy and meet at a barrier;
// then each warpgroup issues one wgmma.mma_async per m64 x (N <= 256) x k16
// piece of its rows, commits them as one group and waits for it. The
// accumulator registers pass through the wait as in/out operands, so no
// use of them can move above it. Inline PTX throughout: LLVM has no wgmma
// intrinsics; the simulator runs the same text (simulator/Wgmma.h).
//
// The operands' layouts are those of the values the kernel computed; a dot
// whose operand tiles wgmma cannot read falls to the mma.sync lowering,
// which computes the same accumulator layout (DotToLLVM.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/OperandStaging.h"
#include "compiler/layout/WgmmaOperands.h"
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

#include <fmt/format.h>

using namespace mlir;
using tegula::layout::LinearLayout;
using tegula::layout::WgmmaOperandTile;

namespace tegula::lowering {
namespace {

/// The placement of operand `idx` (0: A, 1: B) staged from `t`: along the
/// dimension its values are contiguous in, else K-major (always for tf32).
std::optional<WgmmaOperandTile> planOperand(unsigned idx, RankedTensorType t) {
  const std::vector<int32_t> shape = {int32_t(t.getDimSize(0)), int32_t(t.getDimSize(1))};
  const int bits = int(t.getElementType().getIntOrFloatBitWidth());
  const int kDim = idx == 0 ? 1 : 0;
  int contiguous = layout::contiguousDimOf(layoutOf(t));
  if (contiguous < 0 || bits != 16) // tf32 and fp8 are K-major only
    contiguous = kDim;
  if (auto plan = layout::planWgmmaOperandTile(int(idx), shape, contiguous, bits))
    return plan;
  return layout::planWgmmaOperandTile(int(idx), shape, 1 - contiguous, bits);
}

/// The owners of `values` (`t`'s registers) store them into `tile` at `base`;
/// f32 values rounded to tf32 first, as the interpreter rounds them (the
/// tensor cores would only drop the low bits).
void storeTile(OpBuilder &b, Location loc, ValueRange original, RankedTensorType t,
               const layout::SharedTile &tile, Value base) {
  SmallVector<Value> values(original.begin(), original.end());
  if (t.getElementType().isF32())
    for (Value &v : values)
      v = LLVM::BitcastOp::create(b, loc, b.getF32Type(), tf32Bits(b, loc, v, /*cvt=*/true));
  storeSharedTile(b, loc, values, t, tile, base, /*stmatrix=*/true); // wgmma: sm_90 code
}

/// The matrix descriptors of one operand tile, instruction by instruction.
/// A descriptor's address field holds bits 4..17 of a shared address, and
/// shared addresses stay below 2^18 (228 KB), so the descriptor of
/// `tile + offset` is the tile's own plus offset / 16: each instruction adds
/// a constant to the low word and pairs it with the constant high word,
/// instead of shifting, masking and or-ing a 64-bit address of its own.
class Descriptors {
public:
  /// The tile starts at `tile` (shared pointer) plus `byteOffset` (i32).
  Descriptors(OpBuilder &b, Location loc, Value tile, Value byteOffset, const WgmmaOperandTile &plan)
      : high(uint32_t(plan.descriptorBase() >> 32)) {
    Value address = LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), tile);
    if (byteOffset)
      address = LLVM::AddOp::create(b, loc, address, byteOffset);
    Value field = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, address, i32Const(b, loc, 4)),
                                      i32Const(b, loc, 0x3fff));
    low = LLVM::OrOp::create(b, loc, field, i32Const(b, loc, int32_t(uint32_t(plan.descriptorBase()))));
  }
  /// The descriptor of the tile's instruction at `offset` bytes (a multiple
  /// of 16, as every wgmma operand's start is).
  Value at(OpBuilder &b, Location loc, int32_t offset) const {
    assert(offset % 16 == 0 && "wgmma operands start 16-byte aligned");
    Value word = offset ? LLVM::AddOp::create(b, loc, low, i32Const(b, loc, offset / 16)).getResult() : low;
    Type i64 = b.getI64Type();
    return LLVM::OrOp::create(b, loc, LLVM::ZExtOp::create(b, loc, i64, word),
                              LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(int64_t(uint64_t(high) << 32))));
  }

private:
  Value low;
  uint32_t high;
};

/// The inline-assembly constraint of accumulator registers: f32, or s32
/// (integer wgmma).
const char *accumulatorConstraint(ValueRange acc) {
  return !acc.empty() && acc.front().getType().isInteger(32) ? "=r" : "=f";
}

/// wgmma.mma_async m64n{count*2}k16 on accumulator registers `acc` (f32, or
/// s32 for s8 operands), A from the descriptor `descA` or, when `aRegs`
/// holds its 4 registers (32-bit, two 16-bit values each), from registers.
SmallVector<Value> emitWgmma(OpBuilder &b, Location loc, Type elem, ValueRange acc, Value descA,
                             ValueRange aRegs, Value descB, bool transA, bool transB, bool scaleD) {
  const size_t count = acc.size();
  std::string regs, constraints;
  for (size_t i = 0; i < count; ++i) {
    regs += fmt::format("{}${}", i ? ", " : "", i);
    constraints += fmt::format("{}{}", i ? "," : "", accumulatorConstraint(acc));
  }
  for (size_t i = 0; i < count; ++i)
    constraints += fmt::format(",{}", i); // the accumulators in, tied to D
  // Operand numbers: the outputs (count), then the inputs in order.
  SmallVector<Value> args(acc.begin(), acc.end());
  auto next = [&] { return count + args.size(); };
  std::string a;
  if (aRegs.empty()) {
    a = fmt::format("${}", next());
    args.push_back(descA);
    constraints += ",l";
  } else {
    a = fmt::format("{{${}, ${}, ${}, ${}}}", next(), next() + 1, next() + 2, next() + 3);
    args.append(aRegs.begin(), aRegs.end());
    constraints += ",r,r,r,r";
  }
  const size_t bIndex = next();
  args.push_back(descB);
  args.push_back(i32Const(b, loc, scaleD ? 1 : 0));
  constraints += ",l,r";
  const bool tf32 = elem.isF32(), eightBit = elem.getIntOrFloatBitWidth() == 8, s8 = elem.isInteger(8);
  const std::string type = tf32                              ? "tf32"
                           : s8                              ? "s8"
                           : isa<Float8E4M3FNType>(elem)     ? "e4m3"
                           : isa<Float8E5M2Type>(elem)       ? "e5m2"
                           : elem.isBF16()                   ? "bf16"
                                                             : "f16";
  // scale-d is a predicate: false ignores the accumulator's input (D = A B).
  // A from registers is K-major and has no imm-trans-a; tf32 and 8-bit
  // types have no transposes at all (both operands K-major); integer wgmma
  // has no imm-scale-a/b either.
  const std::string trans = tf32 || eightBit ? ""
                            : aRegs.empty()  ? fmt::format(", {}, {}", int(transA), int(transB))
                                             : fmt::format(", {}", int(transB));
  const std::string body = fmt::format(
      "{{\n.reg .pred %scale_d;\nsetp.ne.b32 %scale_d, ${}, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n{}k{}.{}.{}.{} {{{}}}, {}, ${}, %scale_d{}{};\n}}",
      bIndex + 1, count * 2, tf32 ? 8 : eightBit ? 32 : 16, s8 ? "s32" : "f32", type, type, regs, a,
      bIndex, s8 ? "" : ", 1, 1", trans);
  auto resultType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(count, acc.front().getType()));
  Value d = inlinePtx(b, loc, resultType, args, body, constraints);
  SmallVector<Value> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, d, int64_t(i)));
  return out;
}

/// `instruction` (no operands of its own) with `values` passing through it
/// as tied in/out operands, returned: nothing that reads or writes them can
/// move across it.
SmallVector<Value> passThrough(OpBuilder &b, Location loc, const std::string &instruction,
                               ValueRange values) {
  if (values.empty()) {
    inlinePtx(b, loc, Type(), {}, instruction, "");
    return {};
  }
  std::string constraints;
  SmallVector<Type> types;
  for (Value v : values) {
    constraints += fmt::format("{}{}", types.empty() ? "" : ",", v.getType().isF32() ? "=f" : "=r");
    types.push_back(v.getType());
  }
  for (size_t i = 0; i < values.size(); ++i)
    constraints += fmt::format(",{}", i);
  Value d = inlinePtx(b, loc, LLVM::LLVMStructType::getLiteral(b.getContext(), types), values, instruction,
                      constraints);
  SmallVector<Value> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, d, int64_t(i)));
  return out;
}

/// wgmma.wait_group `pending`, with every accumulator register passing
/// through it (returned), and the A fragments `keep` the group's wgmmas
/// read: their registers stay untouched until the wait, as the PTX ISA
/// requires while a wgmma may still read them (other code runs between an
/// overlapped dot and its wait; see overlap-chained-dots).
SmallVector<Value> emitWait(OpBuilder &b, Location loc, ValueRange acc, int pending,
                            ValueRange keep = {}) {
  SmallVector<Value> values(acc.begin(), acc.end());
  values.append(keep.begin(), keep.end());
  SmallVector<Value> out = passThrough(b, loc, fmt::format("wgmma.wait_group.sync.aligned {};", pending), values);
  out.resize(acc.size());
  return out;
}

/// wgmma.fence with `values` (accumulators and A fragments the next wgmmas
/// read) passing through it, returned: every instruction writing them stays
/// above the fence and none comes between it and the wgmmas, as the PTX ISA
/// requires (ptxas otherwise inserts warpgroup arrives and may serialise
/// the wgmmas).
SmallVector<Value> emitFence(OpBuilder &b, Location loc, ValueRange values) {
  return passThrough(b, loc, "wgmma.fence.sync.aligned;", values);
}

/// Whether `v` is the constant 0 (f32 or i32).
bool isZero(Value v) { return matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero()); }

/// `a * b + acc` on wgmma, both operands in shared memory at `aTile` and
/// `bTile` (placed as the plans say): wgmma.fence, one wgmma.mma_async per
/// warpgroup, m-tile, <= 256 columns and k16, one commit. Returns the
/// accumulator registers, still in flight (emitWait completes them).
/// A is either a shared tile (`aTile`, `planA`) or, with `aTile` null,
/// registers `aValues` in this mma's dot_operand layout.
SmallVector<Value> emitWgmmaDot(OpBuilder &b, Location loc, Type elem, int64_t warps, int64_t M,
                                int64_t N, int64_t K, Value aTile,
                                const std::optional<WgmmaOperandTile> &planA, ValueRange aValues,
                                Value bTile, const WgmmaOperandTile &planB, ValueRange c,
                                SmallVector<Value> *aFragments = nullptr) {
  const int64_t mTiles = M / (16 * warps), nTiles = N / 8, instrN = std::min<int64_t>(N, 256);
  // Warpgroup g's rows of m-tile mi start at 64 g + 16 warps mi.
  auto [lane, warp] = laneAndWarp(b, loc);
  Value group = LLVM::LShrOp::create(b, loc, warp, i32Const(b, loc, 2));
  Value groupRows = planA ? LLVM::MulOp::create(b, loc, group,
                                                 i32Const(b, loc, planA->instructionOffset(64, 0)))
                                 .getResult()
                           : Value();
  const bool tf32 = elem.isF32();
  const int64_t instrK = tf32 ? 8 : elem.getIntOrFloatBitWidth() == 8 ? 32 : 16, kTiles = K / instrK;
  // A from registers: every instruction's 4 words (m-tiles, then k-slices),
  // computed before the fence. This warp's 16 rows are mma.sync's A
  // fragment: 8 values a k-slice (tf32: m16k8, one value a register).
  SmallVector<Value> aRegs;
  if (!planA)
    for (int64_t mi = 0; mi < mTiles; ++mi)
      for (int64_t k0 = 0; k0 < K; k0 += instrK) {
        const size_t slice = size_t(k0 / instrK + kTiles * mi);
        if (tf32)
          for (Value v : aValues.slice(4 * slice, 4))
            aRegs.push_back(tf32Bits(b, loc, v, /*cvt=*/true));
        else
          aRegs.append(packWords(b, loc, aValues.slice(8 * slice, 8)));
      }
  // A slice of accumulators that is all zeros (a fresh dot) is not read:
  // its first wgmma takes scale-d = 0, and no zeros are materialised.
  const size_t sliceCount = size_t(instrN / 2);
  SmallVector<bool> fresh;
  SmallVector<Value> acc(c.begin(), c.end()), live;
  for (size_t first = 0; first < acc.size(); first += sliceCount) {
    ArrayRef<Value> slice = ArrayRef<Value>(acc).slice(first, sliceCount);
    fresh.push_back(llvm::all_of(slice, isZero));
    for (Value &v : MutableArrayRef<Value>(acc).slice(first, sliceCount))
      if (fresh.back())
        v = LLVM::UndefOp::create(b, loc, v.getType());
      else
        live.push_back(v);
  }
  SmallVector<Value> fenced = live;
  fenced.append(aRegs);
  fenced = emitFence(b, loc, fenced);
  for (size_t first = 0, next = 0; first < acc.size(); first += sliceCount)
    if (!fresh[first / sliceCount])
      for (size_t i = 0; i < sliceCount; ++i)
        acc[first + i] = fenced[next++];
  ArrayRef<Value> fencedA = ArrayRef<Value>(fenced).drop_front(live.size());
  if (aFragments)
    aFragments->assign(fencedA.begin(), fencedA.end());
  std::optional<Descriptors> descriptorsA;
  if (planA)
    descriptorsA.emplace(b, loc, aTile, groupRows, *planA);
  const Descriptors descriptorsB(b, loc, bTile, Value(), planB);
  for (int64_t mi = 0; mi < mTiles; ++mi)
    for (int64_t n0 = 0; n0 < N; n0 += instrN)
      for (int64_t k0 = 0; k0 < K; k0 += instrK) {
        Value descA;
        ArrayRef<Value> regs;
        if (planA)
          descA = descriptorsA->at(b, loc, int32_t(planA->instructionOffset(int32_t(16 * warps * mi), int32_t(k0))));
        else
          regs = fencedA.slice(size_t(4 * (k0 / instrK + kTiles * mi)), 4);
        Value descB = descriptorsB.at(b, loc, int32_t(planB.instructionOffset(int32_t(n0), int32_t(k0))));
        const size_t first = size_t(4 * (nTiles * mi + n0 / 8));
        const bool scaleD = k0 > 0 || !fresh[first / sliceCount];
        SmallVector<Value> d = emitWgmma(b, loc, elem, ArrayRef<Value>(acc).slice(first, sliceCount), descA,
                                         regs, descB, planA && !planA->kMajor, !planB.kMajor, scaleD);
        std::copy(d.begin(), d.end(), acc.begin() + ptrdiff_t(first));
      }
  inlinePtx(b, loc, Type(), {}, "wgmma.commit_group.sync.aligned;", "");
  return acc;
}

struct DotWgmmaPattern : OpConversionPattern<tile::DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::DotOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto cT = cast<RankedTensorType>(op.getType());
    auto mma = dyn_cast_if_present<tilegpu::MmaEncodingAttr>(cT.getEncoding());
    if (!mma || !mma.isWgmma())
      return failure();
    auto aT = cast<RankedTensorType>(op.getA().getType());
    auto bT = cast<RankedTensorType>(op.getB().getType());
    Type elem = aT.getElementType();
    const bool tf32 = elem.isF32() && op.getPrecision() == tile::DotPrecision::TF32;
    const bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(elem), s8 = elem.isInteger(8);
    if (!(elem.isBF16() || elem.isF16() || tf32 || fp8 || s8) || bT.getElementType() != elem ||
        !(s8 ? cT.getElementType().isInteger(32) : cT.getElementType().isF32()))
      return rw.notifyMatchFailure(op, "wgmma here takes f16/bf16/fp8 operands, or f32 ones at "
                                       "tf32 precision, and an f32 accumulator; or i8 ones and i32");
    if ((fp8 || s8) && isa_and_present<tilegpu::DotOperandEncodingAttr>(aT.getEncoding()))
      return rw.notifyMatchFailure(op, "wgmma: 8-bit A is read from shared memory, not registers");
    // A from registers when it arrives as this mma's fragments.
    auto fragments = dyn_cast_if_present<tilegpu::DotOperandEncodingAttr>(aT.getEncoding());
    if (fragments && (fragments.getParent() != mma || fragments.getOpIdx() != 0 ||
                      fragments.getElementBits() != elem.getIntOrFloatBitWidth()))
      return rw.notifyMatchFailure(op, "wgmma: A's fragments belong to another mma");
    if (isa_and_present<tilegpu::DotOperandEncodingAttr>(bT.getEncoding()))
      return rw.notifyMatchFailure(op, "wgmma reads B from shared memory, not fragments");
    std::optional<WgmmaOperandTile> planA = fragments ? std::nullopt : planOperand(0, aT);
    std::optional<WgmmaOperandTile> planB = planOperand(1, bT);
    if ((!fragments && !planA) || !planB)
      return rw.notifyMatchFailure(op, "an operand tile wgmma cannot read from shared memory");
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    const int64_t M = cT.getDimSize(0), N = cT.getDimSize(1), K = aT.getDimSize(1);
    const int64_t warps = mma.getWarpsPerCTA()[0];
    ValueRange c = adaptor.getAcc();
    if (int64_t(c.size()) != 4 * (M / (16 * warps)) * (N / 8))
      return rw.notifyMatchFailure(op, "wgmma: accumulator registers do not match the layout");

    Value aTile = sharedBuffer(rw, loc, op);
    const int64_t aBytes = planA ? aT.getNumElements() * int64_t(elem.getIntOrFloatBitWidth() / 8) : 0;
    Value bTile = LLVM::GEPOp::create(
        rw, loc, aTile.getType(), rw.getI8Type(), aTile,
        ValueRange{i32Const(rw, loc, (aBytes + analysis::kWgmmaTileAlignment - 1) /
                                         analysis::kWgmmaTileAlignment *
                                         analysis::kWgmmaTileAlignment)});
    ctaBarrier(rw, loc); // earlier users of the scratch are done
    if (planA)
      storeTile(rw, loc, adaptor.getA(), aT, planA->tile, aTile);
    storeTile(rw, loc, adaptor.getB(), bT, planB->tile, bTile);
    // Ordinary stores, read next by the tensor cores (the async proxy).
    inlinePtx(rw, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
    ctaBarrier(rw, loc);
    rw.replaceOpWithMultiple(
        op, {emitWait(rw, loc,
                      emitWgmmaDot(rw, loc, elem, warps, M, N, K, planA ? aTile : Value(), planA,
                                   adaptor.getA(), bTile, *planB, c),
                      0)});
    return success();
  }
};

/// The wgmma placement of operand `idx` held by a ring (seen transposed when
/// the ring holds it as loaded), when the ring is laid out that way.
std::optional<WgmmaOperandTile> ringOperand(int idx, tilegpu::SharedTilesType ring, bool transposed) {
  const layout::SharedTile tile = transposed ? ring.tile().transposed() : ring.tile();
  auto p = layout::planWgmmaOperandTile(idx, tile.shape, tile.contiguousDim, tile.elementBits);
  if (!p || p->tile.rowXor != tile.rowXor || p->tile.blockElements != tile.blockElements)
    return std::nullopt;
  return p;
}

/// The f32 values of ring stages `tiles` (base, bytes) rounded to tf32 in
/// place, as mma.sync and the interpreter round them (the tensor cores would
/// only drop the low bits of what the ring's copies wrote): the warps of
/// the dot share the 16-byte pieces, then fence the async proxy (wgmma reads
/// next) and meet. Rounding is idempotent, so a stage read again rounds
/// nothing new - the low 13 bits are masked after cvt.rn.tf32.f32, which the
/// PTX ISA does not promise to zero (a loop-invariant stage is rounded again
/// every iteration, while an earlier wgmma group may still read it).
void roundStagesToTf32(OpBuilder &b, Location loc, ArrayRef<std::pair<Value, int64_t>> tiles,
                       int64_t warps) {
  const int64_t threads = 32 * warps;
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto f32x4 = VectorType::get({4}, f32), i32x4 = VectorType::get({4}, i32);
  Value tid = programThreadIndex(b, loc);
  for (auto [base, bytes] : tiles) {
    const int64_t pieces = bytes / 16;
    for (int64_t first = 0; first < pieces; first += threads) {
      OpBuilder::InsertionGuard guard(b);
      Value piece = LLVM::AddOp::create(b, loc, tid, i32Const(b, loc, int32_t(first)));
      if (first + threads > pieces) { // a last round for some of the threads
        Value some = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, piece,
                                          i32Const(b, loc, int32_t(pieces)));
        auto only = scf::IfOp::create(b, loc, TypeRange{}, some, /*withElse=*/false);
        b.setInsertionPointToStart(only.thenBlock());
      }
      Value at = LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                                     ValueRange{LLVM::MulOp::create(b, loc, piece, i32Const(b, loc, 16))});
      Value in = LLVM::LoadOp::create(b, loc, f32x4, at, /*alignment=*/16);
      Value out = LLVM::UndefOp::create(b, loc, i32x4);
      for (int64_t i = 0; i < 4; ++i) {
        Value index = i32Const(b, loc, int32_t(i));
        Value rounded = LLVM::AndOp::create(
            b, loc, tf32Bits(b, loc, LLVM::ExtractElementOp::create(b, loc, in, index), /*cvt=*/true),
            i32Const(b, loc, int32_t(0xffffe000u)));
        out = LLVM::InsertElementOp::create(b, loc, out, rounded, index);
      }
      LLVM::StoreOp::create(b, loc, out, at, /*alignment=*/16);
    }
  }
  // Ordinary stores, read next by the tensor cores (the async proxy).
  inlinePtx(b, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
  ctaBarrier(b, loc);
}

/// Whether an f32 ring's stages need rounding to tf32 before a wgmma reads
/// them: not when TMA rounded them as they landed (alloc_shared {tf32}).
bool needsTf32Rounding(Value ring) {
  auto type = cast<tilegpu::SharedTilesType>(ring.getType());
  auto alloc = ring.getDefiningOp<tilegpu::AllocSharedOp>();
  return type.getElementType().isF32() && !(alloc && alloc.getTf32());
}

/// dot_shared with a wgmma accumulator: the operands are stages of rings
/// that pipeline-dot-operands placed as wgmma reads them (and whose wait
/// fenced the async proxy), so the dot is the instructions alone - after
/// rounding f32 stages to tf32 in place, unless TMA rounded them.
struct DotSharedWgmmaPattern : OpConversionPattern<tilegpu::DotSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::DotSharedOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto cT = cast<RankedTensorType>(op.getType());
    auto mma = cast<tilegpu::MmaEncodingAttr>(cT.getEncoding());
    if (!mma.isWgmma())
      return failure();
    Location loc = op.getLoc();
    tilegpu::SharedTilesType aT = op.getA().getType(), bT = op.getB().getType();
    std::optional<WgmmaOperandTile> planA = ringOperand(0, aT, op.getTransposeA()),
                                    planB = ringOperand(1, bT, op.getTransposeB());
    if (!planA || !planB)
      return rw.notifyMatchFailure(op, "a ring is not in a layout wgmma's descriptors describe");
    Value aTile = ringStage(rw, loc, adaptor.getA()[0], adaptor.getAStage()[0], aT);
    Value bTile = ringStage(rw, loc, adaptor.getB()[0], adaptor.getBStage()[0], bT);
    SmallVector<std::pair<Value, int64_t>> unrounded;
    if (needsTf32Rounding(op.getA()))
      unrounded.push_back({aTile, aT.tileBytes()});
    if (needsTf32Rounding(op.getB()))
      unrounded.push_back({bTile, bT.tileBytes()});
    if (!unrounded.empty())
      roundStagesToTf32(rw, loc, unrounded, mma.getWarpsPerCTA()[0]);
    rw.replaceOpWithMultiple(
        op, {emitWgmmaDot(rw, loc, aT.getElementType(), mma.getWarpsPerCTA()[0], cT.getDimSize(0),
                          cT.getDimSize(1), planA->tile.shape[1], aTile, planA, ValueRange{}, bTile,
                          *planB, adaptor.getAcc())});
    return success();
  }
};

/// The registers each dot_shared_b's wgmmas read A from, for a wait with
/// `keepA` (the dot is converted first: it comes first in its block).
using FragmentRegisters = DenseMap<Operation *, SmallVector<Value>>;

/// dot_shared_b with a wgmma accumulator: A from registers (its fragments),
/// B from the ring stage through a descriptor; in flight like dot_shared.
struct DotSharedBWgmmaPattern : OpConversionPattern<tilegpu::DotSharedBOp> {
  DotSharedBWgmmaPattern(const TypeConverter &types, MLIRContext *context,
                         std::shared_ptr<FragmentRegisters> fragments)
      : OpConversionPattern(types, context, /*benefit=*/2), fragments(std::move(fragments)) {}
  std::shared_ptr<FragmentRegisters> fragments;
  LogicalResult matchAndRewrite(tilegpu::DotSharedBOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto cT = cast<RankedTensorType>(op.getType());
    auto mma = cast<tilegpu::MmaEncodingAttr>(cT.getEncoding());
    if (!mma.isWgmma())
      return failure();
    Location loc = op.getLoc();
    tilegpu::SharedTilesType bT = op.getB().getType();
    std::optional<WgmmaOperandTile> planB = ringOperand(1, bT, op.getTransposeB());
    if (!planB)
      return rw.notifyMatchFailure(op, "the ring is not in a layout wgmma's descriptors describe");
    Value bTile = ringStage(rw, loc, adaptor.getB()[0], adaptor.getBStage()[0], bT);
    if (needsTf32Rounding(op.getB()))
      roundStagesToTf32(rw, loc, {{bTile, bT.tileBytes()}}, mma.getWarpsPerCTA()[0]);
    SmallVector<Value> aRegisters;
    rw.replaceOpWithMultiple(
        op, {emitWgmmaDot(rw, loc, bT.getElementType(), mma.getWarpsPerCTA()[0], cT.getDimSize(0),
                          cT.getDimSize(1), planB->tile.shape[0], Value(), std::nullopt, adaptor.getA(), bTile,
                          *planB, adaptor.getAcc(), &aRegisters)});
    (*fragments)[op] = std::move(aRegisters);
    return success();
  }
};

struct WgmmaWaitPattern : OpConversionPattern<tilegpu::WgmmaWaitOp> {
  WgmmaWaitPattern(const TypeConverter &types, MLIRContext *context,
                   std::shared_ptr<FragmentRegisters> fragments)
      : OpConversionPattern(types, context), fragments(std::move(fragments)) {}
  std::shared_ptr<FragmentRegisters> fragments;

  LogicalResult matchAndRewrite(tilegpu::WgmmaWaitOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    ValueRange keep;
    if (op.getKeepA()) {
      auto it = fragments->find(op.getAcc().getDefiningOp());
      if (it == fragments->end())
        return rw.notifyMatchFailure(op, "keepA: the accumulator is not a wgmma dot_shared_b's "
                                         "lowered before this wait");
      keep = it->second;
    }
    rw.replaceOpWithMultiple(op, {emitWait(rw, op.getLoc(), adaptor.getAcc(), int(op.getPending()), keep)});
    return success();
  }
};

} // namespace

void populateWgmmaPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  // Above the mma.sync lowering, which computes the same accumulator layout
  // and takes the dots this one cannot.
  patterns.add<DotWgmmaPattern, DotSharedWgmmaPattern>(types, patterns.getContext(), /*benefit=*/2);
  auto fragments = std::make_shared<FragmentRegisters>();
  patterns.add<DotSharedBWgmmaPattern, WgmmaWaitPattern>(types, patterns.getContext(), fragments);
}

} // namespace tegula::lowering
