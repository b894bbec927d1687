//===- DotToLLVM.cpp - tile.dot as FMAs (correct on any shape) ------------===//
//
// The FMA path: the owners of `a` (MxK) and `b` (KxN) write them to shared
// memory, and each thread computes the accumulator elements it holds,
// acc[i][j] += sum_k a[i][k] * b[k][j], in fp32 (f16/bf16 operands are
// widened; i8 accumulates in i32). tf32 precision is not emulated here: the
// FMA path is full fp32, at least as accurate. Tensor cores (mma.sync,
// wgmma) replace this in the tensor-core issue.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"

#include "compiler/analysis/SharedMemoryUsage.h"

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

struct DotFmaPattern : OpConversionPattern<tile::DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::DotOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
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
    NVVM::Barrier0Op::create(rw, loc); // earlier users of the scratch are done
    storeTile(rw, loc, adaptor.getA(), layoutOf(aT), K, aBase);
    storeTile(rw, loc, adaptor.getB(), layoutOf(bT), N, bBase);
    NVVM::Barrier0Op::create(rw, loc);

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
    NVVM::Barrier0Op::create(rw, loc); // the scratch is free again
    rw.replaceOpWithMultiple(op, {results});
    return success();
  }
};

} // namespace

void populateDotPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<DotFmaPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
