//===- Combining.cpp - what tile.reduce and tile.scan lower with ----------===//
#include "compiler/transforms/Combining.h"

#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"

#include <bit>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {

std::vector<int> bitsAlong(const LinearLayout &ll, const std::string &inDim, size_t axis) {
  std::vector<int> bits;
  int n = std::countr_zero(uint32_t(ll.inDimSize(inDim)));
  for (int i = 0; i < n; ++i)
    if (ll.basis(inDim, i)[axis] != 0)
      bits.push_back(i);
  return bits;
}

bool separable(const LinearLayout &ll, const std::string &inDim, size_t axis) {
  int n = std::countr_zero(uint32_t(ll.inDimSize(inDim)));
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> b = ll.basis(inDim, i);
    bool along = b[axis] != 0, other = false;
    for (size_t d = 0; d < b.size(); ++d)
      other |= d != axis && b[d] != 0;
    if (along && other)
      return false;
  }
  return true;
}

SmallVector<Value> applyCombiner(OpBuilder &b, Region &combiner, ValueRange acc, ValueRange next) {
  Block &body = combiner.front();
  IRMapping map;
  size_t n = acc.size();
  for (size_t i = 0; i < n; ++i) {
    map.map(body.getArgument(unsigned(i)), acc[i]);
    map.map(body.getArgument(unsigned(n + i)), next[i]);
  }
  for (Operation &inner : body.without_terminator())
    b.clone(inner, map);
  // A returned value may come from outside the body: canonicalization
  // hoists the combiner's constants (a combiner returning a literal).
  SmallVector<Value> out;
  for (Value v : body.getTerminator()->getOperands())
    out.push_back(map.lookupOrDefault(v));
  return out;
}

Value shuffleLane(OpBuilder &b, Location loc, Value v, Value lane, bool butterfly) {
  Type t = v.getType();
  unsigned w = t.getIntOrFloatBitWidth();
  Type i32 = b.getI32Type();
  auto shfl = [&](Value x) {
    return NVVM::ShflOp::create(b, loc, i32, i32Const(b, loc, -1), x, lane, i32Const(b, loc, 0x1f),
                                butterfly ? NVVM::ShflKind::bfly : NVVM::ShflKind::idx, UnitAttr())
        .getResult();
  };
  Type asInt = IntegerType::get(b.getContext(), w);
  Value bits = isa<FloatType>(t) ? LLVM::BitcastOp::create(b, loc, asInt, v).getResult() : v;
  Value result;
  if (w == 64) {
    Value lo = LLVM::TruncOp::create(b, loc, i32, bits);
    Value hi = LLVM::TruncOp::create(
        b, loc, i32,
        LLVM::LShrOp::create(b, loc, bits, LLVM::ConstantOp::create(b, loc, asInt, b.getIntegerAttr(asInt, 32))));
    Value l = LLVM::ZExtOp::create(b, loc, asInt, shfl(lo));
    Value h = LLVM::ShlOp::create(b, loc, LLVM::ZExtOp::create(b, loc, asInt, shfl(hi)),
                                  LLVM::ConstantOp::create(b, loc, asInt, b.getIntegerAttr(asInt, 32)));
    result = LLVM::OrOp::create(b, loc, l, h);
  } else if (w == 32) {
    result = shfl(bits);
  } else {
    result = LLVM::TruncOp::create(b, loc, asInt, shfl(LLVM::ZExtOp::create(b, loc, i32, bits)));
  }
  return isa<FloatType>(t) ? LLVM::BitcastOp::create(b, loc, t, result).getResult() : result;
}

} // namespace tegula::lowering
