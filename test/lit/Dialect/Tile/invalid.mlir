// Verifier errors of the tile dialect: one case per diagnostic.
// RUN: tegula-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// make_range
//===----------------------------------------------------------------------===//

// The range length end - start must be a power of two. (The result type is
// a valid tile here so that the op verifier, not the type constraint, fires.)
func.func @make_range_not_pow2() {
  // expected-error @+1 {{'tile.make_range' op range length 12 must be a power of two}}
  %0 = tile.make_range {start = 0 : i32, end = 12 : i32} : tensor<16xi32>
  return
}

// -----

// A tensor<12xi32> result is not a tile at all: the result constraint
// rejects it before the verifier looks at start/end.
func.func @make_range_not_pow2_result() {
  // expected-error @+1 {{'tile.make_range' op result #0 must be tile of i32 (static power-of-two extents), but got 'tensor<12xi32>'}}
  %0 = tile.make_range {start = 0 : i32, end = 12 : i32} : tensor<12xi32>
  return
}

// -----

// start/end are signed: a reversed range with negative bounds prints them
// as negative numbers.
func.func @make_range_reversed_negative() {
  // expected-error @+1 {{'tile.make_range' op end (-8) must be greater than start (-4)}}
  %0 = tile.make_range {start = -4 : i32, end = -8 : i32} : tensor<4xi32>
  return
}

// -----

// The length is computed in 64 bits: INT32_MIN..INT32_MAX does not wrap.
func.func @make_range_full_i32() {
  // expected-error @+1 {{'tile.make_range' op range length 4294967295 must be a power of two}}
  %0 = tile.make_range {start = -2147483648 : i32, end = 2147483647 : i32} : tensor<8xi32>
  return
}

// -----

// An empty range (end == start) is rejected.
func.func @make_range_empty() {
  // expected-error @+1 {{'tile.make_range' op end (8) must be greater than start (8)}}
  %0 = tile.make_range {start = 8 : i32, end = 8 : i32} : tensor<1xi32>
  return
}

// -----

// A reversed range (end < start) is rejected.
func.func @make_range_reversed() {
  // expected-error @+1 {{'tile.make_range' op end (8) must be greater than start (16)}}
  %0 = tile.make_range {start = 16 : i32, end = 8 : i32} : tensor<8xi32>
  return
}

// -----

// The result length must equal end - start.
func.func @make_range_wrong_length() {
  // expected-error @+1 {{'tile.make_range' op result must be tensor<64xi32>, got 'tensor<32xi32>'}}
  %0 = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<32xi32>
  return
}

// -----

// The result must be 1-D.
func.func @make_range_wrong_rank() {
  // expected-error @+1 {{'tile.make_range' op result must be tensor<64xi32>, got 'tensor<1x64xi32>'}}
  %0 = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<1x64xi32>
  return
}

// -----

// The result element type must be i32 (ODS result constraint).
func.func @make_range_wrong_element() {
  // expected-error @+1 {{'tile.make_range' op result #0 must be tile of i32 (static power-of-two extents), but got 'tensor<64xi64>'}}
  %0 = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi64>
  return
}

// -----

// A dynamic make_range result is not a tile.
func.func @make_range_dynamic() {
  // expected-error @+1 {{'tile.make_range' op result #0 must be tile of i32 (static power-of-two extents), but got 'tensor<?xi32>'}}
  %0 = tile.make_range {start = 0 : i32, end = 4 : i32} : tensor<?xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Tiles: static power-of-two extents (Tile_TensorOf), for every tile op
//===----------------------------------------------------------------------===//

// A dynamic splat result is rejected by the custom parser...
func.func @splat_dynamic_custom(%x: f32) {
  // expected-error @+1 {{custom op 'tile.splat' 'result' must be tile of values or pointers (static power-of-two extents), but got 'tensor<?xf32>'}}
  %0 = tile.splat %x : tensor<?xf32>
  return
}

// -----

// ...and, in generic form, by the op verifier.
func.func @splat_dynamic_generic(%x: f32) {
  // expected-error @+1 {{'tile.splat' op result #0 must be tile of values or pointers (static power-of-two extents), but got 'tensor<?xf32>'}}
  %0 = "tile.splat"(%x) : (f32) -> tensor<?xf32>
  return
}

// -----

// A non-power-of-two extent is not a tile.
func.func @splat_not_pow2(%x: f32) {
  // expected-error @+1 {{custom op 'tile.splat' 'result' must be tile of values or pointers (static power-of-two extents), but got 'tensor<3xf32>'}}
  %0 = tile.splat %x : tensor<3xf32>
  return
}

// -----

// The same for tiles of pointers.
func.func @splat_ptr_not_pow2(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{custom op 'tile.splat' 'result' must be tile of values or pointers (static power-of-two extents), but got 'tensor<5x!tile.ptr<f32>>'}}
  %0 = tile.splat %p : tensor<5x!tile.ptr<f32>>
  return
}

// -----

// A zero extent is not a power of two.
func.func @reshape_zero_extent(%x: tensor<0xf32>) {
  // expected-error @+1 {{'tile.reshape' op operand #0 must be tile of values or pointers (static power-of-two extents), but got 'tensor<0xf32>'}}
  %0 = tile.reshape %x : tensor<0xf32> -> tensor<0xf32>
  return
}

// -----

// reshape from a dynamic tile (the element count is unknown).
func.func @reshape_dynamic_source(%x: tensor<?xf32>) {
  // expected-error @+1 {{'tile.reshape' op operand #0 must be tile of values or pointers (static power-of-two extents), but got 'tensor<?xf32>'}}
  %0 = tile.reshape %x : tensor<?xf32> -> tensor<4xf32>
  return
}

// -----

// broadcast of a non-power-of-two tile.
func.func @broadcast_not_pow2(%x: tensor<3xf32>) {
  // expected-error @+1 {{'tile.broadcast' op operand #0 must be tile of values or pointers (static power-of-two extents), but got 'tensor<3xf32>'}}
  %0 = tile.broadcast %x : tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

// trans to a dynamic result.
func.func @trans_dynamic_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tile.trans' op result #0 must be tile of values or pointers (static power-of-two extents), but got 'tensor<?xf32>'}}
  %0 = tile.trans %x {order = array<i32: 0>} : tensor<4xf32> -> tensor<?xf32>
  return
}

// -----

// A dynamic tile of pointers is not a pointer-like operand.
func.func @load_dynamic_ptr(%p: tensor<?x!tile.ptr<f32>>) {
  // expected-error @+1 {{custom op 'tile.load' 'ptr' must be pointer or tile of pointers, but got 'tensor<?x!tile.ptr<f32>>'}}
  %0 = tile.load %p : tensor<?x!tile.ptr<f32>>
  return
}

// -----

// Nor is a non-power-of-two one.
func.func @store_not_pow2_ptr(%p: tensor<6x!tile.ptr<f32>>, %v: tensor<6xf32>) {
  // expected-error @+1 {{custom op 'tile.store' 'ptr' must be pointer or tile of pointers, but got 'tensor<6x!tile.ptr<f32>>'}}
  tile.store %p, %v : tensor<6x!tile.ptr<f32>>
  return
}

// -----

// dot on a non-power-of-two tile.
func.func @dot_not_pow2(%a: tensor<3x4xf32>, %b: tensor<4x4xf32>, %c: tensor<3x4xf32>) {
  // expected-error @+1 {{'tile.dot' op operand #0 must be tile of values or pointers (static power-of-two extents), but got 'tensor<3x4xf32>'}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<3x4xf32> * tensor<4x4xf32> -> tensor<3x4xf32>
  return
}

// -----

// reduce of a dynamic tile.
func.func @reduce_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'tile.reduce' op operand #0 must be variadic of tile of values or pointers (static power-of-two extents), but got 'tensor<?xf32>'}}
  %r = tile.reduce(%x) {axis = 0 : i32} : (tensor<?xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// assert on a non-power-of-two tile of i1.
func.func @assert_not_pow2(%c: tensor<3xi1>) {
  // expected-error @+1 {{'tile.assert' op operand #0 must be i1 or tile of i1, but got 'tensor<3xi1>'}}
  tile.assert %c, "x" : tensor<3xi1>
  return
}

// -----

// print of a dynamic tile.
func.func @print_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'tile.print' op operand #0 must be variadic of floating-point or signless integer or Pointer to an element in global memory or tile of values or pointers (static power-of-two extents), but got 'tensor<?xf32>'}}
  tile.print "x" %x : tensor<?xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// splat / broadcast / expand_dims / reshape / trans
//===----------------------------------------------------------------------===//

// splat's result element type must be the scalar's type.
func.func @splat_element_mismatch(%x: f32) {
  // expected-error @+1 {{'tile.splat' op failed to verify that result element type matches the scalar}}
  %0 = "tile.splat"(%x) : (f32) -> tensor<4xf16>
  return
}

// -----

// broadcast does not add dimensions.
func.func @broadcast_rank_mismatch(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tile.broadcast' op source rank 1 differs from result rank 2; use expand_dims first}}
  %0 = tile.broadcast %x : tensor<32xf32> -> tensor<16x32xf32>
  return
}

// -----

// Only size-1 dimensions may grow.
func.func @broadcast_incompatible_dim(%x: tensor<4x32xf32>) {
  // expected-error @+1 {{'tile.broadcast' op cannot broadcast shape [4,32] to [16,32]: dimension 0 is neither 1 nor equal}}
  %0 = tile.broadcast %x : tensor<4x32xf32> -> tensor<16x32xf32>
  return
}

// -----

// broadcast keeps the element type.
func.func @broadcast_element_mismatch(%x: tensor<1x32xf32>) {
  // expected-error @+1 {{'tile.broadcast' op requires the same element type for all operands and results}}
  %0 = tile.broadcast %x : tensor<1x32xf32> -> tensor<16x32xf16>
  return
}

// -----

// expand_dims axis must be in [0, rank].
func.func @expand_dims_bad_axis(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tile.expand_dims' op axis 2 out of range for a rank-1 source}}
  %0 = tile.expand_dims %x {axis = 2 : i32} : tensor<32xf32> -> tensor<32x1xf32>
  return
}

// -----

// A negative axis is rejected as well; the axis is a signed i32 and the
// message shows the negative number.
func.func @expand_dims_negative_axis(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tile.expand_dims' op axis -1 out of range for a rank-1 source}}
  %0 = tile.expand_dims %x {axis = -1 : i32} : tensor<32xf32> -> tensor<32x1xf32>
  return
}

// -----

// The size-1 dimension must be inserted at `axis`.
func.func @expand_dims_wrong_shape(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tile.expand_dims' op result shape must be [1,32], got [32,1]}}
  %0 = tile.expand_dims %x {axis = 0 : i32} : tensor<32xf32> -> tensor<32x1xf32>
  return
}

// -----

// reshape keeps the element count.
func.func @reshape_count_mismatch(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tile.reshape' op cannot reshape [32] (32 elements) to [4,4] (16 elements)}}
  %0 = tile.reshape %x : tensor<32xf32> -> tensor<4x4xf32>
  return
}

// -----

// A repeated entry is not a permutation.
func.func @trans_duplicate(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.trans' op order must be a permutation of [0, 2)}}
  %0 = tile.trans %x {order = array<i32: 0, 0>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

// An out-of-range entry is not a permutation.
func.func @trans_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.trans' op order must be a permutation of [0, 2)}}
  %0 = tile.trans %x {order = array<i32: 0, 2>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// The order has one entry per source dimension.
func.func @trans_wrong_length(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.trans' op order has 3 entries but the source has rank 2}}
  %0 = tile.trans %x {order = array<i32: 1, 0, 2>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return
}

// -----

// The result shape is the permuted source shape.
func.func @trans_wrong_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.trans' op result shape must be [8,4], got [4,8]}}
  %0 = tile.trans %x {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// addptr
//===----------------------------------------------------------------------===//

// A scalar pointer cannot take a tile of offsets.
func.func @addptr_scalar_ptr_tile_offset(%p: !tile.ptr<f32>, %o: tensor<4xi32>) {
  // expected-error @+1 {{'tile.addptr' op pointer and offset must both be scalars or both be tiles; splat the scalar first}}
  %0 = tile.addptr %p, %o : !tile.ptr<f32>, tensor<4xi32>
  return
}

// -----

// A tile of pointers cannot take a scalar offset.
func.func @addptr_tile_ptr_scalar_offset(%p: tensor<4x!tile.ptr<f32>>, %o: i32) {
  // expected-error @+1 {{'tile.addptr' op pointer and offset must both be scalars or both be tiles; splat the scalar first}}
  %0 = tile.addptr %p, %o : tensor<4x!tile.ptr<f32>>, i32
  return
}

// -----

// Pointer and offset tiles must have the same shape.
func.func @addptr_shape_mismatch(%p: tensor<4x!tile.ptr<f32>>, %o: tensor<8xi32>) {
  // expected-error @+1 {{'tile.addptr' op pointer shape [4] differs from offset shape [8]}}
  %0 = tile.addptr %p, %o : tensor<4x!tile.ptr<f32>>, tensor<8xi32>
  return
}

// -----

// Offsets are integers.
func.func @addptr_float_offset(%p: !tile.ptr<f32>, %o: f32) {
  // expected-error @+1 {{'tile.addptr' op operand #1 must be i8/i16/i32/i64 offset or tile of offsets, but got 'f32'}}
  %0 = tile.addptr %p, %o : !tile.ptr<f32>, f32
  return
}

// -----

// An i1 is not an offset.
func.func @addptr_i1_offset(%p: !tile.ptr<f32>, %o: i1) {
  // expected-error @+1 {{'tile.addptr' op operand #1 must be i8/i16/i32/i64 offset or tile of offsets, but got 'i1'}}
  %0 = tile.addptr %p, %o : !tile.ptr<f32>, i1
  return
}

// -----

// Nor is a tile of i1.
func.func @addptr_i1_tile_offset(%p: tensor<4x!tile.ptr<f32>>, %o: tensor<4xi1>) {
  // expected-error @+1 {{'tile.addptr' op operand #1 must be i8/i16/i32/i64 offset or tile of offsets, but got 'tensor<4xi1>'}}
  %0 = tile.addptr %p, %o : tensor<4x!tile.ptr<f32>>, tensor<4xi1>
  return
}

// -----

// A dynamic tile of offsets is not a tile.
func.func @addptr_dynamic_offset(%p: tensor<4x!tile.ptr<f32>>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'tile.addptr' op operand #1 must be i8/i16/i32/i64 offset or tile of offsets, but got 'tensor<?xi32>'}}
  %0 = tile.addptr %p, %o : tensor<4x!tile.ptr<f32>>, tensor<?xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// load / store
//===----------------------------------------------------------------------===//

// `other` without a mask is only expressible in generic form (the custom
// parser binds a single optional operand to the mask).
func.func @load_other_without_mask(%p: tensor<4x!tile.ptr<f32>>, %o: tensor<4xf32>) {
  // expected-error @+1 {{'tile.load' op 'other' needs a mask}}
  %0 = "tile.load"(%p, %o) {operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<4x!tile.ptr<f32>>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Loading from a tile that is not of pointers: rejected by the custom parser.
func.func @load_not_a_pointer_custom(%p: tensor<4xf32>) {
  // expected-error @+1 {{custom op 'tile.load' 'ptr' must be pointer or tile of pointers, but got 'tensor<4xf32>'}}
  %0 = tile.load %p : tensor<4xf32>
  return
}

// -----

// The same in generic form: rejected by the operand constraint.
func.func @load_not_a_pointer_generic(%p: tensor<4xf32>) {
  // expected-error @+1 {{'tile.load' op operand #0 must be pointer or tile of pointers, but got 'tensor<4xf32>'}}
  %0 = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// The mask must be shaped like the pointer tile.
func.func @load_mask_shape_mismatch(%p: tensor<4x!tile.ptr<f32>>, %m: tensor<8xi1>) {
  // expected-error @+1 {{'tile.load' op failed to verify that mask is a tile of i1 shaped like ptr}}
  %0 = "tile.load"(%p, %m) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4x!tile.ptr<f32>>, tensor<8xi1>) -> tensor<4xf32>
  return
}

// -----

// A stored value must have the pointee type.
func.func @store_value_mismatch(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf16>) {
  // expected-error @+1 {{'tile.store' op failed to verify that value is the pointee of ptr}}
  "tile.store"(%p, %v) : (tensor<4x!tile.ptr<f32>>, tensor<4xf16>) -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// atomics
//===----------------------------------------------------------------------===//

// Bitwise atomics need integers: and on f32.
func.func @atomic_and_float(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>) {
  // expected-error @+1 {{'tile.atomic_rmw' op and needs an integer element, got 'f32'}}
  %0 = tile.atomic_rmw and, %p, %v : tensor<4x!tile.ptr<f32>>
  return
}

// -----

// or on f16.
func.func @atomic_or_float(%p: !tile.ptr<f16>, %v: f16) {
  // expected-error @+1 {{'tile.atomic_rmw' op or needs an integer element, got 'f16'}}
  %0 = tile.atomic_rmw or, %p, %v : !tile.ptr<f16>
  return
}

// -----

// xor on bf16.
func.func @atomic_xor_float(%p: !tile.ptr<bf16>, %v: bf16) {
  // expected-error @+1 {{'tile.atomic_rmw' op xor needs an integer element, got 'bf16'}}
  %0 = tile.atomic_rmw xor, %p, %v : !tile.ptr<bf16>
  return
}

// -----

// Integer atomics need i32 or i64: add on i1.
func.func @atomic_add_i1(%p: tensor<4x!tile.ptr<i1>>, %v: tensor<4xi1>) {
  // expected-error @+1 {{'tile.atomic_rmw' op atomics need 16-, 32- or 64-bit elements, got 'i1'}}
  %0 = tile.atomic_rmw add, %p, %v : tensor<4x!tile.ptr<i1>>
  return
}

// -----

// max on i1.
func.func @atomic_max_i1(%p: !tile.ptr<i1>, %v: i1) {
  // expected-error @+1 {{'tile.atomic_rmw' op atomics need 16-, 32- or 64-bit elements, got 'i1'}}
  %0 = tile.atomic_rmw max, %p, %v : !tile.ptr<i1>
  return
}

// -----

// min on i1.
func.func @atomic_min_i1(%p: tensor<8x!tile.ptr<i1>>, %v: tensor<8xi1>, %m: tensor<8xi1>) {
  // expected-error @+1 {{'tile.atomic_rmw' op atomics need 16-, 32- or 64-bit elements, got 'i1'}}
  %0 = tile.atomic_rmw min, %p, %v, %m : tensor<8x!tile.ptr<i1>>
  return
}

// -----

// xchg on i8 (atomics need 16-, 32- or 64-bit elements).
func.func @atomic_xchg_i8(%p: !tile.ptr<i8>, %v: i8) {
  // expected-error @+1 {{'tile.atomic_rmw' op atomics need 16-, 32- or 64-bit elements, got 'i8'}}
  %0 = tile.atomic_rmw xchg, %p, %v : !tile.ptr<i8>
  return
}

// -----

// compare-and-swap needs 16-, 32- or 64-bit elements: i8.
func.func @atomic_cas_i8(%p: tensor<4x!tile.ptr<i8>>, %c: tensor<4xi8>, %v: tensor<4xi8>) {
  // expected-error @+1 {{'tile.atomic_cas' op compare-and-swap needs 16-, 32- or 64-bit elements, got 'i8'}}
  %0 = tile.atomic_cas %p, %c, %v : tensor<4x!tile.ptr<i8>>
  return
}

// -----

// compare-and-swap on i1.
func.func @atomic_cas_i1(%p: !tile.ptr<i1>, %c: i1, %v: i1) {
  // expected-error @+1 {{'tile.atomic_cas' op compare-and-swap needs 16-, 32- or 64-bit elements, got 'i1'}}
  %0 = tile.atomic_cas %p, %c, %v : !tile.ptr<i1>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dot
//===----------------------------------------------------------------------===//

// All operands must be 2-D.
func.func @dot_not_2d(%a: tensor<16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op operands must be 2-D tiles}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  return
}

// -----

// a's columns must match b's rows.
func.func @dot_inner_mismatch(%a: tensor<16x32xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op inner dimensions differ: a is [16,32], b is [16,16]}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16x32xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  return
}

// -----

// The accumulator is MxN.
func.func @dot_acc_shape(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x32xf32>) {
  // expected-error @+1 {{'tile.dot' op accumulator shape [16,32] must be [16,64]}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16x32xf32> * tensor<32x64xf32> -> tensor<16x32xf32>
  return
}

// -----

// a and b share an element type.
func.func @dot_element_mismatch(%a: tensor<16x16xf16>, %b: tensor<16x16xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op a and b element types differ: 'f16' vs 'bf16'}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16x16xf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

// tf32 precision is for f32 operands only.
func.func @dot_tf32_on_bf16(%a: tensor<16x16xbf16>, %b: tensor<16x16xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op precision tf32 applies to f32 operands only, got 'bf16'}}
  %0 = tile.dot %a, %b, %c, tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

// So is tf32x3.
func.func @dot_tf32x3_on_f16(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op precision tf32x3 applies to f32 operands only, got 'f16'}}
  %0 = tile.dot %a, %b, %c, tf32x3 : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  return
}

// -----

// f16 operands accumulate in f32 or f16, not bf16.
func.func @dot_bad_acc_type(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xbf16>) {
  // expected-error @+1 {{'tile.dot' op accumulator must be f32 or the operand type, got 'bf16'}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xbf16>
  return
}

// -----

// Float operands cannot accumulate in an integer; for f32 operands the
// message names f32 only.
func.func @dot_int_acc_for_float(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xi32>) {
  // expected-error @+1 {{'tile.dot' op accumulator must be f32, got 'i32'}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xi32>
  return
}

// -----

// i8 operands accumulate in i32.
func.func @dot_i8_bad_acc(%a: tensor<16x16xi8>, %b: tensor<16x16xi8>, %c: tensor<16x16xi16>) {
  // expected-error @+1 {{'tile.dot' op i8 operands accumulate in i32, got 'i16'}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16x16xi8> * tensor<16x16xi8> -> tensor<16x16xi16>
  return
}

// -----

// Integer operands other than i8 are unsupported.
func.func @dot_i32_operands(%a: tensor<16x16xi32>, %b: tensor<16x16xi32>, %c: tensor<16x16xi32>) {
  // expected-error @+1 {{'tile.dot' op unsupported operand element type 'i32'}}
  %0 = tile.dot %a, %b, %c, ieee : tensor<16x16xi32> * tensor<16x16xi32> -> tensor<16x16xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

// axis must be below the rank.
func.func @reduce_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.reduce' op axis 2 out of range for a rank-2 tile}}
  %r = tile.reduce(%x) {axis = 2 : i32} : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// A negative axis is rejected and reported as a negative number.
func.func @reduce_negative_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.reduce' op axis -1 out of range for a rank-2 tile}}
  %r = tile.reduce(%x) {axis = -1 : i32} : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// Reducing axis 1 of 4x8 keeps dim 0: the result is tensor<4xf32>.
func.func @reduce_wrong_result_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.reduce' op result type must be 'tensor<4xf32>', got 'tensor<8xf32>'}}
  %r = tile.reduce(%x) {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<8xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// Reducing a 1-D tile gives a scalar, not a 1-element tile.
func.func @reduce_1d_to_tensor(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.reduce' op result type must be 'f32', got 'tensor<1xf32>'}}
  %r = tile.reduce(%x) {axis = 0 : i32} : (tensor<8xf32>) -> tensor<1xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// One result per reduced operand.
func.func @reduce_result_count(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.reduce' op needs one result per operand}}
  %r:2 = tile.reduce(%x) {axis = 0 : i32} : (tensor<8xf32>) -> (f32, f32) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// Operands reduced together must have the same shape.
func.func @reduce_operand_shapes(%x: tensor<8xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'tile.reduce' op all operands must have the same shape}}
  %r:2 = tile.reduce(%x, %i) {axis = 0 : i32} : (tensor<8xf32>, tensor<4xi32>) -> (f32, i32) {
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    tile.reduce.return %a, %ai : f32, i32
  }
  return
}

// -----

// A reduce of nothing is rejected (generic form: the custom form cannot
// spell an empty tile.reduce.return).
func.func @reduce_no_operands() {
  // expected-error @+1 {{'tile.reduce' op needs at least one operand}}
  "tile.reduce"() ({
    "tile.reduce.return"() : () -> ()
  }) {axis = 0 : i32} : () -> ()
  return
}

// -----

// The combiner takes 2N arguments.
func.func @reduce_combiner_arg_count(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.reduce' op combiner must take 2 arguments, takes 1}}
  %r = tile.reduce(%x) {axis = 0 : i32} : (tensor<8xf32>) -> f32 {
  ^bb0(%a: f32):
    tile.reduce.return %a : f32
  }
  return
}

// -----

// Combiner arguments are the operands' element types.
func.func @reduce_combiner_arg_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.reduce' op combiner argument 1 must be 'f32'}}
  %r = tile.reduce(%x) {axis = 0 : i32} : (tensor<8xf32>) -> f32 {
  ^bb0(%a: f32, %b: f16):
    tile.reduce.return %a : f32
  }
  return
}

// -----

// In a two-operand reduce, argument i has the type of operand i mod 2.
func.func @reduce_combiner_arg_order(%x: tensor<8xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'tile.reduce' op combiner argument 1 must be 'i32'}}
  %r:2 = tile.reduce(%x, %i) {axis = 0 : i32} : (tensor<8xf32>, tensor<8xi32>) -> (f32, i32) {
  ^bb0(%a: f32, %b: f32, %ai: i32, %bi: i32):
    tile.reduce.return %a, %ai : f32, i32
  }
  return
}

// -----

// The combiner returns N values (singular for N = 1).
func.func @reduce_return_count(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.reduce' op combiner must return 1 value}}
  %r = tile.reduce(%x) {axis = 0 : i32} : (tensor<8xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    tile.reduce.return %a, %b : f32, f32
  }
  return
}

// -----

// Plural for N = 2.
func.func @reduce_return_count_2(%x: tensor<8xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'tile.reduce' op combiner must return 2 values}}
  %r:2 = tile.reduce(%x, %i) {axis = 0 : i32} : (tensor<8xf32>, tensor<8xi32>) -> (f32, i32) {
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    tile.reduce.return %a : f32
  }
  return
}

// -----

// The combiner returns the element types.
func.func @reduce_return_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.reduce' op combiner result 0 must be 'f32'}}
  %r = tile.reduce(%x) {axis = 0 : i32} : (tensor<8xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.cmpf olt, %a, %b : f32
    tile.reduce.return %c : i1
  }
  return
}

// -----

// The combiner region has exactly one block.
func.func @reduce_empty_region(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.reduce' op region #0 ('combiner') failed to verify constraint: region with 1 blocks}}
  "tile.reduce"(%x) ({
  }) {axis = 0 : i32} : (tensor<8xf32>) -> f32
  return
}

// -----

// tile.reduce.return only lives inside tile.reduce.
func.func @reduce_return_outside(%x: f32) {
  // expected-error @+1 {{'tile.reduce.return' op expects parent op to be one of 'tile.reduce, tile.scan'}}
  tile.reduce.return %x : f32
}

// -----

//===----------------------------------------------------------------------===//
// !tile.ptr
//===----------------------------------------------------------------------===//

// A pointer points at a scalar, not at a tensor...
// expected-error @+1 {{!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless i1/i8/i16/i32/i64, got 'tensor<4xf32>'}}
func.func @ptr_to_tensor(%p: !tile.ptr<tensor<4xf32>>) {
  return
}

// -----

// ...nor at another pointer...
// expected-error @+1 {{!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless i1/i8/i16/i32/i64, got '!tile.ptr<f32>'}}
func.func @ptr_to_ptr(%p: !tile.ptr<!tile.ptr<f32>>) {
  return
}

// -----

// ...nor at index...
// expected-error @+1 {{!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless i1/i8/i16/i32/i64, got 'index'}}
func.func @ptr_to_index(%p: !tile.ptr<index>) {
  return
}

// -----

// ...nor at an integer width memory does not hold...
// expected-error @+1 {{!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless i1/i8/i16/i32/i64, got 'i7'}}
func.func @ptr_to_i7(%p: !tile.ptr<i7>) {
  return
}

// -----

// ...nor at a float type other than f16/bf16/f32/f64 and the two fp8 formats...
// expected-error @+1 {{!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless i1/i8/i16/i32/i64, got 'f8E4M3FNUZ'}}
func.func @ptr_to_f8_fnuz(%p: !tile.ptr<f8E4M3FNUZ>) {
  return
}

// -----

// ...nor at a signed integer...
// expected-error @+1 {{!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless i1/i8/i16/i32/i64, got 'si8'}}
func.func @ptr_to_si8(%p: !tile.ptr<si8>) {
  return
}

// -----

// ...nor at an unsigned one.
// expected-error @+1 {{!tile.ptr must point at f16, bf16, f32, f64, fp8 (f8E4M3FN, f8E5M2) or a signless i1/i8/i16/i32/i64, got 'ui32'}}
func.func @ptr_to_ui32(%p: !tile.ptr<ui32>) {
  return
}

// -----

// Scalars are plain types: a rank-0 tensor is not a tile.
func.func @expand_dims_of_rank0(%c: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be tile of values or pointers (static power-of-two extents)}}
  %0 = tile.expand_dims %c {axis = 0 : i32} : tensor<f32> -> tensor<1xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tensor descriptors
//===----------------------------------------------------------------------===//

// TMA boxes are at most 256 elements along each dimension.
// expected-error @+1 {{a tensor descriptor's block extents are at most 256 (TMA's box limit), got 'tensor<4x512xf32>'}}
func.func private @desc_too_wide(!tile.tensordesc<tensor<4x512xf32>>)

// -----

// TMA moves 16-byte units: 2 floats are 8 bytes.
// expected-error @+1 {{a tensor descriptor's innermost block extent must span a multiple of 16 bytes (TMA moves 16-byte units), got 8 bytes in 'tensor<16x2xf32>'}}
func.func private @desc_inner_too_narrow(!tile.tensordesc<tensor<16x2xf32>>)

// -----

func.func @desc_base_type(%p: !tile.ptr<f16>, %n: i64) {
  // expected-error @+1 {{'tile.make_tensor_descriptor' op base points at 'f16' but the block holds 'f32'}}
  %d = tile.make_tensor_descriptor %p, [%n, %n], [%n, %n] : !tile.ptr<f16> -> !tile.tensordesc<tensor<16x16xf32>>
  return
}

// -----

func.func @desc_rank(%p: !tile.ptr<f32>, %n: i64) {
  // expected-error @+1 {{'tile.make_tensor_descriptor' op needs 2 extents and strides for a rank-2 block, got 1 and 2}}
  %d = tile.make_tensor_descriptor %p, [%n], [%n, %n] : !tile.ptr<f32> -> !tile.tensordesc<tensor<16x16xf32>>
  return
}

// -----

func.func @desc_inner_stride(%p: !tile.ptr<f32>, %n: i64) {
  %c2 = arith.constant 2 : i64
  // expected-error @+1 {{'tile.make_tensor_descriptor' op the innermost stride must be 1, got 2}}
  %d = tile.make_tensor_descriptor %p, [%n, %n], [%n, %c2] : !tile.ptr<f32> -> !tile.tensordesc<tensor<16x16xf32>>
  return
}

// -----

func.func @desc_load_offsets(%d: !tile.tensordesc<tensor<16x16xf32>>, %i: i32) {
  // expected-error @+1 {{'tile.descriptor_load' op needs 2 offsets, got 1}}
  %t = tile.descriptor_load %d[%i] : !tile.tensordesc<tensor<16x16xf32>> -> tensor<16x16xf32>
  return
}

// -----

func.func @desc_store_type(%d: !tile.tensordesc<tensor<16x16xf32>>, %i: i32, %v: tensor<16x16xf16>) {
  // expected-error @+1 {{'tile.descriptor_store' op accesses 'tensor<16x16xf16>' through a descriptor of 'tensor<16x16xf32>' blocks}}
  tile.descriptor_store %d[%i, %i], %v : !tile.tensordesc<tensor<16x16xf32>>, tensor<16x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// scan
//===----------------------------------------------------------------------===//

// A scan's results have its operands' shapes.
func.func @scan_wrong_result_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.scan' op result type must be 'tensor<4x8xf32>', got 'tensor<4xf32>'}}
  %r = tile.scan(%x) {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

func.func @scan_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tile.scan' op axis 2 out of range for a rank-2 tile}}
  %r = tile.scan(%x) {axis = 2 : i32} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// The combiner takes (so far, next) of the element type.
func.func @scan_combiner_arity(%x: tensor<8xi32>) {
  // expected-error @+1 {{'tile.scan' op combiner must take 2 arguments, takes 1}}
  %r = tile.scan(%x) {axis = 0 : i32} : (tensor<8xi32>) -> tensor<8xi32> {
  ^bb0(%a: i32):
    tile.reduce.return %a : i32
  }
  return
}

// -----

// A gather's index matches the source in every dimension but the axis.
func.func @gather_mismatch(%src: tensor<32x16xf32>, %index: tensor<8x8xi32>) {
  // expected-error @+1 {{'tile.gather' op index [8,8] must match the source [32,16] in every dimension but 0}}
  %r = tile.gather %src[%index] {axis = 0 : i32} : tensor<32x16xf32>, tensor<8x8xi32> -> tensor<8x8xf32>
  return
}

// -----

func.func @gather_index_type(%src: tensor<32xf32>, %index: tensor<8xi64>) {
  // expected-error @+1 {{'tile.gather' op index must hold i32, got 'i64'}}
  %r = tile.gather %src[%index] {axis = 0 : i32} : tensor<32xf32>, tensor<8xi64> -> tensor<8xf32>
  return
}

// -----

func.func @histogram_of_floats(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tile.histogram' op source must be a 1-D tile of i32, got 'tensor<8xf32>'}}
  %r = tile.histogram %x : tensor<8xf32> -> tensor<4xi32>
  return
}

// -----

func.func @inline_asm_constraints(%x: tensor<8xi32>) {
  // expected-error @+1 {{'tile.elementwise_inline_asm' op constraints "=r,r,r" name 1 outputs and 2 inputs; the op has 1 results and 1 arguments}}
  %r = tile.elementwise_inline_asm "add.s32 $0, $1, $2;", "=r,r,r" pure = true pack = 1 (%x : tensor<8xi32>) -> tensor<8xi32>
  return
}

// -----

func.func @inline_asm_pack(%x: tensor<8xi8>) {
  // expected-error @+1 {{'tile.elementwise_inline_asm' op passes 1 x 'i8' in a register of 8 bits; a register holds 16, 32 or 64 (pack 4 fills 32)}}
  %r = tile.elementwise_inline_asm "mov.b16 $0, $1;", "=h,h" pure = true pack = 1 (%x : tensor<8xi8>) -> tensor<8xi16>
  return
}

// -----

func.func @inline_asm_shapes(%x: tensor<8xi32>) {
  // expected-error @+1 {{'tile.elementwise_inline_asm' op all non-scalar operands/results must have the same shape}}
  %r = tile.elementwise_inline_asm "mov.b32 $0, $1;", "=r,r" pure = true pack = 1 (%x : tensor<8xi32>) -> tensor<16xi32>
  return
}

// -----

func.func @assume_not_power_of_two(%x: tensor<8xi32>) {
  // expected-error @+1 {{'tile.assume' op promises powers of two, got 3}}
  %r = tile.assume %x divisibility = [3] contiguity = [1] : tensor<8xi32>
  return
}

// -----

func.func @assume_run_too_long(%x: tensor<8xi32>) {
  // expected-error @+1 {{'tile.assume' op contiguity 16 along dimension 0 exceeds the extent 8}}
  %r = tile.assume %x divisibility = [1] contiguity = [16] : tensor<8xi32>
  return
}

// -----

func.func @store_cache_operator_on_a_load(%p: tensor<8x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op cache operator .wt is not one of a load's (ca, cg, cs, cv)}}
  %r = tile.load %p cache = wt : tensor<8x!tile.ptr<f32>>
  return
}

// -----

func.func @load_cache_operator_on_a_store(%p: tensor<8x!tile.ptr<f32>>, %v: tensor<8xf32>) {
  // expected-error @+1 {{'tile.store' op cache operator .cv is not one of a store's (wb, cg, cs, wt)}}
  tile.store %p, %v cache = cv : tensor<8x!tile.ptr<f32>>
  return
}

// -----

func.func @cache_operator_and_eviction(%p: tensor<8x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op takes a cache operator or an eviction policy, not both}}
  %r = tile.load %p cache = cg evict = evict_last : tensor<8x!tile.ptr<f32>>
  return
}

// -----

func.func @volatile_with_hints(%p: tensor<8x!tile.ptr<f32>>, %v: tensor<8xf32>) {
  // expected-error @+1 {{'tile.store' op volatile takes no cache operator or eviction policy}}
  tile.store %p, %v evict = evict_first volatile : tensor<8x!tile.ptr<f32>>
  return
}
