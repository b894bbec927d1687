//===- TileDialect.h - the tile dialect -------------------------*- C++ -*-===//
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/tile/TileDialect.h.inc"
#include "dialects/tile/TileEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/tile/TileTypes.h.inc"

namespace tegula::tile {

/// The side-effect resource for global memory.
struct GlobalMemory : public mlir::SideEffects::Resource::Base<GlobalMemory> {
  llvm::StringRef getName() final { return "<GlobalMemory>"; }
};

/// `!tile.ptr<T>` -> `T`; `tensor<S x !tile.ptr<T>>` -> `tensor<S x T>`.
mlir::Type getPointeeLikeType(mlir::Type ptrLike);
/// A scalar -> `i1`; `tensor<S x T>` -> `tensor<S x i1>`.
mlir::Type getI1LikeType(mlir::Type like);
/// True for rank >= 1 static shapes whose extents are all powers of two.
bool hasTileShape(mlir::Type tensorType);
/// True for the element types memory can hold: f16/bf16/f32/f64, i1..i64.
bool isMemoryElementType(mlir::Type t);
/// Element type of a tile, or the type itself for a scalar.
mlir::Type getElementTypeOrSelf(mlir::Type t);

} // namespace tegula::tile

#define GET_OP_CLASSES
#include "dialects/tile/TileOps.h.inc"
