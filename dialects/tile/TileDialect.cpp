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
  if (isa<FloatType, IntegerType>(pointee))
    return success();
  return emitError() << "!tile.ptr must point at a float or integer type, got "
                     << pointee;
}

namespace tegula::tile {

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
