// Folders and canonicalization patterns of the tile dialect (TileOps.cpp),
// each with a negative case where the op must be kept.
// RUN: tegula-opt %s -canonicalize -split-input-file | FileCheck %s

//===----------------------------------------------------------------------===//
// splat
//===----------------------------------------------------------------------===//

// SplatOp::fold: a splat of a constant scalar becomes a dense constant.
// CHECK-LABEL: func.func @splat_of_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<2.500000e+00> : tensor<4x8xf32>
// CHECK-NEXT:    return %[[C]] : tensor<4x8xf32>
func.func @splat_of_constant() -> tensor<4x8xf32> {
  %c = arith.constant 2.5 : f32
  %0 = tile.splat %c : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// The same for an i1 constant (masks).
// CHECK-LABEL: func.func @splat_of_constant_i1()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<true> : tensor<16xi1>
// CHECK-NEXT:    return %[[C]] : tensor<16xi1>
func.func @splat_of_constant_i1() -> tensor<16xi1> {
  %c = arith.constant true
  %0 = tile.splat %c : tensor<16xi1>
  return %0 : tensor<16xi1>
}

// -----

// Negative: a splat of a non-constant scalar is kept.
// CHECK-LABEL: func.func @splat_of_argument(
// CHECK-SAME:    %[[X:[^:]+]]: i32
// CHECK-NEXT:    %[[S:.*]] = tile.splat %[[X]] : tensor<16xi32>
// CHECK-NEXT:    return %[[S]]
func.func @splat_of_argument(%x: i32) -> tensor<16xi32> {
  %0 = tile.splat %x : tensor<16xi32>
  return %0 : tensor<16xi32>
}

// -----

//===----------------------------------------------------------------------===//
// broadcast
//===----------------------------------------------------------------------===//

// BroadcastOp::fold: a broadcast to the source's own shape is the source.
// CHECK-LABEL: func.func @broadcast_identity(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK-NEXT:    return %[[X]] : tensor<4x8xf32>
func.func @broadcast_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tile.broadcast %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// ShapeOpOfSplat<BroadcastOp>: broadcast(splat x) -> splat x at the
// broadcast shape (here a tile of pointers, which has no constant form).
// CHECK-LABEL: func.func @broadcast_of_splat(
// CHECK-SAME:    %[[P:[^:]+]]: !tile.ptr<f32>
// CHECK-NEXT:    %[[S:.*]] = tile.splat %[[P]] : tensor<4x8x!tile.ptr<f32>>
// CHECK-NEXT:    return %[[S]] : tensor<4x8x!tile.ptr<f32>>
func.func @broadcast_of_splat(%p: !tile.ptr<f32>) -> tensor<4x8x!tile.ptr<f32>> {
  %0 = tile.splat %p : tensor<1x8x!tile.ptr<f32>>
  %1 = tile.broadcast %0 : tensor<1x8x!tile.ptr<f32>> -> tensor<4x8x!tile.ptr<f32>>
  return %1 : tensor<4x8x!tile.ptr<f32>>
}

// -----

// BroadcastOp::fold: a broadcast of a splat constant is a larger constant.
// CHECK-LABEL: func.func @broadcast_of_splat_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<7> : tensor<4x8xi32>
// CHECK-NEXT:    return %[[C]] : tensor<4x8xi32>
func.func @broadcast_of_splat_constant() -> tensor<4x8xi32> {
  %c = arith.constant dense<7> : tensor<1x8xi32>
  %0 = tile.broadcast %c : tensor<1x8xi32> -> tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----

// Negative: a real broadcast of a non-constant tile is kept.
// CHECK-LABEL: func.func @broadcast_kept(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<1x8xf32>
// CHECK-NEXT:    %[[B:.*]] = tile.broadcast %[[X]] : tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    return %[[B]]
func.func @broadcast_kept(%x: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %0 = tile.broadcast %x : tensor<1x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Negative: a non-splat constant is not folded (only splats are).
// CHECK-LABEL: func.func @broadcast_of_nonsplat_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<{{\[\[}}1, 2]]> : tensor<1x2xi32>
// CHECK-NEXT:    %[[B:.*]] = tile.broadcast %[[C]] : tensor<1x2xi32> -> tensor<4x2xi32>
// CHECK-NEXT:    return %[[B]]
func.func @broadcast_of_nonsplat_constant() -> tensor<4x2xi32> {
  %c = arith.constant dense<[[1, 2]]> : tensor<1x2xi32>
  %0 = tile.broadcast %c : tensor<1x2xi32> -> tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}

// -----

//===----------------------------------------------------------------------===//
// expand_dims
//===----------------------------------------------------------------------===//

// ShapeOpOfSplat<ExpandDimsOp>: expand_dims(splat x) -> splat x.
// CHECK-LABEL: func.func @expand_dims_of_splat(
// CHECK-SAME:    %[[X:[^:]+]]: f16
// CHECK-NEXT:    %[[S:.*]] = tile.splat %[[X]] : tensor<1x32xf16>
// CHECK-NEXT:    return %[[S]] : tensor<1x32xf16>
func.func @expand_dims_of_splat(%x: f16) -> tensor<1x32xf16> {
  %0 = tile.splat %x : tensor<32xf16>
  %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<32xf16> -> tensor<1x32xf16>
  return %1 : tensor<1x32xf16>
}

// -----

// ExpandDimsOp::fold: expand_dims of a dense splat constant is a constant.
// CHECK-LABEL: func.func @expand_dims_of_splat_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<5> : tensor<32x1xi32>
// CHECK-NEXT:    return %[[C]] : tensor<32x1xi32>
func.func @expand_dims_of_splat_constant() -> tensor<32x1xi32> {
  %c = arith.constant dense<5> : tensor<32xi32>
  %0 = tile.expand_dims %c {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  return %0 : tensor<32x1xi32>
}

// -----

// SplatOp::fold then ExpandDimsOp::fold: expand_dims(splat(constant)) is a
// single constant of the expanded shape.
// CHECK-LABEL: func.func @expand_dims_of_splat_of_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<1.500000e+00> : tensor<1x32xf16>
// CHECK-NEXT:    return %[[C]] : tensor<1x32xf16>
func.func @expand_dims_of_splat_of_constant() -> tensor<1x32xf16> {
  %c = arith.constant 1.5 : f16
  %0 = tile.splat %c : tensor<32xf16>
  %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<32xf16> -> tensor<1x32xf16>
  return %1 : tensor<1x32xf16>
}

// -----

// Negative: a non-splat constant is not folded (only splats are).
// CHECK-LABEL: func.func @expand_dims_of_nonsplat_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<[1, 2]> : tensor<2xi32>
// CHECK-NEXT:    %[[E:.*]] = tile.expand_dims %[[C]] {axis = 0 : i32} : tensor<2xi32> -> tensor<1x2xi32>
// CHECK-NEXT:    return %[[E]]
func.func @expand_dims_of_nonsplat_constant() -> tensor<1x2xi32> {
  %c = arith.constant dense<[1, 2]> : tensor<2xi32>
  %0 = tile.expand_dims %c {axis = 0 : i32} : tensor<2xi32> -> tensor<1x2xi32>
  return %0 : tensor<1x2xi32>
}

// -----

// Negative: expand_dims of a non-splat tile is kept.
// CHECK-LABEL: func.func @expand_dims_kept(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<32xf16>
// CHECK-NEXT:    %[[E:.*]] = tile.expand_dims %[[X]] {axis = 1 : i32} : tensor<32xf16> -> tensor<32x1xf16>
// CHECK-NEXT:    return %[[E]]
func.func @expand_dims_kept(%x: tensor<32xf16>) -> tensor<32x1xf16> {
  %0 = tile.expand_dims %x {axis = 1 : i32} : tensor<32xf16> -> tensor<32x1xf16>
  return %0 : tensor<32x1xf16>
}

// -----

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

// ReshapeOp::fold: a reshape to the same type is the source.
// CHECK-LABEL: func.func @reshape_identity(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK-NEXT:    return %[[X]] : tensor<4x8xf32>
func.func @reshape_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tile.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// ShapeOpOfSplat<ReshapeOp>: reshape(splat x) -> splat x.
// CHECK-LABEL: func.func @reshape_of_splat(
// CHECK-SAME:    %[[X:[^:]+]]: i64
// CHECK-NEXT:    %[[S:.*]] = tile.splat %[[X]] : tensor<4x8xi64>
// CHECK-NEXT:    return %[[S]] : tensor<4x8xi64>
func.func @reshape_of_splat(%x: i64) -> tensor<4x8xi64> {
  %0 = tile.splat %x : tensor<32xi64>
  %1 = tile.reshape %0 : tensor<32xi64> -> tensor<4x8xi64>
  return %1 : tensor<4x8xi64>
}

// -----

// ReshapeOp::fold: a reshape of a splat constant is a constant.
// CHECK-LABEL: func.func @reshape_of_splat_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<-3> : tensor<2x16xi8>
// CHECK-NEXT:    return %[[C]] : tensor<2x16xi8>
func.func @reshape_of_splat_constant() -> tensor<2x16xi8> {
  %c = arith.constant dense<-3> : tensor<32xi8>
  %0 = tile.reshape %c : tensor<32xi8> -> tensor<2x16xi8>
  return %0 : tensor<2x16xi8>
}

// -----

// ReshapeOfReshape: two reshapes compose into one from the original source.
// CHECK-LABEL: func.func @reshape_of_reshape(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<32xf32>
// CHECK-NEXT:    %[[R:.*]] = tile.reshape %[[X]] : tensor<32xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    return %[[R]] : tensor<8x4xf32>
func.func @reshape_of_reshape(%x: tensor<32xf32>) -> tensor<8x4xf32> {
  %0 = tile.reshape %x : tensor<32xf32> -> tensor<4x8xf32>
  %1 = tile.reshape %0 : tensor<4x8xf32> -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// -----

// ReshapeOfReshape then the identity fold: reshaping back is a no-op.
// CHECK-LABEL: func.func @reshape_round_trip(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<32xf32>
// CHECK-NEXT:    return %[[X]] : tensor<32xf32>
func.func @reshape_round_trip(%x: tensor<32xf32>) -> tensor<32xf32> {
  %0 = tile.reshape %x : tensor<32xf32> -> tensor<4x8xf32>
  %1 = tile.reshape %0 : tensor<4x8xf32> -> tensor<32xf32>
  return %1 : tensor<32xf32>
}

// -----

// Negative: a single reshape of a non-constant tile is kept.
// CHECK-LABEL: func.func @reshape_kept(
// CHECK-NEXT:    %[[R:.*]] = tile.reshape %{{.*}} : tensor<32xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    return %[[R]]
func.func @reshape_kept(%x: tensor<32xf32>) -> tensor<4x8xf32> {
  %0 = tile.reshape %x : tensor<32xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// trans
//===----------------------------------------------------------------------===//

// TransOp::fold: the identity order is a no-op.
// CHECK-LABEL: func.func @trans_identity(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK-NEXT:    return %[[X]] : tensor<4x8xf32>
func.func @trans_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tile.trans %x {order = array<i32: 0, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// TransOfTrans: trans(trans(x, p), q) -> trans(x, r) with r[i] = p[q[i]].
// p = [1, 0, 2] and q = [0, 2, 1] do not commute: r = [1, 2, 0] (the other
// composition would be [2, 0, 1]). 2x4x8 -> 4x2x8 -> 4x8x2.
// CHECK-LABEL: func.func @trans_of_trans(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32>
// CHECK-NEXT:    %[[T:.*]] = tile.trans %[[X]] {order = array<i32: 1, 2, 0>} : tensor<2x4x8xf32> -> tensor<4x8x2xf32>
// CHECK-NEXT:    return %[[T]] : tensor<4x8x2xf32>
func.func @trans_of_trans(%x: tensor<2x4x8xf32>) -> tensor<4x8x2xf32> {
  %0 = tile.trans %x {order = array<i32: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %1 = tile.trans %0 {order = array<i32: 0, 2, 1>} : tensor<4x2x8xf32> -> tensor<4x8x2xf32>
  return %1 : tensor<4x8x2xf32>
}

// -----

// Two rotations by one compose into a rotation by two.
// CHECK-LABEL: func.func @trans_of_trans_rotate(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32>
// CHECK-NEXT:    %[[T:.*]] = tile.trans %[[X]] {order = array<i32: 2, 0, 1>} : tensor<2x4x8xf32> -> tensor<8x2x4xf32>
// CHECK-NEXT:    return %[[T]] : tensor<8x2x4xf32>
func.func @trans_of_trans_rotate(%x: tensor<2x4x8xf32>) -> tensor<8x2x4xf32> {
  %0 = tile.trans %x {order = array<i32: 1, 2, 0>} : tensor<2x4x8xf32> -> tensor<4x8x2xf32>
  %1 = tile.trans %0 {order = array<i32: 1, 2, 0>} : tensor<4x8x2xf32> -> tensor<8x2x4xf32>
  return %1 : tensor<8x2x4xf32>
}

// -----

// TransOfCheapTile: a mask built from broadcast rows and columns of ranges
// and splats is built transposed - the ranges swap axes - instead of
// transposed (which crosses shared memory on the GPU).
// CHECK-LABEL: func.func @trans_of_mask(
// CHECK-SAME:    %[[M:[^:]+]]: i32, %[[N:[^:]+]]: i32
// CHECK-NOT:     tile.trans
// CHECK-DAG:     %[[R:.*]] = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK-DAG:     %[[C:.*]] = tile.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
// CHECK-DAG:     %[[RC:.*]] = tile.expand_dims %[[R]] {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
// CHECK-DAG:     %[[CR:.*]] = tile.expand_dims %[[C]] {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
// CHECK-DAG:     tile.broadcast %[[RC]] : tensor<1x64xi32> -> tensor<32x64xi32>
// CHECK-DAG:     tile.broadcast %[[CR]] : tensor<32x1xi32> -> tensor<32x64xi32>
// CHECK:         %[[AND:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<32x64xi1>
// CHECK-NEXT:    return %[[AND]] : tensor<32x64xi1>
func.func @trans_of_mask(%m: i32, %n: i32) -> tensor<32x64xi1> {
  %r = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %c = tile.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %r2 = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %c2 = tile.expand_dims %c {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %rb = tile.broadcast %r2 : tensor<64x1xi32> -> tensor<64x32xi32>
  %cb = tile.broadcast %c2 : tensor<1x32xi32> -> tensor<64x32xi32>
  %ms = tile.splat %m : tensor<64x32xi32>
  %ns = tile.splat %n : tensor<64x32xi32>
  %lr = arith.cmpi slt, %rb, %ms : tensor<64x32xi32>
  %lc = arith.cmpi slt, %cb, %ns : tensor<64x32xi32>
  %mask = arith.andi %lr, %lc : tensor<64x32xi1>
  %t = tile.trans %mask {order = array<i32: 1, 0>} : tensor<64x32xi1> -> tensor<32x64xi1>
  return %t : tensor<32x64xi1>
}

// -----

// A transpose of loaded data is kept: only broadcasts, splats and
// constants are rebuilt.
// CHECK-LABEL: func.func @trans_of_data(
// CHECK:         tile.trans
func.func @trans_of_data(%p: tensor<64x32x!tile.ptr<f32>>) -> tensor<32x64xf32> {
  %x = tile.load %p : tensor<64x32x!tile.ptr<f32>>
  %one = arith.constant dense<1.0> : tensor<64x32xf32>
  %y = arith.addf %x, %one : tensor<64x32xf32>
  %t = tile.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf32> -> tensor<32x64xf32>
  return %t : tensor<32x64xf32>
}

// -----

// A 2-D transpose applied twice composes to the identity, which then folds.
// CHECK-LABEL: func.func @trans_of_trans_identity(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK-NEXT:    return %[[X]] : tensor<4x8xf32>
func.func @trans_of_trans_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tile.trans %x {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %1 = tile.trans %0 {order = array<i32: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// TransOp::fold: a transpose of a splat constant is a constant.
// CHECK-LABEL: func.func @trans_of_splat_constant()
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<1.000000e+00> : tensor<8x4xbf16>
// CHECK-NEXT:    return %[[C]] : tensor<8x4xbf16>
func.func @trans_of_splat_constant() -> tensor<8x4xbf16> {
  %c = arith.constant dense<1.0> : tensor<4x8xbf16>
  %0 = tile.trans %c {order = array<i32: 1, 0>} : tensor<4x8xbf16> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

// Negative: a transpose of a square tile keeps its (non-identity) order even
// though the type does not change.
// CHECK-LABEL: func.func @trans_square_kept(
// CHECK-NEXT:    %[[T:.*]] = tile.trans %{{.*}} {order = array<i32: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    return %[[T]]
func.func @trans_square_kept(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tile.trans %x {order = array<i32: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// addptr
//===----------------------------------------------------------------------===//

// AddPtrOp::fold: a zero scalar offset leaves the pointer unchanged.
// CHECK-LABEL: func.func @addptr_zero_scalar(
// CHECK-SAME:    %[[P:[^:]+]]: !tile.ptr<f32>
// CHECK-NEXT:    return %[[P]] : !tile.ptr<f32>
func.func @addptr_zero_scalar(%p: !tile.ptr<f32>) -> !tile.ptr<f32> {
  %c = arith.constant 0 : i32
  %0 = tile.addptr %p, %c : !tile.ptr<f32>, i32
  return %0 : !tile.ptr<f32>
}

// -----

// AddPtrOp::fold: so does a zero tile of offsets.
// CHECK-LABEL: func.func @addptr_zero_tile(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return %[[P]] : tensor<64x!tile.ptr<f32>>
func.func @addptr_zero_tile(%p: tensor<64x!tile.ptr<f32>>) -> tensor<64x!tile.ptr<f32>> {
  %c = arith.constant dense<0> : tensor<64xi64>
  %0 = tile.addptr %p, %c : tensor<64x!tile.ptr<f32>>, tensor<64xi64>
  return %0 : tensor<64x!tile.ptr<f32>>
}

// -----

// ... and a splat of a zero scalar (the splat folds to a constant first).
// CHECK-LABEL: func.func @addptr_zero_splat(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return %[[P]] : tensor<64x!tile.ptr<f32>>
func.func @addptr_zero_splat(%p: tensor<64x!tile.ptr<f32>>) -> tensor<64x!tile.ptr<f32>> {
  %c = arith.constant 0 : i32
  %s = tile.splat %c : tensor<64xi32>
  %0 = tile.addptr %p, %s : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  return %0 : tensor<64x!tile.ptr<f32>>
}

// -----

// Negative: a non-zero constant offset is kept.
// CHECK-LABEL: func.func @addptr_nonzero(
// CHECK-SAME:    %[[P:[^:]+]]: !tile.ptr<f32>
// CHECK-NEXT:    %[[C:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[A:.*]] = tile.addptr %[[P]], %[[C]] : !tile.ptr<f32>, i32
// CHECK-NEXT:    return %[[A]]
func.func @addptr_nonzero(%p: !tile.ptr<f32>) -> !tile.ptr<f32> {
  %c = arith.constant 1 : i32
  %0 = tile.addptr %p, %c : !tile.ptr<f32>, i32
  return %0 : !tile.ptr<f32>
}

// -----

//===----------------------------------------------------------------------===//
// load
//===----------------------------------------------------------------------===//

// LoadWithTrueMask: an all-true mask is dropped, and `other` with it.
// CHECK-LABEL: func.func @load_true_mask(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    %[[L:.*]] = tile.load %[[P]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return %[[L]] : tensor<64xf32>
func.func @load_true_mask(%p: tensor<64x!tile.ptr<f32>>, %o: tensor<64xf32>) -> tensor<64xf32> {
  %m = arith.constant dense<true> : tensor<64xi1>
  %0 = tile.load %p, %m, %o : tensor<64x!tile.ptr<f32>>
  return %0 : tensor<64xf32>
}

// -----

// LoadWithTrueMask on a mask built by splatting `true`.
// CHECK-LABEL: func.func @load_true_mask_splat(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    %[[L:.*]] = tile.load %[[P]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return %[[L]] : tensor<64xf32>
func.func @load_true_mask_splat(%p: tensor<64x!tile.ptr<f32>>) -> tensor<64xf32> {
  %t = arith.constant true
  %m = tile.splat %t : tensor<64xi1>
  %0 = tile.load %p, %m : tensor<64x!tile.ptr<f32>>
  return %0 : tensor<64xf32>
}

// -----

// LoadWithTrueMask on a scalar load with a `true` mask.
// CHECK-LABEL: func.func @load_true_mask_scalar(
// CHECK-SAME:    %[[P:[^:]+]]: !tile.ptr<i32>
// CHECK-NEXT:    %[[L:.*]] = tile.load %[[P]] : !tile.ptr<i32>
// CHECK-NEXT:    return %[[L]] : i32
func.func @load_true_mask_scalar(%p: !tile.ptr<i32>) -> i32 {
  %t = arith.constant true
  %0 = tile.load %p, %t : !tile.ptr<i32>
  return %0 : i32
}

// -----

// LoadWithFalseMask: with an all-false mask the result is `other`.
// CHECK-LABEL: func.func @load_false_mask_other(
// CHECK-SAME:    %{{[^:]+}}: tensor<64x!tile.ptr<f32>>, %[[O:[^:]+]]: tensor<64xf32>
// CHECK-NEXT:    return %[[O]] : tensor<64xf32>
func.func @load_false_mask_other(%p: tensor<64x!tile.ptr<f32>>, %o: tensor<64xf32>) -> tensor<64xf32> {
  %m = arith.constant dense<false> : tensor<64xi1>
  %0 = tile.load %p, %m, %o : tensor<64x!tile.ptr<f32>>
  return %0 : tensor<64xf32>
}

// -----

// LoadWithFalseMask: an all-false mask without `other` loads nothing; the
// result is a zero constant of the result type.
// CHECK-LABEL: func.func @load_false_mask_no_other(
// CHECK-SAME:    %{{[^:]+}}: tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<64xf32>
// CHECK-NEXT:    return %[[Z]] : tensor<64xf32>
func.func @load_false_mask_no_other(%p: tensor<64x!tile.ptr<f32>>) -> tensor<64xf32> {
  %m = arith.constant dense<false> : tensor<64xi1>
  %0 = tile.load %p, %m : tensor<64x!tile.ptr<f32>>
  return %0 : tensor<64xf32>
}

// -----

// The same on a 2-D bf16 tile whose mask is a splat of `false`.
// CHECK-LABEL: func.func @load_false_mask_splat_bf16(
// CHECK-NEXT:    %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<4x8xbf16>
// CHECK-NEXT:    return %[[Z]] : tensor<4x8xbf16>
func.func @load_false_mask_splat_bf16(%p: tensor<4x8x!tile.ptr<bf16>>) -> tensor<4x8xbf16> {
  %f = arith.constant false
  %m = tile.splat %f : tensor<4x8xi1>
  %0 = tile.load %p, %m : tensor<4x8x!tile.ptr<bf16>>
  return %0 : tensor<4x8xbf16>
}

// -----

// ... on a tile of i1 (zero is `false`) ...
// CHECK-LABEL: func.func @load_false_mask_i1(
// CHECK-NEXT:    %[[Z:.*]] = arith.constant dense<false> : tensor<16xi1>
// CHECK-NEXT:    return %[[Z]] : tensor<16xi1>
func.func @load_false_mask_i1(%p: tensor<16x!tile.ptr<i1>>) -> tensor<16xi1> {
  %m = arith.constant dense<false> : tensor<16xi1>
  %0 = tile.load %p, %m : tensor<16x!tile.ptr<i1>>
  return %0 : tensor<16xi1>
}

// -----

// ... and on scalar integer and float loads with a `false` mask.
// CHECK-LABEL: func.func @load_false_mask_scalar(
// CHECK-DAG:     %[[ZI:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ZF:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NOT:     tile.load
// CHECK:         return %[[ZI]], %[[ZF]] : i32, f64
func.func @load_false_mask_scalar(%pi: !tile.ptr<i32>, %pf: !tile.ptr<f64>) -> (i32, f64) {
  %m = arith.constant false
  %0 = tile.load %pi, %m : !tile.ptr<i32>
  %1 = tile.load %pf, %m : !tile.ptr<f64>
  return %0, %1 : i32, f64
}

// -----

// Negative: a non-constant mask (and its `other`) is kept.
// CHECK-LABEL: func.func @load_mask_kept(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x!tile.ptr<f32>>, %[[M:[^:]+]]: tensor<64xi1>, %[[O:[^:]+]]: tensor<64xf32>
// CHECK-NEXT:    %[[L:.*]] = tile.load %[[P]], %[[M]], %[[O]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return %[[L]]
func.func @load_mask_kept(%p: tensor<64x!tile.ptr<f32>>, %m: tensor<64xi1>, %o: tensor<64xf32>) -> tensor<64xf32> {
  %0 = tile.load %p, %m, %o : tensor<64x!tile.ptr<f32>>
  return %0 : tensor<64xf32>
}

// -----

// Negative: a constant mask that is neither all-true nor all-false is kept.
// CHECK-LABEL: func.func @load_mixed_mask_kept(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<4x!tile.ptr<f32>>
// CHECK-NEXT:    %[[M:.*]] = arith.constant dense<[true, false, true, true]> : tensor<4xi1>
// CHECK-NEXT:    %[[L:.*]] = tile.load %[[P]], %[[M]] : tensor<4x!tile.ptr<f32>>
// CHECK-NEXT:    return %[[L]]
func.func @load_mixed_mask_kept(%p: tensor<4x!tile.ptr<f32>>) -> tensor<4xf32> {
  %m = arith.constant dense<[true, false, true, true]> : tensor<4xi1>
  %0 = tile.load %p, %m : tensor<4x!tile.ptr<f32>>
  return %0 : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// store
//===----------------------------------------------------------------------===//

// StoreWithConstantMask: an all-true mask is dropped.
// CHECK-LABEL: func.func @store_true_mask(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x!tile.ptr<f32>>, %[[V:[^:]+]]: tensor<64xf32>
// CHECK-NEXT:    tile.store %[[P]], %[[V]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return
func.func @store_true_mask(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64xf32>) {
  %m = arith.constant dense<true> : tensor<64xi1>
  tile.store %p, %v, %m : tensor<64x!tile.ptr<f32>>
  return
}

// -----

// StoreWithConstantMask: a store with an all-false mask writes nothing and
// is erased.
// CHECK-LABEL: func.func @store_false_mask(
// CHECK-NEXT:    return
func.func @store_false_mask(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64xf32>) {
  %m = arith.constant dense<false> : tensor<64xi1>
  tile.store %p, %v, %m : tensor<64x!tile.ptr<f32>>
  return
}

// -----

// The same for a scalar store with a `false` mask.
// CHECK-LABEL: func.func @store_false_mask_scalar(
// CHECK-NEXT:    return
func.func @store_false_mask_scalar(%p: !tile.ptr<f32>, %v: f32) {
  %m = arith.constant false
  tile.store %p, %v, %m : !tile.ptr<f32>
  return
}

// -----

// Negative: a non-constant mask is kept.
// CHECK-LABEL: func.func @store_mask_kept(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x!tile.ptr<f32>>, %[[V:[^:]+]]: tensor<64xf32>, %[[M:[^:]+]]: tensor<64xi1>
// CHECK-NEXT:    tile.store %[[P]], %[[V]], %[[M]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return
func.func @store_mask_kept(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64xf32>, %m: tensor<64xi1>) {
  tile.store %p, %v, %m : tensor<64x!tile.ptr<f32>>
  return
}

// -----

// Negative: a mixed constant mask is kept.
// CHECK-LABEL: func.func @store_mixed_mask_kept(
// CHECK-SAME:    %[[P:[^:]+]]: tensor<2x!tile.ptr<f32>>, %[[V:[^:]+]]: tensor<2xf32>
// CHECK-NEXT:    %[[M:.*]] = arith.constant dense<[false, true]> : tensor<2xi1>
// CHECK-NEXT:    tile.store %[[P]], %[[V]], %[[M]] : tensor<2x!tile.ptr<f32>>
// CHECK-NEXT:    return
func.func @store_mixed_mask_kept(%p: tensor<2x!tile.ptr<f32>>, %v: tensor<2xf32>) {
  %m = arith.constant dense<[false, true]> : tensor<2xi1>
  tile.store %p, %v, %m : tensor<2x!tile.ptr<f32>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Side effects seen by the canonicalizer's dead-code removal
//===----------------------------------------------------------------------===//

// An unused load only reads memory, so it is dead; an unused atomic and a
// print write memory and must stay.
// CHECK-LABEL: func.func @dead_ops(
// CHECK-NOT:     tile.load
// CHECK:         tile.atomic_rmw add
// CHECK-NEXT:    tile.print "p"
// CHECK-NEXT:    return
func.func @dead_ops(%p: tensor<64x!tile.ptr<i32>>, %v: tensor<64xi32>) {
  %0 = tile.load %p : tensor<64x!tile.ptr<i32>>
  %1 = tile.atomic_rmw add, %p, %v : tensor<64x!tile.ptr<i32>>
  tile.print "p"
  return
}
