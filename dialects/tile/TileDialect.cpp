//===- TileDialect.cpp - tile dialect registration and types --------------===//
#include "dialects/tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tegula::tile;

#include "dialects/tile/TileDialect.cpp.inc"
#include "dialects/tile/TileEnums.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/tile/TileTypes.cpp.inc"

void TileDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/tile/TileTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/tile/TileOps.cpp.inc"
      >();
}

Operation *TileDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

LogicalResult PtrType::verify(function_ref<InFlightDiagnostic()> emitError,
                              Type pointee) {
  if (isMemoryElementType(pointee))
    return success();
  return emitError() << "!tile.ptr must point at f16, bf16, f32, f64 or a signless "
                        "i1/i8/i16/i32/i64, got "
                     << pointee;
}

namespace tegula::tile {

bool hasTileShape(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  // Scalars are plain types, never rank-0 tensors.
  if (!tensor || !tensor.hasStaticShape() || tensor.getRank() == 0)
    return false;
  return llvm::all_of(tensor.getShape(),
                      [](int64_t d) { return d > 0 && llvm::isPowerOf2_64(uint64_t(d)); });
}

bool isMemoryElementType(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32() || t.isF64())
    return true;
  auto i = dyn_cast<IntegerType>(t);
  return i && i.isSignless() && llvm::is_contained({1u, 8u, 16u, 32u, 64u}, i.getWidth());
}

Type getElementTypeOrSelf(Type t) {
  if (auto tensor = dyn_cast<RankedTensorType>(t))
    return tensor.getElementType();
  return t;
}

Type getPointeeLikeType(Type ptrLike) {
  if (auto tensor = dyn_cast<RankedTensorType>(ptrLike)) {
    if (auto ptr = dyn_cast<PtrType>(tensor.getElementType()))
      return tensor.clone(ptr.getPointeeType());
    return ptrLike; // not a pointer: the operand's constraint reports it

  }
  if (auto ptr = dyn_cast<PtrType>(ptrLike))
    return ptr.getPointeeType();
  return ptrLike;
}

Type getI1LikeType(Type like) {
  auto i1 = IntegerType::get(like.getContext(), 1);
  if (auto tensor = dyn_cast<RankedTensorType>(like))
    return tensor.clone(i1);
  return i1;
}

} // namespace tegula::tile
