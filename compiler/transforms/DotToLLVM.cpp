//===- DotToLLVM.cpp - tile.dot on tensor cores or as FMAs ----------------===//
//
// The mma.sync path: a dot whose accumulator carries #tilegpu.mma
// (accelerate-dot). Operands that carry this mma's #tilegpu.dot_operand
// layouts are already in the registers mma.sync reads; operands in any
// other layout are staged through swizzled shared memory and read back
// with ldmatrix (SharedOperand.h), one k-slice at a time. Each thread
// packs its operand values into 32-bit registers (two f16/bf16, one tf32,
// four i8) and issues one m16n8k16 (k8, k32) per instruction tile of its
// warp, in the register order the layouts define (compiler/layout/MmaLayouts.h).
//
// The FMA path, every other dot: the owners of `a` (MxK) and `b` (KxN) write them to shared
// memory, and each thread computes the accumulator elements it holds,
// acc[i][j] += sum_k a[i][k] * b[k][j], in fp32 (f16/bf16 operands are
// widened; i8 accumulates in i32). tf32 precision is not emulated here: the
// FMA path is full fp32, at least as accurate. Tensor cores (mma.sync,
// wgmma) replace this in the tensor-core issue.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/SharedOperand.h"

#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/MmaLayouts.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {
namespace {

int64_t bytesOf(Type t) { return (t.getIntOrFloatBitWidth() + 7) / 8; }

/// Owners of `values` (layout ll, shape [rows, cols]) store them row-major
/// at `base`.
void storeTile(ConversionPatternRewriter &rw, Location loc, ValueRange values,
               const LinearLayout &ll, int64_t cols, Value base) {
  Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
  Owners owners = ownersOf(rw, loc, ll);
  int32_t dupRegs = owners.duplicateRegisters;
  Value owner = owners.threadOwns;
  auto coords = coordinates(rw, loc, ll);
  for (int32_t r = 0; r < ll.inDimSize("register"); ++r) {
    if (r & dupRegs)
      continue;
    Value idx = LLVM::AddOp::create(
        rw, loc, LLVM::MulOp::create(rw, loc, coords[size_t(r)][0], i32Const(rw, loc, cols)),
        coords[size_t(r)][1]);
    Value p = LLVM::GEPOp::create(rw, loc, ptr3, values[size_t(r)].getType(), base, ValueRange{idx});
    predicatedStore(rw, loc, p, values[size_t(r)], owner, "shared");
  }
}

bool onTensorCores(tile::DotOp op) {
  return isa_and_present<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(op.getType()).getEncoding());
}

/// One mma operand's registers: the dot's own when they arrive as
/// fragments (#tilegpu.dot_operand), else read from shared memory with
/// ldmatrix as the k-slices need them.
class MmaOperand {
public:
  MmaOperand(ValueRange fragments) : fragments_(fragments) {}
  MmaOperand(std::unique_ptr<SharedOperand> staged) : staged_(std::move(staged)) {}
  int32_t registers() const { return staged_ ? staged_->registers() : int32_t(fragments_.size()); }
  Value reg(int32_t r) { return staged_ ? staged_->reg(r) : fragments_[size_t(r)]; }
  SharedOperand *staged() { return staged_.get(); }

private:
  ValueRange fragments_;
  std::unique_ptr<SharedOperand> staged_;
};

/// Instruction tiles per warp along K, M and N (a tile smaller than the
/// warps' reach is held in duplicate: one tile per warp).
std::array<int64_t, 3> instructionTiles(tilegpu::MmaEncodingAttr mma, int64_t M, int64_t N,
                                        int64_t K, unsigned bits) {
  const int64_t wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
  return {K / layout::mmaInstructionShape(int(bits)).k, std::max<int64_t>(1, M / (16 * wm)),
          std::max<int64_t>(1, N / (8 * wn))};
}

/// Whether the target rounds to tf32 with cvt.rn.tf32.f32 (the pattern's
/// type converter says).
template <class Pattern> bool tf32Cvt(const Pattern &p) {
  return static_cast<const TileTypeConverter *>(p.getTypeConverter())->tf32Cvt;
}

/// The mma.sync instructions of one warp's share of `a * b + c` (registers
/// of the accumulator layout in, out), k-slice by k-slice: a staged
/// operand's ldmatrix runs just before the first mma that needs it, so one
/// slice of each operand is live at a time.
SmallVector<Value> emitMmaSync(ConversionPatternRewriter &rw, Location loc, Type elem,
                               tile::DotPrecision precision, int64_t kTiles, int64_t mTiles,
                               int64_t nTiles, MmaOperand *a, MmaOperand *b, ValueRange c, bool tf32Cvt) {
  const bool tf32 = elem.isF32(), s8 = elem.isInteger(8);
  const int64_t e = 32 / elem.getIntOrFloatBitWidth(); // operand elements per register
  const int64_t instrK = layout::mmaInstructionShape(int(elem.getIntOrFloatBitWidth())).k;
  const bool bf16 = elem.isBF16();
  auto pair = VectorType::get({2}, elem);
  Type i32 = rw.getI32Type();
  // Two 16-bit values in one 32-bit register, the first in the low half.
  auto pack = [&](Value lo, Value hi) -> Value {
    Value v = LLVM::PoisonOp::create(rw, loc, pair);
    v = LLVM::InsertElementOp::create(rw, loc, v, lo, i32Const(rw, loc, 0));
    v = LLVM::InsertElementOp::create(rw, loc, v, hi, i32Const(rw, loc, 1));
    return bf16 ? Value(LLVM::BitcastOp::create(rw, loc, i32, v)) : v;
  };
  // f32 -> tf32 bits, rounded to nearest even like TMA and the interpreter:
  // mma.sync itself would truncate. Inf/NaN pass.
  // (cvt for tf32's operands; tf32x3's parts need exact low bits.)
  auto toTf32 = [&](Value f) -> Value { return tf32Bits(rw, loc, f, tf32Cvt && precision == tile::DotPrecision::TF32); };
  Type f32 = rw.getF32Type();
  // tf32x3: x = hi + lo with hi = tf32(x), lo = tf32(x - hi); the product
  // is lo*hi + hi*lo + hi*hi (the lo*lo term is below f32 precision).
  auto hiPart = [&](Value f) { return toTf32(f); };
  auto loPart = [&](Value f) {
    Value hi = LLVM::BitcastOp::create(rw, loc, f32, toTf32(f));
    return toTf32(LLVM::FSubOp::create(rw, loc, f, hi));
  };
  Type accType = s8 ? i32 : f32;
  auto resultType =
      LLVM::LLVMStructType::getLiteral(rw.getContext(), {accType, accType, accType, accType});
  const NVVM::MMATypes ptxType = tf32   ? NVVM::MMATypes::tf32
                                 : bf16 ? NVVM::MMATypes::bf16
                                 : s8   ? NVVM::MMATypes::s8
                                        : NVVM::MMATypes::f16;
  SmallVector<Value> results(c.begin(), c.end());
  auto mmaSync = [&](ValueRange aRegs, ValueRange bRegs, int64_t cBase) {
    ValueRange acc(ArrayRef<Value>(results).slice(size_t(cBase), 4));
    auto d = NVVM::MmaOp::create(rw, loc, resultType, aRegs, bRegs, acc, {16, 8, instrK},
                                 std::nullopt,
                                 s8 ? std::optional(NVVM::MMAIntOverflow::wrapped) : std::nullopt,
                                 std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
                                 std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                                                NVVM::MMALayout::col});
    for (int64_t s = 0; s < 4; ++s)
      results[size_t(cBase + s)] = LLVM::ExtractValueOp::create(rw, loc, d, s);
  };
  // 32-bit registers of one instruction's operand, from `count` values
  // starting at `base`, each through `part` (tf32) or packed in pairs.
  auto registers = [&](MmaOperand &o, int64_t base, int64_t count,
                       llvm::function_ref<Value(Value)> part) {
    SmallVector<Value> regs;
    for (int64_t r = 0; r < count; r += e) {
      if (e == 4) { // four s8 in one register, the first in the low byte
        SmallVector<Value> bytes;
        for (int64_t i = 0; i < 4; ++i)
          bytes.push_back(o.reg(int32_t(base + r + i)));
        regs.push_back(packWords(rw, loc, bytes)[0]);
        continue;
      }
      regs.push_back(e == 2 ? pack(o.reg(int32_t(base + r)), o.reg(int32_t(base + r + 1)))
                            : part(o.reg(int32_t(base + r))));
    }
    return regs;
  };
  const bool split = tf32 && precision == tile::DotPrecision::TF32x3;
  // k-slice by k-slice: a staged operand's ldmatrix runs just before the
  // first mma that needs it, so one slice of each operand is live at a time.
  for (int64_t ki = 0; ki < kTiles; ++ki)
    for (int64_t mi = 0; mi < mTiles; ++mi)
      for (int64_t ni = 0; ni < nTiles; ++ni) {
        const int64_t cBase = 4 * (ni + nTiles * mi);
        const int64_t aBase = 4 * e * (ki + kTiles * mi), bBase = 2 * e * (ki + kTiles * ni);
        SmallVector<Value> aHi = registers(*a, aBase, 4 * e, hiPart);
        SmallVector<Value> bHi = registers(*b, bBase, 2 * e, hiPart);
        if (split) { // small terms first
          mmaSync(registers(*a, aBase, 4, loPart), bHi, cBase);
          mmaSync(aHi, registers(*b, bBase, 2, loPart), cBase);
        }
        mmaSync(aHi, bHi, cBase);
      }
  return results;
}

struct DotMmaPattern : OpConversionPattern<tile::DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::DotOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!onTensorCores(op))
      return failure();
    Location loc = op.getLoc();
    auto aT = cast<RankedTensorType>(op.getA().getType());
    auto bT = cast<RankedTensorType>(op.getB().getType());
    auto cT = cast<RankedTensorType>(op.getType());
    auto mma = cast<tilegpu::MmaEncodingAttr>(cT.getEncoding());
    Type elem = getTypeConverter()->convertType(aT.getElementType());
    const tile::DotPrecision precision = op.getPrecision();
    const bool tf32 = elem.isF32() && precision != tile::DotPrecision::IEEE;
    const bool s8 = elem.isInteger(8) && cT.getElementType().isInteger(32);
    if (!(elem.isBF16() || elem.isF16() || tf32 || s8) || bT.getElementType() != aT.getElementType() ||
        !(cT.getElementType().isF32() || s8))
      return rw.notifyMatchFailure(op, "mma.sync takes f16/bf16 operands (m16n8k16) or f32 ones "
                                       "at tf32/tf32x3 precision (m16n8k8) with an f32 "
                                       "accumulator, or i8 ones with an i32 accumulator (m16n8k32)");
    const unsigned bits = elem.getIntOrFloatBitWidth();
    const int64_t e = 32 / bits; // operand elements per 32-bit register
    const int64_t M = cT.getDimSize(0), N = cT.getDimSize(1), K = aT.getDimSize(1);
    auto [kTiles, mTiles, nTiles] = instructionTiles(mma, M, N, K, bits);

    // Each operand: fragments of this mma already, or staged through shared
    // memory (A's tile first, then B's).
    const bool stageA = !isa<tilegpu::DotOperandEncodingAttr>(aT.getEncoding());
    const bool stageB = !isa<tilegpu::DotOperandEncodingAttr>(bT.getEncoding());
    if ((stageA || stageB) && !analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    auto fragmentsOf = [&](unsigned idx, RankedTensorType t) {
      return tilegpu::toLinearLayout(tilegpu::DotOperandEncodingAttr::get(rw.getContext(), idx, mma, bits),
                                     t.getShape());
    };
    // Both operands are checked before any IR is written: the registers
    // each will hold, or nothing when it is neither this mma's fragments
    // nor a tile that can be staged.
    auto registersOf = [&](unsigned idx, RankedTensorType t, ValueRange regs,
                           bool stage) -> std::optional<int64_t> {
      if (!stage) {
        auto given = cast<tilegpu::DotOperandEncodingAttr>(t.getEncoding());
        if (given.getParent() != mma || given.getOpIdx() != idx || given.getElementBits() != bits)
          return std::nullopt;
        return int64_t(regs.size());
      }
      LinearLayout fragments = fragmentsOf(idx, t);
      if (!SharedOperand::applies(t, fragments, idx == 0))
        return std::nullopt;
      return int64_t(fragments.inDimSize("register"));
    };
    const std::optional<int64_t> aRegs = registersOf(0, aT, adaptor.getA(), stageA),
                                 bRegs = registersOf(1, bT, adaptor.getB(), stageB);
    ValueRange c = adaptor.getAcc();
    if (!aRegs || !bRegs)
      return rw.notifyMatchFailure(op, "mma.sync: an operand is neither this mma's fragments nor "
                                       "a tile that can be staged in shared memory");
    if (*aRegs != 4 * e * kTiles * mTiles || *bRegs != 2 * e * kTiles * nTiles ||
        int64_t(c.size()) != 4 * mTiles * nTiles)
      return rw.notifyMatchFailure(op, "mma.sync: operand registers do not match the layouts");
    auto operand = [&](unsigned idx, RankedTensorType t, ValueRange regs, bool stage,
                       int64_t byteOffset) -> MmaOperand {
      if (!stage)
        return MmaOperand(regs);
      Value base = sharedBuffer(rw, loc, op);
      if (byteOffset)
        base = LLVM::GEPOp::create(rw, loc, base.getType(), rw.getI8Type(), base,
                                   ValueRange{i32Const(rw, loc, byteOffset)});
      return MmaOperand(std::make_unique<SharedOperand>(rw, loc, regs, t, fragmentsOf(idx, t), idx == 0, base));
    };
    std::optional<MmaOperand> a = operand(0, aT, adaptor.getA(), stageA, 0);
    std::optional<MmaOperand> b =
        operand(1, bT, adaptor.getB(), stageB, stageA ? aT.getNumElements() * bits / 8 : 0);
    if (stageA || stageB) {
      ctaBarrier(rw, loc); // earlier users of the scratch are done
      for (MmaOperand *o : {&*a, &*b})
        if (o->staged())
          o->staged()->store();
      ctaBarrier(rw, loc);
    }

    SmallVector<Value> results =
        emitMmaSync(rw, loc, elem, precision, kTiles, mTiles, nTiles, &*a, &*b, c, tf32Cvt(*this));
    rw.replaceOpWithMultiple(op, {results});
    return success();
  }
};

/// dot_shared: both operands in stages of tilegpu.shared rings (filled by
/// cp.async), read k-slice by k-slice (SharedOperand).
struct DotSharedPattern : OpConversionPattern<tilegpu::DotSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::DotSharedOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto cT = cast<RankedTensorType>(op.getType());
    auto mma = cast<tilegpu::MmaEncodingAttr>(cT.getEncoding());
    tilegpu::SharedTilesType aT = op.getA().getType(), bT = op.getB().getType();
    Type elem = getTypeConverter()->convertType(aT.getElementType());
    // A transposed ring holds the operand as loaded: the dot sees its view.
    const layout::SharedTile aTile = op.getTransposeA() ? aT.tile().transposed() : aT.tile();
    const layout::SharedTile bTile = op.getTransposeB() ? bT.tile().transposed() : bT.tile();
    const unsigned bits = elem.getIntOrFloatBitWidth();
    auto [kTiles, mTiles, nTiles] =
        instructionTiles(mma, cT.getDimSize(0), cT.getDimSize(1), aTile.shape[1], bits);
    auto operand = [&](unsigned idx, tilegpu::SharedTilesType t, const layout::SharedTile &tile,
                       Value ring, Value stage) {
      auto enc = tilegpu::DotOperandEncodingAttr::get(rw.getContext(), idx, mma, bits);
      Value base = ringStage(rw, loc, ring, stage, t);
      return MmaOperand(std::make_unique<SharedOperand>(
          rw, loc, tile,
          tilegpu::toLinearLayout(enc, {int64_t(tile.shape[0]), int64_t(tile.shape[1])}), idx == 0,
          base, elem));
    };
    MmaOperand a = operand(0, aT, aTile, adaptor.getA()[0], adaptor.getAStage()[0]);
    MmaOperand b = operand(1, bT, bTile, adaptor.getB()[0], adaptor.getBStage()[0]);
    rw.replaceOpWithMultiple(op, {emitMmaSync(rw, loc, elem, op.getPrecision().value_or(tile::DotPrecision::IEEE),
                                              kTiles, mTiles, nTiles, &a, &b, adaptor.getAcc(), tf32Cvt(*this))});
    return success();
  }
};

/// dot_shared_b: A already in this mma's fragments, B in a ring stage read
/// as for dot_shared.
struct DotSharedBPattern : OpConversionPattern<tilegpu::DotSharedBOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::DotSharedBOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto cT = cast<RankedTensorType>(op.getType());
    auto mma = cast<tilegpu::MmaEncodingAttr>(cT.getEncoding());
    tilegpu::SharedTilesType bT = op.getB().getType();
    Type elem = getTypeConverter()->convertType(bT.getElementType());
    const layout::SharedTile bTile = op.getTransposeB() ? bT.tile().transposed() : bT.tile();
    const unsigned bits = elem.getIntOrFloatBitWidth();
    auto [kTiles, mTiles, nTiles] =
        instructionTiles(mma, cT.getDimSize(0), cT.getDimSize(1), bTile.shape[0], bits);
    auto enc = tilegpu::DotOperandEncodingAttr::get(rw.getContext(), 1, mma, bits);
    Value base = ringStage(rw, loc, adaptor.getB()[0], adaptor.getBStage()[0], bT);
    MmaOperand a(adaptor.getA());
    MmaOperand b(std::make_unique<SharedOperand>(
        rw, loc, bTile, tilegpu::toLinearLayout(enc, {int64_t(bTile.shape[0]), int64_t(bTile.shape[1])}),
        false, base, elem));
    if (a.registers() != 4 * int64_t(32 / bits) * kTiles * mTiles)
      return rw.notifyMatchFailure(op, "mma.sync: A's registers do not match its fragments");
    rw.replaceOpWithMultiple(op, {emitMmaSync(rw, loc, elem, op.getPrecision().value_or(tile::DotPrecision::IEEE),
                                              kTiles, mTiles, nTiles, &a, &b, adaptor.getAcc(), tf32Cvt(*this))});
    return success();
  }
};

struct DotFmaPattern : OpConversionPattern<tile::DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::DotOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (onTensorCores(op))
      return failure();
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    auto aT = cast<RankedTensorType>(op.getA().getType());
    auto bT = cast<RankedTensorType>(op.getB().getType());
    auto cT = cast<RankedTensorType>(op.getType());
    int64_t M = aT.getDimSize(0), K = aT.getDimSize(1), N = bT.getDimSize(1);
    Type opElem = getTypeConverter()->convertType(aT.getElementType());
    Type accElem = getTypeConverter()->convertType(cT.getElementType());
    bool isInt = isa<IntegerType>(accElem);
    Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
    // a then b, row-major, in this op's buffer.
    Value aBase = sharedBuffer(rw, loc, op);
    Value bBase = LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), aBase,
                                      ValueRange{i32Const(rw, loc, M * K * bytesOf(opElem))});
    ctaBarrier(rw, loc); // earlier users of the scratch are done
    storeTile(rw, loc, adaptor.getA(), layoutOf(aT), K, aBase);
    storeTile(rw, loc, adaptor.getB(), layoutOf(bT), N, bBase);
    ctaBarrier(rw, loc);

    auto widen = [&](Value v) -> Value {
      if (isInt)
        return LLVM::SExtOp::create(rw, loc, accElem, v);
      unsigned from = v.getType().getIntOrFloatBitWidth(), to = accElem.getIntOrFloatBitWidth();
      if (from < to)
        return LLVM::FPExtOp::create(rw, loc, accElem, v);
      if (from > to)
        return LLVM::FPTruncOp::create(rw, loc, accElem, v);
      return v;
    };
    LinearLayout cl = layoutOf(cT);
    auto coords = coordinates(rw, loc, cl);
    SmallVector<Value> results;
    for (int32_t r = 0; r < cl.inDimSize("register"); ++r) {
      Value i = coords[size_t(r)][0], j = coords[size_t(r)][1];
      Value rowBase = LLVM::MulOp::create(rw, loc, i, i32Const(rw, loc, K));
      Value acc = adaptor.getAcc()[size_t(r)];
      for (int64_t k = 0; k < K; ++k) {
        Value pa = LLVM::GEPOp::create(
            rw, loc, ptr3, opElem, aBase,
            ValueRange{LLVM::AddOp::create(rw, loc, rowBase, i32Const(rw, loc, k))});
        Value pb = LLVM::GEPOp::create(
            rw, loc, ptr3, opElem, bBase,
            ValueRange{LLVM::AddOp::create(rw, loc, j, i32Const(rw, loc, k * N))});
        Value x = widen(LLVM::LoadOp::create(rw, loc, opElem, pa));
        Value y = widen(LLVM::LoadOp::create(rw, loc, opElem, pb));
        acc = isInt ? LLVM::AddOp::create(rw, loc, acc, LLVM::MulOp::create(rw, loc, x, y)).getResult()
                    : LLVM::FMAOp::create(rw, loc, x, y, acc).getResult();
      }
      results.push_back(acc);
    }
    rw.replaceOpWithMultiple(op, {results});
    return success();
  }
};

} // namespace

void populateDotPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<DotMmaPattern, DotSharedPattern, DotSharedBPattern, DotFmaPattern>(types,
                                                                                patterns.getContext());
}

} // namespace tegula::lowering
