//===- SharedOperand.cpp - an mma operand read from shared memory ---------===//
//
// All addressing is linear-layout algebra: the source layout, the ldmatrix
// row addresses derived from the operand layout (or, for element reads, the
// operand layout itself) are composed with the swizzled tile's offset
// layout, so each access's shared-memory offset is one XOR of constants and
// the thread's lane/warp bits.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/SharedOperand.h"

#include "compiler/layout/SharedSwizzle.h"
#include "tegula/error.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using tegula::layout::LinearLayout;
using tegula::layout::SharedTile;

namespace tegula::lowering {

SharedOperand::Plan SharedOperand::plan(const LinearLayout &source, RankedTensorType sourceType,
                                        const LinearLayout &operand, bool isA) {
  const int bits = int(sourceType.getElementType().getIntOrFloatBitWidth());
  const int contiguous = layout::contiguousDimOf(source);
  SharedTile unswizzled{{int32_t(sourceType.getDimSize(0)), int32_t(sourceType.getDimSize(1))},
                        contiguous < 0 ? (isA ? 1 : 0) : contiguous, bits, {}};
  Plan p;
  p.vector = layout::vectorElementsOf(source.compose(unswizzled.offsetLayout()), 128 / bits);
  p.tile = layout::planOperandTile(source, operand, isA, p.vector, bits);
  if (layout::ldmatrixReads(isA, p.tile.contiguousDim, bits))
    p.reads = layout::planLdmatrixReads(operand, isA, p.tile.contiguousDim, bits);
  return p;
}

bool SharedOperand::applies(RankedTensorType source, const LinearLayout &operand, bool isA) {
  const unsigned bits = source.getElementType().getIntOrFloatBitWidth();
  if (!(source.getRank() == 2 && (bits == 8 || bits == 16 || bits == 32) && source.getEncoding() &&
        operand.inDimSize("lane") == 32 && operand.inDimSize("register") >= 2 &&
        llvm::all_of(source.getShape(), [](int64_t d) { return llvm::isPowerOf2_64(uint64_t(d)); })))
    return false;
  // The planners report layouts they cannot serve by throwing: here, before
  // any IR is written, that means "not this way" (the generic exchange
  // takes the conversion, or the dot is not staged).
  try {
    plan(layoutOf(source), source, operand, isA);
    return true;
  } catch (const Error &) {
    return false;
  }
}

SharedOperand::SharedOperand(OpBuilder &b, Location loc, ValueRange values, RankedTensorType source,
                             const LinearLayout &operand, bool isA, Value base)
    : b_(b), loc_(loc), values_(values.begin(), values.end()), source_(layoutOf(source)),
      operand_(operand), elem_(values.front().getType()),
      bits_(int(source.getElementType().getIntOrFloatBitWidth())), base_(base) {
  Plan p = plan(source_, source, operand, isA);
  vector_ = p.vector;
  tile_ = std::move(p.tile);
  reads_ = std::move(p.reads);
  loaded_.assign(size_t(registers()), Value());
}

SharedOperand::SharedOperand(OpBuilder &b, Location loc, const SharedTile &tile,
                             const LinearLayout &operand, bool isA, Value base, Type elem)
    : b_(b), loc_(loc), operand_(operand), elem_(elem), bits_(tile.elementBits), base_(base),
      tile_(tile) {
  if (layout::ldmatrixReads(isA, tile.contiguousDim, bits_))
    reads_ = layout::planLdmatrixReads(operand, isA, tile.contiguousDim, bits_);
  loaded_.assign(size_t(registers()), Value());
}

Value SharedOperand::at(Value elementOffset) {
  Type ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  return LLVM::GEPOp::create(b_, loc_, ptr3, b_.getIntegerType(unsigned(bits_)), base_,
                             ValueRange{elementOffset});
}

void SharedOperand::store() {
  Owners owners = ownersOf(b_, loc_, source_);
  auto offsets = coordinates(b_, loc_, source_.compose(tile_.offsetLayout()));
  for (int32_t r = 0; r < source_.inDimSize("register"); r += vector_) {
    if (r & owners.duplicateRegisters)
      continue;
    ValueRange group(ArrayRef<Value>(values_).slice(size_t(r), size_t(vector_)));
    SmallVector<Value> words =
        vector_ * bits_ >= 32 && bits_ < 32 ? packWords(b_, loc_, group) : SmallVector<Value>(group);
    predicatedStore(b_, loc_, at(offsets[size_t(r)][0]), words, owners.threadOwns, "shared");
  }
}

void SharedOperand::readLdmatrixGroup(int32_t group) {
  const layout::LdmatrixReads &reads = *reads_;
  if (offsets_.empty())
    for (auto &c : coordinates(b_, loc_, reads.rows.compose(tile_.offsetLayout())))
      offsets_.push_back(c[0]);
  const int matrices = reads.matrices;
  Type i32 = b_.getI32Type();
  Type result = matrices == 1 ? i32
                              : Type(LLVM::LLVMStructType::getLiteral(
                                    b_.getContext(), SmallVector<Type>(size_t(matrices), i32)));
  Value words = NVVM::LdMatrixOp::create(
      b_, loc_, result, at(offsets_[size_t(group)]), uint32_t(matrices),
      reads.trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(b_.getContext(), 8, 8), NVVM::LdStMatrixEltType::B16);
  for (int j = 0; j < matrices; ++j) {
    Value word = matrices == 1 ? words : LLVM::ExtractValueOp::create(b_, loc_, words, j);
    const int32_t first = layout::firstRegisterOfWord(reads, group * matrices + j);
    for (auto [i, v] : llvm::enumerate(unpackWords(b_, loc_, word, elem_)))
      loaded_[size_t(first) + i] = v;
  }
}

Value SharedOperand::reg(int32_t r) {
  if (loaded_[size_t(r)])
    return loaded_[size_t(r)];
  if (reads_) {
    readLdmatrixGroup(layout::wordOfRegister(*reads_, r) / reads_->matrices);
    return loaded_[size_t(r)];
  }
  // One element: rows along M or N hold no fragment row ldmatrix could take.
  if (offsets_.empty())
    for (auto &c : coordinates(b_, loc_, operand_.compose(tile_.offsetLayout())))
      offsets_.push_back(c[0]);
  Type memory = b_.getIntegerType(unsigned(bits_));
  Value bits = LLVM::LoadOp::create(b_, loc_, memory, at(offsets_[size_t(r)]), bits_ / 8);
  loaded_[size_t(r)] = elem_ == memory ? bits : Value(LLVM::BitcastOp::create(b_, loc_, elem_, bits));
  return loaded_[size_t(r)];
}

} // namespace tegula::lowering
