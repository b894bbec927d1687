// Round-trip of every tile op (and of the arith/math ops used on tiles).
// The first RUN line prints the custom form and parses it back; the second
// prints the generic form and checks that it parses into the same IR.
// RUN: tegula-opt %s | tegula-opt | FileCheck %s
// RUN: tegula-opt %s -mlir-print-op-generic | tegula-opt | FileCheck %s

//===----------------------------------------------------------------------===//
// Grid
//===----------------------------------------------------------------------===//

// All three grid axes print by name; num_programs shares the syntax.
// CHECK-LABEL: func.func @grid()
// CHECK-NEXT:    %[[X:.*]] = tile.program_id x
// CHECK-NEXT:    %[[Y:.*]] = tile.program_id y
// CHECK-NEXT:    %[[Z:.*]] = tile.program_id z
// CHECK-NEXT:    %[[NX:.*]] = tile.num_programs x
// CHECK-NEXT:    %[[NZ:.*]] = tile.num_programs z
// CHECK-NEXT:    return %[[X]], %[[Y]], %[[Z]], %[[NX]], %[[NZ]] : i32, i32, i32, i32, i32
func.func @grid() -> (i32, i32, i32, i32, i32) {
  %0 = tile.program_id x
  %1 = tile.program_id y
  %2 = tile.program_id z
  %3 = tile.num_programs x
  %4 = tile.num_programs z
  return %0, %1, %2, %3, %4 : i32, i32, i32, i32, i32
}

//===----------------------------------------------------------------------===//
// Creating and reshaping tiles
//===----------------------------------------------------------------------===//

// make_range keeps start/end (printed in attribute-name order); a length-1
// range with a non-zero start is valid, and start/end are signed: [-4, 4)
// has 8 elements and [-16, -8) has 8.
// CHECK-LABEL: func.func @make_range()
// CHECK:         tile.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
// CHECK:         tile.make_range {end = 65 : i32, start = 64 : i32} : tensor<1xi32>
// CHECK:         tile.make_range {end = 4 : i32, start = -4 : i32} : tensor<8xi32>
// CHECK:         tile.make_range {end = -8 : i32, start = -16 : i32} : tensor<8xi32>
func.func @make_range() -> (tensor<128xi32>, tensor<1xi32>, tensor<8xi32>, tensor<8xi32>) {
  %0 = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %1 = tile.make_range {start = 64 : i32, end = 65 : i32} : tensor<1xi32>
  %2 = tile.make_range {start = -4 : i32, end = 4 : i32} : tensor<8xi32>
  %3 = tile.make_range {start = -16 : i32, end = -8 : i32} : tensor<8xi32>
  return %0, %1, %2, %3 : tensor<128xi32>, tensor<1xi32>, tensor<8xi32>, tensor<8xi32>
}

// splat of a float, of a pointer (giving a 2-D tile of pointers) and of i1.
// CHECK-LABEL: func.func @splat(
// CHECK-SAME:    %[[F:[^:]+]]: f32, %[[P:[^:]+]]: !tile.ptr<f16>, %[[B:[^:]+]]: i1
// CHECK:         tile.splat %[[F]] : tensor<64xf32>
// CHECK:         tile.splat %[[P]] : tensor<16x32x!tile.ptr<f16>>
// CHECK:         tile.splat %[[B]] : tensor<8xi1>
func.func @splat(%f: f32, %p: !tile.ptr<f16>, %b: i1) -> (tensor<64xf32>, tensor<16x32x!tile.ptr<f16>>, tensor<8xi1>) {
  %0 = tile.splat %f : tensor<64xf32>
  %1 = tile.splat %p : tensor<16x32x!tile.ptr<f16>>
  %2 = tile.splat %b : tensor<8xi1>
  return %0, %1, %2 : tensor<64xf32>, tensor<16x32x!tile.ptr<f16>>, tensor<8xi1>
}

// expand_dims at either end, broadcast of the size-1 dim, reshape, 2-D trans.
// CHECK-LABEL: func.func @shapes(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<32xf32>, %[[M:[^:]+]]: tensor<16x32xf32>
// CHECK:         %[[E0:.*]] = tile.expand_dims %[[X]] {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
// CHECK:         %[[B:.*]] = tile.broadcast %[[E0]] : tensor<1x32xf32> -> tensor<16x32xf32>
// CHECK:         %[[E1:.*]] = tile.expand_dims %[[X]] {axis = 1 : i32} : tensor<32xf32> -> tensor<32x1xf32>
// CHECK:         %[[R:.*]] = tile.reshape %[[X]] : tensor<32xf32> -> tensor<4x8xf32>
// CHECK:         %[[T:.*]] = tile.trans %[[M]] {order = array<i32: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
// CHECK:         return %[[B]], %[[E1]], %[[R]], %[[T]]
func.func @shapes(%x: tensor<32xf32>, %m: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<32x1xf32>, tensor<4x8xf32>, tensor<32x16xf32>) {
  %0 = tile.expand_dims %x {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
  %1 = tile.broadcast %0 : tensor<1x32xf32> -> tensor<16x32xf32>
  %2 = tile.expand_dims %x {axis = 1 : i32} : tensor<32xf32> -> tensor<32x1xf32>
  %3 = tile.reshape %x : tensor<32xf32> -> tensor<4x8xf32>
  %4 = tile.trans %m {order = array<i32: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  return %1, %2, %3, %4 : tensor<16x32xf32>, tensor<32x1xf32>, tensor<4x8xf32>, tensor<32x16xf32>
}

// A 3-D rotation: result dim i is source dim order[i] (8, 2, 4).
// CHECK-LABEL: func.func @trans_3d(
// CHECK:         tile.trans %{{.*}} {order = array<i32: 2, 0, 1>} : tensor<2x4x8xi32> -> tensor<8x2x4xi32>
func.func @trans_3d(%x: tensor<2x4x8xi32>) -> tensor<8x2x4xi32> {
  %0 = tile.trans %x {order = array<i32: 2, 0, 1>} : tensor<2x4x8xi32> -> tensor<8x2x4xi32>
  return %0 : tensor<8x2x4xi32>
}

// Broadcast of a tile of pointers along both dims of a 1x1 tile.
// CHECK-LABEL: func.func @broadcast_ptr(
// CHECK:         tile.broadcast %{{.*}} : tensor<1x1x!tile.ptr<i8>> -> tensor<4x8x!tile.ptr<i8>>
func.func @broadcast_ptr(%p: tensor<1x1x!tile.ptr<i8>>) -> tensor<4x8x!tile.ptr<i8>> {
  %0 = tile.broadcast %p : tensor<1x1x!tile.ptr<i8>> -> tensor<4x8x!tile.ptr<i8>>
  return %0 : tensor<4x8x!tile.ptr<i8>>
}

//===----------------------------------------------------------------------===//
// Pointers and memory
//===----------------------------------------------------------------------===//

// addptr on a scalar pointer and on a tile of pointers; the offset may be
// i8, i16, i32 or i64 (not i1).
// CHECK-LABEL: func.func @addptr(
// CHECK-SAME:    %[[P:[^:]+]]: !tile.ptr<f32>, %[[O:[^:]+]]: i32, %[[PS:[^:]+]]: tensor<128x!tile.ptr<f32>>, %[[OS:[^:]+]]: tensor<128xi64>, %[[O8:[^:]+]]: i8, %[[O16:[^:]+]]: tensor<128xi16>
// CHECK:         tile.addptr %[[P]], %[[O]] : !tile.ptr<f32>, i32
// CHECK:         tile.addptr %[[PS]], %[[OS]] : tensor<128x!tile.ptr<f32>>, tensor<128xi64>
// CHECK:         tile.addptr %[[P]], %[[O8]] : !tile.ptr<f32>, i8
// CHECK:         tile.addptr %[[PS]], %[[O16]] : tensor<128x!tile.ptr<f32>>, tensor<128xi16>
func.func @addptr(%p: !tile.ptr<f32>, %o: i32, %ps: tensor<128x!tile.ptr<f32>>, %os: tensor<128xi64>, %o8: i8, %o16: tensor<128xi16>) -> (!tile.ptr<f32>, tensor<128x!tile.ptr<f32>>, !tile.ptr<f32>, tensor<128x!tile.ptr<f32>>) {
  %0 = tile.addptr %p, %o : !tile.ptr<f32>, i32
  %1 = tile.addptr %ps, %os : tensor<128x!tile.ptr<f32>>, tensor<128xi64>
  %2 = tile.addptr %p, %o8 : !tile.ptr<f32>, i8
  %3 = tile.addptr %ps, %o16 : tensor<128x!tile.ptr<f32>>, tensor<128xi16>
  return %0, %1, %2, %3 : !tile.ptr<f32>, tensor<128x!tile.ptr<f32>>, !tile.ptr<f32>, tensor<128x!tile.ptr<f32>>
}

// !tile.ptr accepts exactly f16, bf16, f32, f64 and signless i1/i8/i16/i32/i64.
// CHECK-LABEL: func.func @ptr_pointees(
// CHECK-SAME:    !tile.ptr<f16>, %{{[^:]+}}: !tile.ptr<bf16>, %{{[^:]+}}: !tile.ptr<f32>, %{{[^:]+}}: !tile.ptr<f64>, %{{[^:]+}}: !tile.ptr<i1>, %{{[^:]+}}: !tile.ptr<i8>, %{{[^:]+}}: !tile.ptr<i16>, %{{[^:]+}}: !tile.ptr<i32>, %{{[^:]+}}: !tile.ptr<i64>)
func.func @ptr_pointees(%a: !tile.ptr<f16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %d: !tile.ptr<f64>, %e: !tile.ptr<i1>, %f: !tile.ptr<i8>, %g: !tile.ptr<i16>, %h: !tile.ptr<i32>, %i: !tile.ptr<i64>) {
  return
}

// load: unmasked, masked, masked with `other`, and through scalar pointers.
// The result type is inferred from the pointer type.
// CHECK-LABEL: func.func @load(
// CHECK-SAME:    %[[PS:[^:]+]]: tensor<128x!tile.ptr<f32>>, %[[M:[^:]+]]: tensor<128xi1>, %[[OT:[^:]+]]: tensor<128xf32>, %[[P:[^:]+]]: !tile.ptr<i64>, %[[B:[^:]+]]: i1, %[[O:[^:]+]]: i64
// CHECK:         %[[L0:.*]] = tile.load %[[PS]] : tensor<128x!tile.ptr<f32>>
// CHECK:         %[[L1:.*]] = tile.load %[[PS]], %[[M]] : tensor<128x!tile.ptr<f32>>
// CHECK:         %[[L2:.*]] = tile.load %[[PS]], %[[M]], %[[OT]] : tensor<128x!tile.ptr<f32>>
// CHECK:         %[[L3:.*]] = tile.load %[[P]] : !tile.ptr<i64>
// CHECK:         %[[L4:.*]] = tile.load %[[P]], %[[B]], %[[O]] : !tile.ptr<i64>
// CHECK:         return %[[L0]], %[[L1]], %[[L2]], %[[L3]], %[[L4]] : tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, i64, i64
func.func @load(%ps: tensor<128x!tile.ptr<f32>>, %m: tensor<128xi1>, %other: tensor<128xf32>, %p: !tile.ptr<i64>, %b: i1, %o: i64) -> (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, i64, i64) {
  %0 = tile.load %ps : tensor<128x!tile.ptr<f32>>
  %1 = tile.load %ps, %m : tensor<128x!tile.ptr<f32>>
  %2 = tile.load %ps, %m, %other : tensor<128x!tile.ptr<f32>>
  %3 = tile.load %p : !tile.ptr<i64>
  %4 = tile.load %p, %b, %o : !tile.ptr<i64>
  return %0, %1, %2, %3, %4 : tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, i64, i64
}

// Cache hints: a cache operator, an eviction priority or volatile; the
// defaults print nothing.
// CHECK-LABEL: func.func @cache_hints(
// CHECK:         tile.load %{{.*}}, %{{.*}}, %{{.*}} cache = cg : tensor<128x!tile.ptr<f32>>
// CHECK:         tile.load %{{.*}} evict = evict_last : tensor<128x!tile.ptr<f32>>
// CHECK:         tile.load %{{.*}} volatile : !tile.ptr<i32>
// CHECK:         tile.store %{{.*}}, %{{.*}}, %{{.*}} cache = cs : tensor<128x!tile.ptr<f32>>
// CHECK:         tile.store %{{.*}}, %{{.*}} evict = evict_first : tensor<128x!tile.ptr<f32>>
// CHECK:         tile.store %{{.*}}, %{{.*}} volatile : !tile.ptr<i32>
func.func @cache_hints(%ps: tensor<128x!tile.ptr<f32>>, %m: tensor<128xi1>, %other: tensor<128xf32>, %p: !tile.ptr<i32>) {
  %0 = tile.load %ps, %m, %other cache = cg : tensor<128x!tile.ptr<f32>>
  %1 = tile.load %ps evict = evict_last : tensor<128x!tile.ptr<f32>>
  %2 = tile.load %p volatile : !tile.ptr<i32>
  tile.store %ps, %0, %m cache = cs : tensor<128x!tile.ptr<f32>>
  tile.store %ps, %1 evict = evict_first : tensor<128x!tile.ptr<f32>>
  tile.store %p, %2 volatile : !tile.ptr<i32>
  return
}

// store: 2-D tile with and without a mask, and a scalar store.
// CHECK-LABEL: func.func @store(
// CHECK-SAME:    %[[PS:[^:]+]]: tensor<16x16x!tile.ptr<bf16>>, %[[V:[^:]+]]: tensor<16x16xbf16>, %[[M:[^:]+]]: tensor<16x16xi1>, %[[P:[^:]+]]: !tile.ptr<i8>, %[[S:[^:]+]]: i8
// CHECK:         tile.store %[[PS]], %[[V]] : tensor<16x16x!tile.ptr<bf16>>
// CHECK-NEXT:    tile.store %[[PS]], %[[V]], %[[M]] : tensor<16x16x!tile.ptr<bf16>>
// CHECK-NEXT:    tile.store %[[P]], %[[S]] : !tile.ptr<i8>
func.func @store(%ps: tensor<16x16x!tile.ptr<bf16>>, %v: tensor<16x16xbf16>, %m: tensor<16x16xi1>, %p: !tile.ptr<i8>, %s: i8) {
  tile.store %ps, %v : tensor<16x16x!tile.ptr<bf16>>
  tile.store %ps, %v, %m : tensor<16x16x!tile.ptr<bf16>>
  tile.store %p, %s : !tile.ptr<i8>
  return
}

// Every atomic_rmw kind, masked and unmasked; unused results are kept
// because the op has memory effects.
// CHECK-LABEL: func.func @atomic_rmw(
// CHECK-SAME:    %[[PF:[^:]+]]: tensor<64x!tile.ptr<f32>>, %[[VF:[^:]+]]: tensor<64xf32>, %[[PI:[^:]+]]: tensor<64x!tile.ptr<i32>>, %[[VI:[^:]+]]: tensor<64xi32>, %[[M:[^:]+]]: tensor<64xi1>, %[[P:[^:]+]]: !tile.ptr<i64>, %[[S:[^:]+]]: i64
// CHECK:         tile.atomic_rmw add, %[[PF]], %[[VF]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    tile.atomic_rmw add, %[[PF]], %[[VF]], %[[M]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    tile.atomic_rmw max, %[[PF]], %[[VF]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    tile.atomic_rmw max, %[[PI]], %[[VI]], %[[M]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw min, %[[PF]], %[[VF]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    tile.atomic_rmw min, %[[PI]], %[[VI]], %[[M]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw xchg, %[[PF]], %[[VF]], %[[M]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    tile.atomic_rmw xchg, %[[PI]], %[[VI]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw and, %[[PI]], %[[VI]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw and, %[[PI]], %[[VI]], %[[M]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw or, %[[PI]], %[[VI]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw or, %[[PI]], %[[VI]], %[[M]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw xor, %[[PI]], %[[VI]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw xor, %[[PI]], %[[VI]], %[[M]] : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw add, %[[P]], %[[S]] : !tile.ptr<i64>
// CHECK-NEXT:    tile.atomic_rmw add, %[[PF]], %[[VF]], %[[M]] sem = relaxed : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    tile.atomic_rmw max, %[[PI]], %[[VI]] sem = acquire : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw xchg, %[[PI]], %[[VI]] sem = release : tensor<64x!tile.ptr<i32>>
// CHECK-NEXT:    tile.atomic_rmw add, %[[PF]], %[[VF]] : tensor<64x!tile.ptr<f32>>
func.func @atomic_rmw(%pf: tensor<64x!tile.ptr<f32>>, %vf: tensor<64xf32>, %pi: tensor<64x!tile.ptr<i32>>, %vi: tensor<64xi32>, %m: tensor<64xi1>, %p: !tile.ptr<i64>, %s: i64) {
  %0 = tile.atomic_rmw add, %pf, %vf : tensor<64x!tile.ptr<f32>>
  %1 = tile.atomic_rmw add, %pf, %vf, %m : tensor<64x!tile.ptr<f32>>
  %2 = tile.atomic_rmw max, %pf, %vf : tensor<64x!tile.ptr<f32>>
  %3 = tile.atomic_rmw max, %pi, %vi, %m : tensor<64x!tile.ptr<i32>>
  %4 = tile.atomic_rmw min, %pf, %vf : tensor<64x!tile.ptr<f32>>
  %5 = tile.atomic_rmw min, %pi, %vi, %m : tensor<64x!tile.ptr<i32>>
  %6 = tile.atomic_rmw xchg, %pf, %vf, %m : tensor<64x!tile.ptr<f32>>
  %7 = tile.atomic_rmw xchg, %pi, %vi : tensor<64x!tile.ptr<i32>>
  %8 = tile.atomic_rmw and, %pi, %vi : tensor<64x!tile.ptr<i32>>
  %9 = tile.atomic_rmw and, %pi, %vi, %m : tensor<64x!tile.ptr<i32>>
  %10 = tile.atomic_rmw or, %pi, %vi : tensor<64x!tile.ptr<i32>>
  %11 = tile.atomic_rmw or, %pi, %vi, %m : tensor<64x!tile.ptr<i32>>
  %12 = tile.atomic_rmw xor, %pi, %vi : tensor<64x!tile.ptr<i32>>
  %13 = tile.atomic_rmw xor, %pi, %vi, %m : tensor<64x!tile.ptr<i32>>
  %14 = tile.atomic_rmw add, %p, %s : !tile.ptr<i64>
  %15 = tile.atomic_rmw add, %pf, %vf, %m sem = relaxed : tensor<64x!tile.ptr<f32>>
  %16 = tile.atomic_rmw max, %pi, %vi sem = acquire : tensor<64x!tile.ptr<i32>>
  %17 = tile.atomic_rmw xchg, %pi, %vi sem = release : tensor<64x!tile.ptr<i32>>
  %18 = tile.atomic_rmw add, %pf, %vf sem = acq_rel : tensor<64x!tile.ptr<f32>>
  return
}

// atomic_cas on a tile of i32 and on a scalar f16 (16-bit is allowed).
// CHECK-LABEL: func.func @atomic_cas(
// CHECK-SAME:    %[[PS:[^:]+]]: tensor<32x!tile.ptr<i32>>, %[[C:[^:]+]]: tensor<32xi32>, %[[V:[^:]+]]: tensor<32xi32>, %[[P:[^:]+]]: !tile.ptr<f16>, %[[CS:[^:]+]]: f16, %[[VS:[^:]+]]: f16
// CHECK:         tile.atomic_cas %[[PS]], %[[C]], %[[V]] : tensor<32x!tile.ptr<i32>>
// CHECK:         tile.atomic_cas %[[P]], %[[CS]], %[[VS]] : !tile.ptr<f16>
func.func @atomic_cas(%ps: tensor<32x!tile.ptr<i32>>, %c: tensor<32xi32>, %v: tensor<32xi32>, %p: !tile.ptr<f16>, %cs: f16, %vs: f16) -> (tensor<32xi32>, f16) {
  %0 = tile.atomic_cas %ps, %c, %v : tensor<32x!tile.ptr<i32>>
  %1 = tile.atomic_cas %p, %cs, %vs : !tile.ptr<f16>
  return %0, %1 : tensor<32xi32>, f16
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

// dot: f32 at every precision, bf16/f16 into an f32 accumulator, f16 into
// an f16 accumulator and i8 into i32.
// CHECK-LABEL: func.func @dot(
// CHECK:         tile.dot %{{.*}}, %{{.*}}, %{{.*}}, ieee : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:    tile.dot %{{.*}}, %{{.*}}, %{{.*}}, tf32 : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:    tile.dot %{{.*}}, %{{.*}}, %{{.*}}, tf32x3 : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:    tile.dot %{{.*}}, %{{.*}}, %{{.*}}, ieee : tensor<32x16xbf16> * tensor<16x64xbf16> -> tensor<32x64xf32>
// CHECK-NEXT:    tile.dot %{{.*}}, %{{.*}}, %{{.*}}, ieee : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf32>
// CHECK-NEXT:    tile.dot %{{.*}}, %{{.*}}, %{{.*}}, ieee : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf16>
// CHECK-NEXT:    tile.dot %{{.*}}, %{{.*}}, %{{.*}}, ieee : tensor<32x16xi8> * tensor<16x64xi8> -> tensor<32x64xi32>
func.func @dot(%a32: tensor<32x16xf32>, %b32: tensor<16x64xf32>, %acc: tensor<32x64xf32>,
               %abf: tensor<32x16xbf16>, %bbf: tensor<16x64xbf16>,
               %ah: tensor<32x16xf16>, %bh: tensor<16x64xf16>, %acch: tensor<32x64xf16>,
               %ai8: tensor<32x16xi8>, %bi8: tensor<16x64xi8>, %acci: tensor<32x64xi32>)
    -> (tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
        tensor<32x64xf32>, tensor<32x64xf16>, tensor<32x64xi32>) {
  %0 = tile.dot %a32, %b32, %acc, ieee : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  %1 = tile.dot %a32, %b32, %acc, tf32 : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  %2 = tile.dot %a32, %b32, %acc, tf32x3 : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  %3 = tile.dot %abf, %bbf, %acc, ieee : tensor<32x16xbf16> * tensor<16x64xbf16> -> tensor<32x64xf32>
  %4 = tile.dot %ah, %bh, %acc, ieee : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf32>
  %5 = tile.dot %ah, %bh, %acch, ieee : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf16>
  %6 = tile.dot %ai8, %bi8, %acci, ieee : tensor<32x16xi8> * tensor<16x64xi8> -> tensor<32x64xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf16>, tensor<32x64xi32>
}

// Sum of a 1-D tile to a scalar: the combiner takes (acc, new) and yields
// one value with tile.reduce.return.
// CHECK-LABEL: func.func @reduce_sum_1d(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<128xf32>
// CHECK:         %[[R:.*]] = tile.reduce(%[[X]]) {axis = 0 : i32} : (tensor<128xf32>) -> f32 {
// CHECK-NEXT:    ^bb0(%[[A:[^:]+]]: f32, %[[B:[^:]+]]: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      tile.reduce.return %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]] : f32
func.func @reduce_sum_1d(%x: tensor<128xf32>) -> f32 {
  %r = tile.reduce(%x) {axis = 0 : i32} : (tensor<128xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return %r : f32
}

// A scan keeps its operand's shape; `reverse` runs from the axis's end.
// CHECK-LABEL: func.func @scan_sum(
// CHECK:         tile.scan(%{{.*}}) {axis = 1 : i32, reverse} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK:           tile.reduce.return %{{.*}} : f32
func.func @scan_sum(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = tile.scan(%x) {axis = 1 : i32, reverse} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return %r : tensor<4x8xf32>
}

// Reducing a 2-D tile along axis 1 gives a 1-D tile of the kept dim.
// CHECK-LABEL: func.func @reduce_max_axis1(
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32} : (tensor<16x64xi32>) -> tensor<16xi32> {
// CHECK-NEXT:    ^bb0(%[[A:[^:]+]]: i32, %[[B:[^:]+]]: i32):
// CHECK-NEXT:      %[[S:.*]] = arith.maxsi %[[A]], %[[B]] : i32
// CHECK-NEXT:      tile.reduce.return %[[S]] : i32
func.func @reduce_max_axis1(%x: tensor<16x64xi32>) -> tensor<16xi32> {
  %r = tile.reduce(%x) {axis = 1 : i32} : (tensor<16x64xi32>) -> tensor<16xi32> {
  ^bb0(%a: i32, %b: i32):
    %s = arith.maxsi %a, %b : i32
    tile.reduce.return %s : i32
  }
  return %r : tensor<16xi32>
}

// Two-operand argmax: values and indices reduce together; the combiner
// takes (acc value, acc index, new value, new index) and yields two values.
// CHECK-LABEL: func.func @reduce_argmax(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<8x128xf32>, %[[I:[^:]+]]: tensor<8x128xi32>
// CHECK:         %[[R:.*]]:2 = tile.reduce(%[[X]], %[[I]]) {axis = 1 : i32} : (tensor<8x128xf32>, tensor<8x128xi32>) -> (tensor<8xf32>, tensor<8xi32>) {
// CHECK-NEXT:    ^bb0(%[[AV:[^:]+]]: f32, %[[AI:[^:]+]]: i32, %[[BV:[^:]+]]: f32, %[[BI:[^:]+]]: i32):
// CHECK-NEXT:      %[[C:.*]] = arith.cmpf ogt, %[[AV]], %[[BV]] : f32
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[C]], %[[AV]], %[[BV]] : f32
// CHECK-NEXT:      %[[IX:.*]] = arith.select %[[C]], %[[AI]], %[[BI]] : i32
// CHECK-NEXT:      tile.reduce.return %[[V]], %[[IX]] : f32, i32
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1 : tensor<8xf32>, tensor<8xi32>
func.func @reduce_argmax(%x: tensor<8x128xf32>, %i: tensor<8x128xi32>) -> (tensor<8xf32>, tensor<8xi32>) {
  %r:2 = tile.reduce(%x, %i) {axis = 1 : i32} : (tensor<8x128xf32>, tensor<8x128xi32>) -> (tensor<8xf32>, tensor<8xi32>) {
  ^bb0(%av: f32, %ai: i32, %bv: f32, %bi: i32):
    %c = arith.cmpf ogt, %av, %bv : f32
    %v = arith.select %c, %av, %bv : f32
    %ix = arith.select %c, %ai, %bi : i32
    tile.reduce.return %v, %ix : f32, i32
  }
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xi32>
}

//===----------------------------------------------------------------------===//
// Debugging
//===----------------------------------------------------------------------===//

// print with no args, with a scalar and a tile; assert on a tile and a scalar.
// CHECK-LABEL: func.func @debug(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<16xf32>, %[[N:[^:]+]]: i32, %[[C:[^:]+]]: tensor<16xi1>, %[[B:[^:]+]]: i1
// CHECK:         tile.print "hello"
// CHECK-NEXT:    tile.print "x = " %[[X]], %[[N]] : tensor<16xf32>, i32
// CHECK-NEXT:    tile.assert %[[C]], "x out of range" : tensor<16xi1>
// CHECK-NEXT:    tile.assert %[[B]], "n" : i1
func.func @debug(%x: tensor<16xf32>, %n: i32, %c: tensor<16xi1>, %b: i1) {
  tile.print "hello"
  tile.print "x = " %x, %n : tensor<16xf32>, i32
  tile.assert %c, "x out of range" : tensor<16xi1>
  tile.assert %b, "n" : i1
  return
}

//===----------------------------------------------------------------------===//
// arith and math on tiles
//===----------------------------------------------------------------------===//

// Float casts between f32, bf16 and f16, int<->float, int width changes and
// comparisons producing i1 tiles, all elementwise on tensors.
// CHECK-LABEL: func.func @casts(
// CHECK-SAME:    %[[F:[^:]+]]: tensor<64xf32>, %[[I:[^:]+]]: tensor<64xi32>, %[[B:[^:]+]]: tensor<64xi1>
// CHECK:         %[[BF:.*]] = arith.truncf %[[F]] : tensor<64xf32> to tensor<64xbf16>
// CHECK-NEXT:    arith.extf %[[BF]] : tensor<64xbf16> to tensor<64xf32>
// CHECK-NEXT:    %[[H:.*]] = arith.truncf %[[F]] : tensor<64xf32> to tensor<64xf16>
// CHECK-NEXT:    arith.extf %[[H]] : tensor<64xf16> to tensor<64xf32>
// CHECK-NEXT:    arith.sitofp %[[I]] : tensor<64xi32> to tensor<64xf32>
// CHECK-NEXT:    arith.fptosi %[[F]] : tensor<64xf32> to tensor<64xi32>
// CHECK-NEXT:    %[[L:.*]] = arith.extsi %[[I]] : tensor<64xi32> to tensor<64xi64>
// CHECK-NEXT:    arith.trunci %[[L]] : tensor<64xi64> to tensor<64xi32>
// CHECK-NEXT:    arith.extui %[[B]] : tensor<64xi1> to tensor<64xi32>
// CHECK-NEXT:    arith.cmpi slt, %[[I]], %[[I]] : tensor<64xi32>
// CHECK-NEXT:    arith.cmpf olt, %[[F]], %[[F]] : tensor<64xf32>
func.func @casts(%f: tensor<64xf32>, %i: tensor<64xi32>, %b: tensor<64xi1>) {
  %0 = arith.truncf %f : tensor<64xf32> to tensor<64xbf16>
  %1 = arith.extf %0 : tensor<64xbf16> to tensor<64xf32>
  %2 = arith.truncf %f : tensor<64xf32> to tensor<64xf16>
  %3 = arith.extf %2 : tensor<64xf16> to tensor<64xf32>
  %4 = arith.sitofp %i : tensor<64xi32> to tensor<64xf32>
  %5 = arith.fptosi %f : tensor<64xf32> to tensor<64xi32>
  %6 = arith.extsi %i : tensor<64xi32> to tensor<64xi64>
  %7 = arith.trunci %6 : tensor<64xi64> to tensor<64xi32>
  %8 = arith.extui %b : tensor<64xi1> to tensor<64xi32>
  %9 = arith.cmpi slt, %i, %i : tensor<64xi32>
  %10 = arith.cmpf olt, %f, %f : tensor<64xf32>
  return
}

// arith.select with a tile condition picks elementwise.
// CHECK-LABEL: func.func @select(
// CHECK-SAME:    %[[C:[^:]+]]: tensor<8x8xi1>, %[[A:[^:]+]]: tensor<8x8xf32>, %[[B:[^:]+]]: tensor<8x8xf32>
// CHECK:         arith.select %[[C]], %[[A]], %[[B]] : tensor<8x8xi1>, tensor<8x8xf32>
func.func @select(%c: tensor<8x8xi1>, %a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = arith.select %c, %a, %b : tensor<8x8xi1>, tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// Transcendental math ops used by kernels, on tiles.
// CHECK-LABEL: func.func @math(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<128xf32>
// CHECK:         math.exp %[[X]] : tensor<128xf32>
// CHECK-NEXT:    math.log %[[X]] : tensor<128xf32>
// CHECK-NEXT:    math.sqrt %[[X]] : tensor<128xf32>
// CHECK-NEXT:    math.rsqrt %[[X]] : tensor<128xf32>
// CHECK-NEXT:    math.tanh %[[X]] : tensor<128xf32>
// CHECK-NEXT:    math.erf %[[X]] : tensor<128xf32>
func.func @math(%x: tensor<128xf32>) {
  %0 = math.exp %x : tensor<128xf32>
  %1 = math.log %x : tensor<128xf32>
  %2 = math.sqrt %x : tensor<128xf32>
  %3 = math.rsqrt %x : tensor<128xf32>
  %4 = math.tanh %x : tensor<128xf32>
  %5 = math.erf %x : tensor<128xf32>
  return
}

// tl::gather: the result takes the index's shape.
// CHECK-LABEL: func.func @gather
// CHECK:         tile.gather %{{.*}}[%{{.*}}] {axis = 0 : i32} : tensor<32x16xf32>, tensor<8x16xi32> -> tensor<8x16xf32>
func.func @gather(%src: tensor<32x16xf32>, %index: tensor<8x16xi32>) -> tensor<8x16xf32> {
  %r = tile.gather %src[%index] {axis = 0 : i32} : tensor<32x16xf32>, tensor<8x16xi32> -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// tl::multiple_of / tl::max_contiguous: a promise on a scalar and on a tile.
// CHECK-LABEL: func.func @assume
// CHECK:         tile.assume %{{.*}} divisibility = [16] contiguity = [] : i32
// CHECK:         tile.assume %{{.*}} divisibility = [1, 8] contiguity = [1, 8] : tensor<4x8xi32>
func.func @assume(%s: i32, %t: tensor<4x8xi32>) -> (i32, tensor<4x8xi32>) {
  %a = tile.assume %s divisibility = [16] contiguity = [] : i32
  %b = tile.assume %t divisibility = [1, 8] contiguity = [1, 8] : tensor<4x8xi32>
  return %a, %b : i32, tensor<4x8xi32>
}

// tl::inline_asm_elementwise: PTX per element, several results, packed.
// CHECK-LABEL: func.func @inline_asm
// CHECK:         tile.elementwise_inline_asm "mov.b32 $0, $2; mov.b32 $1, $2;", "=r,=r,r" pure = true pack = 1(%{{.*}} : tensor<128xi32>) -> tensor<128xi32>, tensor<128xi32>
// CHECK:         tile.elementwise_inline_asm "and.b32 $0, $1, 255;", "=r,r" pure = false pack = 4(%{{.*}} : tensor<128xi8>) -> tensor<128xi8>
func.func @inline_asm(%x: tensor<128xi32>, %y: tensor<128xi8>) -> (tensor<128xi32>, tensor<128xi8>) {
  %a, %b = tile.elementwise_inline_asm "mov.b32 $0, $2; mov.b32 $1, $2;", "=r,=r,r" pure = true pack = 1 (%x : tensor<128xi32>) -> tensor<128xi32>, tensor<128xi32>
  %c = tile.elementwise_inline_asm "and.b32 $0, $1, 255;", "=r,r" pure = false pack = 4 (%y : tensor<128xi8>) -> tensor<128xi8>
  return %a, %c : tensor<128xi32>, tensor<128xi8>
}

// tl::histogram: counts of 0 .. bins-1.
// CHECK-LABEL: func.func @histogram
// CHECK:         tile.histogram %{{.*}} : tensor<128xi32> -> tensor<16xi32>
func.func @histogram(%x: tensor<128xi32>) -> tensor<16xi32> {
  %r = tile.histogram %x : tensor<128xi32> -> tensor<16xi32>
  return %r : tensor<16xi32>
}
