//===- TileGPUDialect.h - the tilegpu dialect -------------------*- C++ -*-===//
#pragma once

#include "compiler/layout/LinearLayout.h"
#include "dialects/tile/TileDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/tilegpu/TileGPUDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tilegpu/TileGPUAttrs.h.inc"

#include "compiler/layout/SharedSwizzle.h"

#define GET_TYPEDEF_CLASSES
#include "dialects/tilegpu/TileGPUTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/tilegpu/TileGPUOps.h.inc"

namespace tegula::tilegpu {

/// The linear layout of a tile of `shape` with layout `encoding` (blocked,
/// slice, mma or dot_operand). Throws tegula::Error for an unknown encoding
/// or a shape the layout cannot hold (an mma tile smaller than 16 x 8).
layout::LinearLayout toLinearLayout(mlir::Attribute encoding, llvm::ArrayRef<int64_t> shape);

/// The default layout of a tile of `shape` over `numWarps` warps: up to
/// `vectorElements` contiguous elements per thread along the fastest (last)
/// dimension when the tile is large enough (4: 128-bit f32 accesses; 8 for
/// kernels whose memory is 16-bit), lanes along the fastest dimensions
/// first, warps along the slowest.
/// `order`: the dimensions fastest first (empty: the last dimension first,
/// row-major).
BlockedEncodingAttr defaultBlockedEncoding(mlir::MLIRContext *ctx,
                                           llvm::ArrayRef<int64_t> shape, int numWarps,
                                           int vectorElements = 4,
                                           llvm::ArrayRef<int32_t> order = {});

} // namespace tegula::tilegpu
