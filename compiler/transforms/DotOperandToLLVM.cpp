//===- DotOperandToLLVM.cpp - operands into mma fragments via ldmatrix ----===//
//
// LdmatrixOperand (LdmatrixOperand.h), and the convert_layout into a 16-bit
// #tilegpu.dot_operand that uses it (the generic exchange's scalar shared
// accesses replaced by 16-byte stores and ldmatrix):
//
//   1. the source's owners store it in vectors of up to 16 bytes into a tile
//      whose rows run along the source's contiguous dimension, with a
//      swizzle derived from the two access patterns (layout::deriveSwizzle)
//      so that neither the stores nor the reads conflict on banks;
//   2. each warp reads its fragments back with ldmatrix.x4 (.x2 / .x1 for
//      small operands; .trans when the rows in shared memory do not run
//      along K), 8 operand registers per instruction.
//
// All addressing is linear-layout algebra: the source layout, and the
// ldmatrix row addresses derived from the operand layout, are composed with
// the swizzled tile's offset layout, so each register's shared-memory offset
// is one XOR of constants and the thread's lane/warp bits.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LdmatrixOperand.h"

#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/MmaLayouts.h"
#include "compiler/layout/SharedSwizzle.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <bit>

using namespace mlir;
using tegula::layout::LinearLayout;
using tegula::layout::SharedTile;

namespace tegula::lowering {

bool LdmatrixOperand::applies(RankedTensorType source, const LinearLayout &operand) {
  return source.getRank() == 2 && source.getElementType().getIntOrFloatBitWidth() == 16 &&
         source.getEncoding() &&
         operand.inDimSize("lane") == 32 && operand.inDimSize("register") >= 2 &&
         llvm::all_of(source.getShape(), [](int64_t d) { return llvm::isPowerOf2_64(uint64_t(d)); });
}

LdmatrixOperand::LdmatrixOperand(OpBuilder &b, Location loc, ValueRange values,
                                 RankedTensorType source, const LinearLayout &operand, bool isA,
                                 Value base)
    : b_(b), loc_(loc), values_(values.begin(), values.end()), source_(layoutOf(source)),
      elem_(values.front().getType()), base_(base) {
  int contiguous = layout::contiguousDimOf(source_);
  SharedTile unswizzled{{int32_t(source.getDimSize(0)), int32_t(source.getDimSize(1))},
                        contiguous < 0 ? (isA ? 1 : 0) : contiguous, 16, {}};
  vector_ = layout::vectorElementsOf(source_.compose(unswizzled.offsetLayout()), 8);
  tile_ = layout::planOperandTile(source_, operand, isA, vector_);
  reads_ = layout::planLdmatrixReads(operand, isA, tile_.contiguousDim);
  loaded_.assign(size_t(registers()), Value());
}

LdmatrixOperand::LdmatrixOperand(OpBuilder &b, Location loc, const SharedTile &tile,
                                 const LinearLayout &operand, bool isA, Value base, Type elem)
    : b_(b), loc_(loc), elem_(elem), base_(base), tile_(tile),
      reads_(layout::planLdmatrixReads(operand, isA, tile.contiguousDim)) {
  loaded_.assign(size_t(registers()), Value());
}

Value LdmatrixOperand::at(Value elementOffset) {
  Type ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  return LLVM::GEPOp::create(b_, loc_, ptr3, b_.getI16Type(), base_, ValueRange{elementOffset});
}

void LdmatrixOperand::store() {
  Owners owners = ownersOf(b_, loc_, source_);
  auto offsets = coordinates(b_, loc_, source_.compose(tile_.offsetLayout()));
  for (int32_t r = 0; r < source_.inDimSize("register"); r += vector_) {
    if (r & owners.duplicateRegisters)
      continue;
    ValueRange group(ArrayRef<Value>(values_).slice(size_t(r), size_t(vector_)));
    SmallVector<Value> words = vector_ == 1 ? SmallVector<Value>(group) : packWords(b_, loc_, group);
    predicatedStore(b_, loc_, at(offsets[size_t(r)][0]), words, owners.threadOwns, "shared");
  }
}

Value LdmatrixOperand::reg(int32_t original) {
  const int32_t r = layout::renumberedRegister(reads_, original);
  if (loaded_[size_t(r)])
    return loaded_[size_t(r)];
  if (rowOffsets_.empty())
    for (auto &c : coordinates(b_, loc_, reads_.rows.compose(tile_.offsetLayout())))
      rowOffsets_.push_back(c[0]);
  const int matrices = reads_.matrices;
  const int32_t perGroup = 2 * matrices, group = r / perGroup;
  Type i32 = b_.getI32Type();
  Type result = matrices == 1 ? i32
                              : Type(LLVM::LLVMStructType::getLiteral(
                                    b_.getContext(), SmallVector<Type>(size_t(matrices), i32)));
  Value words = NVVM::LdMatrixOp::create(
      b_, loc_, result, at(rowOffsets_[size_t(group)]), uint32_t(matrices),
      reads_.trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(b_.getContext(), 8, 8), NVVM::LdStMatrixEltType::B16);
  SmallVector<Value> regs;
  for (int j = 0; j < matrices; ++j)
    regs.push_back(matrices == 1 ? words : LLVM::ExtractValueOp::create(b_, loc_, words, j));
  for (auto [i, v] : llvm::enumerate(unpackWords(b_, loc_, regs, elem_)))
    loaded_[size_t(group * perGroup) + i] = v;
  return loaded_[size_t(r)];
}

namespace {

/// A convert_layout into a 16-bit dot operand: all fragments, in order.
struct ConvertToDotOperandViaLdmatrix : OpConversionPattern<tilegpu::ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    auto operandEnc = dyn_cast_if_present<tilegpu::DotOperandEncodingAttr>(dstT.getEncoding());
    if (!operandEnc || operandEnc.getElementBits() != 16 || !LdmatrixOperand::applies(srcT, layoutOf(dstT)))
      return failure(); // the generic exchange takes it
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    LdmatrixOperand operand(rw, loc, adaptor.getSrc(), srcT, layoutOf(dstT),
                            operandEnc.getOpIdx() == 0, sharedBuffer(rw, loc, op));
    ctaBarrier(rw, loc); // earlier users of the scratch are done
    operand.store();
    ctaBarrier(rw, loc);
    SmallVector<Value> out;
    for (int32_t r = 0; r < operand.registers(); ++r)
      out.push_back(operand.reg(r));
    rw.replaceOpWithMultiple(op, {out});
    return success();
  }
};

} // namespace

void populateDotOperandPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  // Above the generic exchange (1), below in-thread register moves (3).
  patterns.add<ConvertToDotOperandViaLdmatrix>(types, patterns.getContext(), /*benefit=*/2);
}

} // namespace tegula::lowering
