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
  return emitError() << "!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless "
                        "i1/i8/i16/i32/i64, got "
                     << pointee;
}

LogicalResult TensorDescType::verify(function_ref<InFlightDiagnostic()> emitError,
                                     RankedTensorType block) {
  // TMA's limits, so that a descriptor valid anywhere is valid on sm_90a.
  if (!hasTileShape(block) || block.getRank() > 5)
    return emitError() << "a tensor descriptor's block must have 1 to 5 power-of-two "
                          "dimensions, got "
                       << block;
  Type elem = block.getElementType();
  if (!isMemoryElementType(elem) || elem.isInteger(1))
    return emitError() << "a tensor descriptor's block holds f16, bf16, f32, f64 or "
                          "i8/i16/i32/i64 elements, got "
                       << elem;
  for (int64_t d : block.getShape())
    if (d > 256)
      return emitError() << "a tensor descriptor's block extents are at most 256 (TMA's box "
                            "limit), got "
                         << block;
  int64_t innerBytes = block.getShape().back() * elem.getIntOrFloatBitWidth() / 8;
  if (innerBytes % 16 != 0)
    return emitError() << "a tensor descriptor's innermost block extent must span a multiple "
                          "of 16 bytes (TMA moves 16-byte units), got "
                       << innerBytes << " bytes in " << block;
  return success();
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
  if (t.isF16() || t.isBF16() || t.isF32() || t.isF64() || isa<Float8E4M3FNType, Float8E5M2Type>(t))
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
