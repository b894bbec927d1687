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
namespace {

constexpr int kChunkBytes = 16;

/// The dimension that register bit 0 of `ll` steps by one element (the
/// source's contiguous dimension), or -1.
int contiguousDimOf(const LinearLayout &ll) {
  if (ll.inDimSize("register") < 2)
    return -1;
  std::vector<int32_t> b = ll.basis("register", 0);
  for (size_t d = 0; d < b.size(); ++d)
    if (b[d] == 1 && std::count(b.begin(), b.end(), 0) == std::ptrdiff_t(b.size() - 1))
      return int(d);
  return -1;
}

/// Elements per vector store of a layout already composed with the tile's
/// offsets: register bits stepping the offset by 1, 2, 4, ..., no other
/// basis breaking the alignment, at most `maxElements`.
int32_t vectorElements(const LinearLayout &offsets, int32_t maxElements) {
  int32_t v = 1;
  while (v < maxElements && 2 * v <= offsets.inDimSize("register") &&
         offsets.basis("register", std::countr_zero(uint32_t(v)))[0] == v)
    v *= 2;
  for (const LinearLayout::Dim &d : offsets.inDims())
    for (int bit = d.name == "register" ? std::countr_zero(uint32_t(v)) : 0; bit < d.log2Size; ++bit)
      while (offsets.basis(d.name, bit)[0] % v)
        v /= 2;
  return v;
}

/// The lanes' ldmatrix row addresses for every group of 2 * `matrices`
/// operand registers: register bits above the group (the operand layout's),
/// the derived lane addresses, the operand layout's warp bits.
LinearLayout ldmatrixRows(const LinearLayout &operand, int matrices, bool trans) {
  LinearLayout rows = layout::ldmatrixAddressLayout(operand, matrices, trans);
  std::vector<std::vector<int32_t>> regs, lanes, warps;
  const int regBits = std::countr_zero(uint32_t(operand.inDimSize("register")));
  for (int bit = std::countr_zero(uint32_t(2 * matrices)); bit < regBits; ++bit)
    regs.push_back(operand.basis("register", bit));
  for (int bit = 0; bit < 5; ++bit)
    lanes.push_back(rows.basis("lane", bit));
  for (int bit = 0; bit < std::countr_zero(uint32_t(operand.inDimSize("warp"))); ++bit)
    warps.push_back(operand.basis("warp", bit));
  std::vector<std::pair<std::string, int32_t>> outs;
  for (const LinearLayout::Dim &d : operand.outDims())
    outs.push_back({d.name, 1 << d.log2Size});
  return LinearLayout::fromBases({{"register", regs}, {"lane", lanes}, {"warp", warps}}, outs);
}

} // namespace

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
      operand_(operand), elem_(values.front().getType()), base_(base) {
  // B's registers run along K first: an x4 over register bits 1 and 2 would
  // span two k-slices. Take the first register bit along N as the second
  // matrix bit instead (two n-tiles of one k-slice), by swapping it with bit
  // 2 in a renumbered copy of the layout.
  const int regBits = std::countr_zero(uint32_t(operand.inDimSize("register")));
  for (int bit = 2; !isA && bit < regBits && swapBit_ == 2; ++bit)
    if (operand.basis("register", bit)[1] != 0)
      swapBit_ = bit;
  if (swapBit_ != 2) {
    std::vector<std::vector<int32_t>> regs, lanes, warps;
    for (int bit = 0; bit < regBits; ++bit)
      regs.push_back(operand.basis("register", bit == 2 ? swapBit_ : bit == swapBit_ ? 2 : bit));
    for (int bit = 0; bit < 5; ++bit)
      lanes.push_back(operand.basis("lane", bit));
    for (int bit = 0; bit < std::countr_zero(uint32_t(operand.inDimSize("warp"))); ++bit)
      warps.push_back(operand.basis("warp", bit));
    std::vector<std::pair<std::string, int32_t>> outs;
    for (const LinearLayout::Dim &d : operand.outDims())
      outs.push_back({d.name, 1 << d.log2Size});
    operand_ = LinearLayout::fromBases({{"register", regs}, {"lane", lanes}, {"warp", warps}}, outs);
  }
  // Rows along the source's contiguous dimension (wide stores); K when the
  // source has none (then ldmatrix needs no .trans).
  int contiguous = contiguousDimOf(source_);
  if (contiguous < 0)
    contiguous = isA ? 1 : 0;
  trans_ = isA ? contiguous == 0 : contiguous == 1;
  matrices_ = int(std::min<int32_t>(4, operand_.inDimSize("register") / 2));
  rows_ = ldmatrixRows(operand_, matrices_, trans_);
  tile_ = SharedTile{{int32_t(source.getDimSize(0)), int32_t(source.getDimSize(1))}, contiguous, 16, {}};
  vector_ = vectorElements(source_.compose(tile_.offsetLayout()), kChunkBytes / 2);
  tile_ = layout::deriveSwizzle(
      tile_, {{"ldmatrix", rows_, kChunkBytes}, layout::vectorAccess("store", source_, vector_, 16)});
  loaded_.assign(size_t(operand_.inDimSize("register")), Value());
}

Value LdmatrixOperand::at(Value elementOffset) {
  Type ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  return LLVM::GEPOp::create(b_, loc_, ptr3, b_.getI16Type(), base_, ValueRange{elementOffset});
}

void LdmatrixOperand::store() {
  Type i32 = b_.getI32Type();
  auto pair = VectorType::get({2}, elem_);
  Owners owners = ownersOf(b_, loc_, source_);
  auto offsets = coordinates(b_, loc_, source_.compose(tile_.offsetLayout()));
  for (int32_t r = 0; r < source_.inDimSize("register"); r += vector_) {
    if (r & owners.duplicateRegisters)
      continue;
    SmallVector<Value> words;
    if (vector_ == 1)
      words.push_back(values_[size_t(r)]);
    for (int32_t i = 0; vector_ > 1 && i < vector_; i += 2) { // two elements a 32-bit word
      Value v = LLVM::PoisonOp::create(b_, loc_, pair);
      v = LLVM::InsertElementOp::create(b_, loc_, v, values_[size_t(r + i)], i32Const(b_, loc_, 0));
      v = LLVM::InsertElementOp::create(b_, loc_, v, values_[size_t(r + i + 1)], i32Const(b_, loc_, 1));
      words.push_back(LLVM::BitcastOp::create(b_, loc_, i32, v));
    }
    predicatedStore(b_, loc_, at(offsets[size_t(r)][0]), words, owners.threadOwns, "shared");
  }
}

Value LdmatrixOperand::reg(int32_t original) {
  // Register `original` of the operand layout is register r of operand_.
  const int32_t hi = original >> swapBit_ & 1, lo = original >> 2 & 1;
  const int32_t r = hi == lo ? original : original ^ (1 << swapBit_ | 1 << 2);
  if (loaded_[size_t(r)])
    return loaded_[size_t(r)];
  if (rowOffsets_.empty())
    for (auto &c : coordinates(b_, loc_, rows_.compose(tile_.offsetLayout())))
      rowOffsets_.push_back(c[0]);
  const int32_t perGroup = 2 * matrices_, group = r / perGroup;
  Type i32 = b_.getI32Type();
  Type result = matrices_ == 1 ? i32
                               : Type(LLVM::LLVMStructType::getLiteral(
                                     b_.getContext(), SmallVector<Type>(size_t(matrices_), i32)));
  Value words = NVVM::LdMatrixOp::create(
      b_, loc_, result, at(rowOffsets_[size_t(group)]), uint32_t(matrices_),
      trans_ ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(b_.getContext(), 8, 8), NVVM::LdStMatrixEltType::B16);
  auto pair = VectorType::get({2}, elem_);
  for (int j = 0; j < matrices_; ++j) {
    Value word = matrices_ == 1 ? words : LLVM::ExtractValueOp::create(b_, loc_, words, j);
    Value halves = LLVM::BitcastOp::create(b_, loc_, pair, word);
    for (int h = 0; h < 2; ++h)
      loaded_[size_t(group * perGroup + 2 * j + h)] =
          LLVM::ExtractElementOp::create(b_, loc_, halves, i32Const(b_, loc_, h));
  }
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
    NVVM::Barrier0Op::create(rw, loc); // earlier users of the scratch are done
    operand.store();
    NVVM::Barrier0Op::create(rw, loc);
    SmallVector<Value> out;
    for (int32_t r = 0; r < operand.registers(); ++r)
      out.push_back(operand.reg(r));
    NVVM::Barrier0Op::create(rw, loc); // the scratch is free again
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
