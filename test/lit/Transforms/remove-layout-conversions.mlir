// RUN: tegula-opt %s -split-input-file --remove-layout-conversions -canonicalize | FileCheck %s

#a = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>

// A mask built from a range and a splat, needed in another layout, is
// recomputed there: no conversion (and no shared-memory trip) remains.
// CHECK-DAG: #[[B:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 4]
// CHECK-DAG: #[[S:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[B]]}>
// CHECK-LABEL: func.func @cheap_mask(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.make_range {{.*}} : tensor<32xi32, #[[S]]>
// CHECK:         tile.expand_dims {{.*}} -> tensor<32x1xi32, #[[B]]>
// CHECK:         arith.cmpi slt, {{.*}} : tensor<32x1xi32, #[[B]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @cheap_mask(%n: i32) -> tensor<32x1xi1, #b> {
  %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>>
  %e = tile.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>> -> tensor<32x1xi32, #a>
  %ns = tile.splat %n : tensor<32x1xi32, #a>
  %m = arith.cmpi slt, %e, %ns : tensor<32x1xi32, #a>
  %c = tilegpu.convert_layout %m : tensor<32x1xi1, #a> -> tensor<32x1xi1, #b>
  return %c : tensor<32x1xi1, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Splats, ranges and splat constants are made in the target layout directly.
// CHECK-LABEL: func.func @sources(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK-DAG:     arith.constant dense<2.000000e+00> : tensor<512xf32, #[[T:blocked[0-9]*]]>
// CHECK-DAG:     tile.make_range {{.*}} : tensor<512xi32, #[[T]]>
// CHECK-DAG:     tile.splat %{{.*}} : tensor<512xf32, #[[T]]>
func.func @sources(%s: f32) -> (tensor<512xf32, #b>, tensor<512xi32, #b>, tensor<512xf32, #b>) {
  %c = arith.constant dense<2.0> : tensor<512xf32, #a>
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32, #a>
  %v = tile.splat %s : tensor<512xf32, #a>
  %c1 = tilegpu.convert_layout %c : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %r1 = tilegpu.convert_layout %r : tensor<512xi32, #a> -> tensor<512xi32, #b>
  %v1 = tilegpu.convert_layout %v : tensor<512xf32, #a> -> tensor<512xf32, #b>
  return %c1, %r1, %v1 : tensor<512xf32, #b>, tensor<512xi32, #b>, tensor<512xf32, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Loaded data really has to move: the conversion stays.
// CHECK-LABEL: func.func @loaded(
// CHECK:         tile.load
// CHECK:         tilegpu.convert_layout
func.func @loaded(%p: tensor<512x!tile.ptr<f32>, #a>) -> tensor<512xf32, #b> {
  %v = tile.load %p : tensor<512x!tile.ptr<f32>, #a>
  %c = tilegpu.convert_layout %v : tensor<512xf32, #a> -> tensor<512xf32, #b>
  return %c : tensor<512xf32, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Forward propagation, hoisting: data converted a->b for an add whose sum is
// converted straight back to a. Computing the add in a leaves one conversion
// (of %y) instead of two.
// CHECK-DAG: #[[A:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4]
// CHECK-DAG: #[[B:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1]
// CHECK-LABEL: func.func @hoist_cancels(
// CHECK-SAME:    %[[PX:.*]]: tensor<512x!tile.ptr<f32>, #[[A]]>, %[[PY:.*]]: tensor<512x!tile.ptr<f32>, #[[B]]>
// CHECK:         %[[X:.*]] = tile.load %[[PX]]
// CHECK:         %[[Y:.*]] = tile.load %[[PY]]
// CHECK:         %[[YA:.*]] = tilegpu.convert_layout %[[Y]] : tensor<512xf32, #[[B]]> -> tensor<512xf32, #[[A]]>
// CHECK:         %[[S:.*]] = arith.addf %[[X]], %[[YA]] : tensor<512xf32, #[[A]]>
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         return %[[S]]
func.func @hoist_cancels(%px: tensor<512x!tile.ptr<f32>, #a>, %py: tensor<512x!tile.ptr<f32>, #b>) -> tensor<512xf32, #a> {
  %x = tile.load %px : tensor<512x!tile.ptr<f32>, #a>
  %y = tile.load %py : tensor<512x!tile.ptr<f32>, #b>
  %xb = tilegpu.convert_layout %x : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %s = arith.addf %xb, %y : tensor<512xf32, #b>
  %sa = tilegpu.convert_layout %s : tensor<512xf32, #b> -> tensor<512xf32, #a>
  return %sa : tensor<512xf32, #a>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Forward propagation, sinking: two operands converted from the same layout
// merge into one conversion of the result.
// CHECK-DAG: #[[A:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4]
// CHECK-DAG: #[[B:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1]
// CHECK-LABEL: func.func @sink_merges(
// CHECK:         %[[S:.*]] = arith.mulf %{{.*}}, %{{.*}} : tensor<512xf32, #[[A]]>
// CHECK:         %[[C:.*]] = tilegpu.convert_layout %[[S]] : tensor<512xf32, #[[A]]> -> tensor<512xf32, #[[B]]>
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         return %[[C]]
func.func @sink_merges(%px: tensor<512x!tile.ptr<f32>, #a>, %py: tensor<512x!tile.ptr<f32>, #a>) -> tensor<512xf32, #b> {
  %x = tile.load %px : tensor<512x!tile.ptr<f32>, #a>
  %y = tile.load %py : tensor<512x!tile.ptr<f32>, #a>
  %xb = tilegpu.convert_layout %x : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %yb = tilegpu.convert_layout %y : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %s = arith.mulf %xb, %yb : tensor<512xf32, #b>
  return %s : tensor<512xf32, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Sinking then hoisting: a round trip a->b->a through two elementwise ops
// (one with a constant operand, rematerialised) disappears entirely.
// CHECK-LABEL: func.func @round_trip(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         arith.addf
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         arith.mulf
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         return
func.func @round_trip(%px: tensor<512x!tile.ptr<f32>, #a>, %py: tensor<512x!tile.ptr<f32>, #a>) -> tensor<512xf32, #a> {
  %x = tile.load %px : tensor<512x!tile.ptr<f32>, #a>
  %y = tile.load %py : tensor<512x!tile.ptr<f32>, #a>
  %xb = tilegpu.convert_layout %x : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %yb = tilegpu.convert_layout %y : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %s = arith.addf %xb, %yb : tensor<512xf32, #b>
  %two = arith.constant dense<2.0> : tensor<512xf32, #b>
  %m = arith.mulf %s, %two : tensor<512xf32, #b>
  %ma = tilegpu.convert_layout %m : tensor<512xf32, #b> -> tensor<512xf32, #a>
  return %ma : tensor<512xf32, #a>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>

// Pointer tiles (addptr of a splat and an index column, as matmul and
// transpose build before a broadcast) are computed where they are needed.
// CHECK-DAG: #[[B:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 4]
// CHECK-LABEL: func.func @pointer_column(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.addptr {{.*}} : tensor<32x1x!tile.ptr<f32>, #[[B]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @pointer_column(%p: !tile.ptr<f32>, %k: i32) -> tensor<32x1x!tile.ptr<f32>, #b> {
  %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>>
  %e = tile.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>> -> tensor<32x1xi32, #a>
  %ks = tile.splat %k : tensor<32x1xi32, #a>
  %o = arith.muli %e, %ks : tensor<32x1xi32, #a>
  %ps = tile.splat %p : tensor<32x1x!tile.ptr<f32>, #a>
  %q = tile.addptr %ps, %o : tensor<32x1x!tile.ptr<f32>, #a>, tensor<32x1xi32, #a>
  %c = tilegpu.convert_layout %q : tensor<32x1x!tile.ptr<f32>, #a> -> tensor<32x1x!tile.ptr<f32>, #b>
  return %c : tensor<32x1x!tile.ptr<f32>, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #tilegpu.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>

// A whole 2-D pointer tile - a broadcast pointer row plus a broadcast index
// column, as a K-major operand's addresses b + n * K + k are built - needed
// in the layout its load was coalesced to: recomputed there, not moved
// through shared memory at 8 bytes a pointer (it used to stay a conversion,
// inside the K loop).
// CHECK-DAG: #[[B:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4, 1]
// CHECK-LABEL: func.func @pointer_tile(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.addptr {{.*}} : tensor<32x64x!tile.ptr<i8>, #[[B]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @pointer_tile(%p: !tile.ptr<i8>, %k: i32, %k0: i32) -> tensor<32x64x!tile.ptr<i8>, #b> {
  %n = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #tilegpu.slice<{dim = 0, parent = #a}>>
  %ne = tile.expand_dims %n {axis = 0 : i32} : tensor<64xi32, #tilegpu.slice<{dim = 0, parent = #a}>> -> tensor<1x64xi32, #a>
  %ks = tile.splat %k : tensor<1x64xi32, #a>
  %rowoff = arith.muli %ne, %ks : tensor<1x64xi32, #a>
  %ps = tile.splat %p : tensor<1x64x!tile.ptr<i8>, #a>
  %row = tile.addptr %ps, %rowoff : tensor<1x64x!tile.ptr<i8>, #a>, tensor<1x64xi32, #a>
  %rows = tile.broadcast %row : tensor<1x64x!tile.ptr<i8>, #a> -> tensor<32x64x!tile.ptr<i8>, #a>
  %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>>
  %k0s = tile.splat %k0 : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>>
  %kr = arith.addi %k0s, %r : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>>
  %ke = tile.expand_dims %kr {axis = 1 : i32} : tensor<32xi32, #tilegpu.slice<{dim = 1, parent = #a}>> -> tensor<32x1xi32, #a>
  %kb = tile.broadcast %ke : tensor<32x1xi32, #a> -> tensor<32x64xi32, #a>
  %ptrs = tile.addptr %rows, %kb : tensor<32x64x!tile.ptr<i8>, #a>, tensor<32x64xi32, #a>
  %c = tilegpu.convert_layout %ptrs : tensor<32x64x!tile.ptr<i8>, #a> -> tensor<32x64x!tile.ptr<i8>, #b>
  return %c : tensor<32x64x!tile.ptr<i8>, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Negative: hoisting above an add of two loads would need two conversions
// instead of one; nothing changes.
// CHECK-DAG: #[[A:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4]
// CHECK-LABEL: func.func @hoist_not_worth(
// CHECK:         arith.addf {{.*}} : tensor<512xf32, #[[A]]>
// CHECK-NEXT:    tilegpu.convert_layout
// CHECK-NOT:     tilegpu.convert_layout
func.func @hoist_not_worth(%px: tensor<512x!tile.ptr<f32>, #a>, %py: tensor<512x!tile.ptr<f32>, #a>) -> tensor<512xf32, #b> {
  %x = tile.load %px : tensor<512x!tile.ptr<f32>, #a>
  %y = tile.load %py : tensor<512x!tile.ptr<f32>, #a>
  %s = arith.addf %x, %y : tensor<512xf32, #a>
  %c = tilegpu.convert_layout %s : tensor<512xf32, #a> -> tensor<512xf32, #b>
  return %c : tensor<512xf32, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Negative: the sum is also used in b, so hoisting would keep it and add a
// copy; sinking would trade one conversion for two. Both conversions stay.
// CHECK-DAG: #[[A:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4]
// CHECK-DAG: #[[B:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1]
// CHECK-LABEL: func.func @shared_sum(
// CHECK:         tilegpu.convert_layout {{.*}} -> tensor<512xf32, #[[B]]>
// CHECK:         arith.addf {{.*}} : tensor<512xf32, #[[B]]>
// CHECK:         tilegpu.convert_layout {{.*}} -> tensor<512xf32, #[[A]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @shared_sum(%px: tensor<512x!tile.ptr<f32>, #a>, %py: tensor<512x!tile.ptr<f32>, #b>) -> (tensor<512xf32, #a>, tensor<512xf32, #b>) {
  %x = tile.load %px : tensor<512x!tile.ptr<f32>, #a>
  %y = tile.load %py : tensor<512x!tile.ptr<f32>, #b>
  %xb = tilegpu.convert_layout %x : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %s = arith.addf %xb, %y : tensor<512xf32, #b>
  %sa = tilegpu.convert_layout %s : tensor<512xf32, #b> -> tensor<512xf32, #a>
  return %sa, %s : tensor<512xf32, #a>, tensor<512xf32, #b>
}

// -----

// A loop-carried row statistic produced in one layout (a slice of mma) and
// only converted by the body: carried in that layout, converted once before
// the loop and once after - not twice per iteration.
#bl = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1]}>
#sm = #tilegpu.slice<{dim = 1, parent = #mma}>
// CHECK-LABEL: func.func @carried_in_produced_layout(
// CHECK:         %[[INIT:.*]] = tilegpu.convert_layout %{{.*}} : tensor<64xf32, #blocked> -> tensor<64xf32, #[[SM:slice[0-9]*]]>
// CHECK:         %[[R:.*]] = scf.for {{.*}} iter_args(%[[M:.*]] = %[[INIT]]) -> (tensor<64xf32, #[[SM]]>)
// CHECK-NOT:       tilegpu.convert_layout
// CHECK:           arith.maximumf %[[M]], %{{.*}} : tensor<64xf32, #[[SM]]>
// CHECK-NOT:       tilegpu.convert_layout
// CHECK:         }
// CHECK:         tilegpu.convert_layout %[[R]] : tensor<64xf32, #[[SM]]> -> tensor<64xf32, #blocked>
func.func @carried_in_produced_layout(%init: tensor<64xf32, #bl>, %x: tensor<64xf32, #sm>, %n: i32) -> tensor<64xf32, #bl> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %init) -> (tensor<64xf32, #bl>) : i32 {
    %in = tilegpu.convert_layout %m : tensor<64xf32, #bl> -> tensor<64xf32, #sm>
    %new = arith.maximumf %in, %x : tensor<64xf32, #sm>
    %out = tilegpu.convert_layout %new : tensor<64xf32, #sm> -> tensor<64xf32, #bl>
    scf.yield %out : tensor<64xf32, #bl>
  }
  return %r : tensor<64xf32, #bl>
}

// -----

// A conversion of a broadcast row moves the row, not the broadcast tile.
#a = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @convert_the_row(
// CHECK:         %[[ROW:.*]] = tilegpu.convert_layout %{{.*}} : tensor<64xf32, #slice{{[0-9]*}}> -> tensor<64xf32, #[[S:slice[0-9]*]]>
// CHECK:         tile.expand_dims %[[ROW]] {axis = 0 : i32} : tensor<64xf32, #[[S]]> -> tensor<1x64xf32, #[[B:blocked[0-9]*]]>
// CHECK:         tile.broadcast {{.*}} -> tensor<64x64xf32, #[[B]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @convert_the_row(%row: tensor<64xf32, #tilegpu.slice<{dim = 0, parent = #a}>>) -> tensor<64x64xf32, #b> {
  %e = tile.expand_dims %row {axis = 0 : i32} : tensor<64xf32, #tilegpu.slice<{dim = 0, parent = #a}>> -> tensor<1x64xf32, #a>
  %bc = tile.broadcast %e : tensor<1x64xf32, #a> -> tensor<64x64xf32, #a>
  %c = tilegpu.convert_layout %bc : tensor<64x64xf32, #a> -> tensor<64x64xf32, #b>
  return %c : tensor<64x64xf32, #b>
}

// -----

#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>

// A row statistic (attention backward's logsumexp) loaded from cheap
// pointers, scaled, expanded and negated, then used in the mma layout: the
// small load is loaded again where it is used, in the slice of the mma
// layout, and the whole chain follows - no shared-memory conversion (and no
// CTA barriers) remains.
// CHECK-DAG: #[[MMA:mma[0-9]*]] = #tilegpu.mma<
// CHECK-DAG: #[[ROWS:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[MMA]]}>
// CHECK-LABEL: func.func @reload_row_statistic(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.load {{.*}} : tensor<64x!tile.ptr<f32>, #[[ROWS]]>
// CHECK:         arith.mulf {{.*}} : tensor<64xf32, #[[ROWS]]>
// CHECK:         tile.expand_dims {{.*}} -> tensor<64x1xf32, #[[MMA]]>
// CHECK:         arith.negf {{.*}} : tensor<64x1xf32, #[[MMA]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @reload_row_statistic(%lse: !tile.ptr<f32>, %n: i32) -> tensor<64x64xf32, #mma> {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #b>
  %base = tile.splat %lse : tensor<64x!tile.ptr<f32>, #b>
  %p = tile.addptr %base, %r : tensor<64x!tile.ptr<f32>, #b>, tensor<64xi32, #b>
  %ns = tile.splat %n : tensor<64xi32, #b>
  %m = arith.cmpi slt, %r, %ns : tensor<64xi32, #b>
  %zero = arith.constant dense<0.0> : tensor<64xf32, #b>
  %v = tile.load %p, %m, %zero : tensor<64x!tile.ptr<f32>, #b>
  %c = arith.constant dense<1.44> : tensor<64xf32, #b>
  %s = arith.mulf %v, %c : tensor<64xf32, #b>
  %sc = tilegpu.convert_layout %s : tensor<64xf32, #b> -> tensor<64xf32, #tilegpu.slice<{dim = 1, parent = #mma}>>
  %e = tile.expand_dims %sc {axis = 1 : i32} : tensor<64xf32, #tilegpu.slice<{dim = 1, parent = #mma}>> -> tensor<64x1xf32, #mma>
  %neg = arith.negf %e : tensor<64x1xf32, #mma>
  %bc = tile.broadcast %neg : tensor<64x1xf32, #mma> -> tensor<64x64xf32, #mma>
  return %bc : tensor<64x64xf32, #mma>
}

// -----

#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>

// Not reloaded: a load with another use (it would be read twice), and one
// of more than 256 elements (each thread would load many).
// CHECK-LABEL: func.func @no_reload(
// CHECK:         %[[V:.*]] = tile.load {{.*}} : tensor<64x!tile.ptr<f32>, #blocked>
// CHECK:         tilegpu.convert_layout %[[V]]
// CHECK:         %[[W:.*]] = tile.load {{.*}} : tensor<512x!tile.ptr<f32>, #blocked>
// CHECK:         tilegpu.convert_layout %[[W]]
func.func @no_reload(%x: !tile.ptr<f32>) -> (tensor<64xf32, #b>, tensor<64xf32, #tilegpu.slice<{dim = 1, parent = #mma}>>, tensor<512xf32, #tilegpu.slice<{dim = 1, parent = #mma}>>) {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #b>
  %base = tile.splat %x : tensor<64x!tile.ptr<f32>, #b>
  %p = tile.addptr %base, %r : tensor<64x!tile.ptr<f32>, #b>, tensor<64xi32, #b>
  %v = tile.load %p : tensor<64x!tile.ptr<f32>, #b>
  %c = tilegpu.convert_layout %v : tensor<64xf32, #b> -> tensor<64xf32, #tilegpu.slice<{dim = 1, parent = #mma}>>
  %r2 = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32, #b>
  %base2 = tile.splat %x : tensor<512x!tile.ptr<f32>, #b>
  %p2 = tile.addptr %base2, %r2 : tensor<512x!tile.ptr<f32>, #b>, tensor<512xi32, #b>
  %w = tile.load %p2 : tensor<512x!tile.ptr<f32>, #b>
  %d = tilegpu.convert_layout %w : tensor<512xf32, #b> -> tensor<512xf32, #tilegpu.slice<{dim = 1, parent = #mma}>>
  return %v, %c, %d : tensor<64xf32, #b>, tensor<64xf32, #tilegpu.slice<{dim = 1, parent = #mma}>>, tensor<512xf32, #tilegpu.slice<{dim = 1, parent = #mma}>>
}

// -----

#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>

// A block loaded through TMA and computed on elementwise only for a
// conversion into the accumulator's layout (a GEMM epilogue's operand,
// GELU's input): loaded and computed in that layout - the threads read it
// from the TMA's tile in any layout - and the conversion is gone. The
// constant is made there too.
// CHECK-LABEL: func.func @tma_operand_into_accumulator(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.descriptor_load {{.*}} {tilegpu.tma, tilegpu.tma_swizzle = 128 : i32} : {{.*}} -> tensor<64x64xbf16, #[[M:mma[0-9]*]]>
// CHECK:         arith.extf {{.*}} : tensor<64x64xbf16, #[[M]]> to tensor<64x64xf32, #[[M]]>
// CHECK:         arith.mulf {{.*}} : tensor<64x64xf32, #[[M]]>
// CHECK:         arith.addf {{.*}} : tensor<64x64xf32, #[[M]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @tma_operand_into_accumulator(%d: !tile.tensordesc<tensor<64x64xbf16>>, %i: i32,
                                        %acc: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  %v = tile.descriptor_load %d[%i, %i] {tilegpu.tma, tilegpu.tma_swizzle = 128 : i32} : !tile.tensordesc<tensor<64x64xbf16>> -> tensor<64x64xbf16, #b>
  %f = arith.extf %v : tensor<64x64xbf16, #b> to tensor<64x64xf32, #b>
  %two = arith.constant dense<2.0> : tensor<64x64xf32, #b>
  %sq = arith.mulf %f, %f : tensor<64x64xf32, #b>
  %g = arith.addf %sq, %two : tensor<64x64xf32, #b>
  %c = tilegpu.convert_layout %g : tensor<64x64xf32, #b> -> tensor<64x64xf32, #mma>
  %r = arith.mulf %acc, %c : tensor<64x64xf32, #mma>
  return %r : tensor<64x64xf32, #mma>
}

// -----

#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>

// Not when the loaded data has another user in its own layout (it would
// then be read twice, or converted anyway), nor from a row-major TMA block
// (no swizzle: an mma fragment's rows would share banks), nor for a load
// that is not TMA's (a global load's layout decides its coalescing).
// CHECK-LABEL: func.func @tma_operand_used_twice(
// CHECK:         tile.descriptor_load {{.*}} -> tensor<64x64xbf16, #[[B:blocked[0-9]*]]>
// CHECK:         tilegpu.convert_layout {{.*}} : tensor<64x64xf32, #[[B]]> -> tensor<64x64xf32, #mma
// CHECK-LABEL: func.func @tma_unswizzled(
// CHECK:         tile.descriptor_load {{.*}} -> tensor<64x64xbf16, #[[B1:blocked[0-9]*]]>
// CHECK:         tilegpu.convert_layout
// CHECK-LABEL: func.func @not_tma(
// CHECK:         tile.descriptor_load {{.*}} -> tensor<64x64xbf16, #[[B2:blocked[0-9]*]]>
// CHECK:         tilegpu.convert_layout
func.func @tma_operand_used_twice(%d: !tile.tensordesc<tensor<64x64xbf16>>, %i: i32,
                                  %acc: tensor<64x64xf32, #mma>) -> (tensor<64x64xf32, #mma>, tensor<64x64xf32, #b>) {
  %v = tile.descriptor_load %d[%i, %i] {tilegpu.tma, tilegpu.tma_swizzle = 128 : i32} : !tile.tensordesc<tensor<64x64xbf16>> -> tensor<64x64xbf16, #b>
  %f = arith.extf %v : tensor<64x64xbf16, #b> to tensor<64x64xf32, #b>
  %c = tilegpu.convert_layout %f : tensor<64x64xf32, #b> -> tensor<64x64xf32, #mma>
  %r = arith.mulf %acc, %c : tensor<64x64xf32, #mma>
  return %r, %f : tensor<64x64xf32, #mma>, tensor<64x64xf32, #b>
}
func.func @tma_unswizzled(%d: !tile.tensordesc<tensor<64x64xbf16>>, %i: i32,
                          %acc: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  %v = tile.descriptor_load %d[%i, %i] {tilegpu.tma} : !tile.tensordesc<tensor<64x64xbf16>> -> tensor<64x64xbf16, #b>
  %f = arith.extf %v : tensor<64x64xbf16, #b> to tensor<64x64xf32, #b>
  %c = tilegpu.convert_layout %f : tensor<64x64xf32, #b> -> tensor<64x64xf32, #mma>
  %r = arith.mulf %acc, %c : tensor<64x64xf32, #mma>
  return %r : tensor<64x64xf32, #mma>
}
func.func @not_tma(%d: !tile.tensordesc<tensor<64x64xbf16>>, %i: i32,
                   %acc: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  %v = tile.descriptor_load %d[%i, %i] : !tile.tensordesc<tensor<64x64xbf16>> -> tensor<64x64xbf16, #b>
  %f = arith.extf %v : tensor<64x64xbf16, #b> to tensor<64x64xf32, #b>
  %c = tilegpu.convert_layout %f : tensor<64x64xf32, #b> -> tensor<64x64xf32, #mma>
  %r = arith.mulf %acc, %c : tensor<64x64xf32, #mma>
  return %r : tensor<64x64xf32, #mma>
}

// -----

#row = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#b8 = #tilegpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b1 = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A warp a row (LayerNorm at several rows a program): the weight row,
// loaded in 16-byte vectors across the warps, is loaded again in the slice
// every warp needs - its vectors kept (each lane 8 contiguous elements) -
// instead of moving through shared memory.
// CHECK-DAG: #[[ROW:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1]
// CHECK-DAG: #[[COLS:slice[0-9]*]] = #tilegpu.slice<{dim = 0, parent = #[[ROW]]}>
// CHECK-LABEL: func.func @row_reloaded_in_its_slice(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.load {{.*}} {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 8 : i32} : tensor<1024x!tile.ptr<bf16>, #[[COLS]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @row_reloaded_in_its_slice(%w: !tile.ptr<bf16>, %x: tensor<4x1024xbf16, #row>) -> tensor<4x1024xbf16, #row> {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b8>
  %base = tile.splat %w : tensor<1024x!tile.ptr<bf16>, #b8>
  %p = tile.addptr %base, %r : tensor<1024x!tile.ptr<bf16>, #b8>, tensor<1024xi32, #b8>
  %v = tile.load %p {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 8 : i32} : tensor<1024x!tile.ptr<bf16>, #b8>
  %c = tilegpu.convert_layout %v : tensor<1024xbf16, #b8> -> tensor<1024xbf16, #tilegpu.slice<{dim = 0, parent = #row}>>
  %e = tile.expand_dims %c {axis = 0 : i32} : tensor<1024xbf16, #tilegpu.slice<{dim = 0, parent = #row}>> -> tensor<1x1024xbf16, #row>
  %bc = tile.broadcast %e : tensor<1x1024xbf16, #row> -> tensor<4x1024xbf16, #row>
  %y = arith.mulf %x, %bc : tensor<4x1024xbf16, #row>
  return %y : tensor<4x1024xbf16, #row>
}

// -----

#row = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#b1 = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A row statistic reduced into a slice (a warp a row), scaled, and both
// stored (through pointers made in another layout) and used in that slice:
// the chain runs in the slice, the store takes its pointers there, and no
// conversion remains - where each went through shared memory before.
// CHECK-DAG: #[[ROW:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 8]
// CHECK-DAG: #[[S:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[ROW]]}>
// CHECK-LABEL: func.func @row_statistic_stays_in_its_slice(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         math.rsqrt {{.*}} : tensor<4xf32, #[[S]]>
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.store {{.*}} : tensor<4x!tile.ptr<f32>, #[[S]]>
// CHECK-NOT:     tilegpu.convert_layout
func.func @row_statistic_stays_in_its_slice(%out: !tile.ptr<f32>, %x: tensor<4x1024xf32, #row>, %n: f32) -> tensor<4x1024xf32, #row> {
  %sum = tile.reduce(%x) {axis = 1 : i32} : (tensor<4x1024xf32, #row>) -> tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  %c = tilegpu.convert_layout %sum : tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>> -> tensor<4xf32, #b1>
  %ns = tile.splat %n : tensor<4xf32, #b1>
  %mean = arith.divf %c, %ns : tensor<4xf32, #b1>
  %rstd = math.rsqrt %mean : tensor<4xf32, #b1>
  %r = tile.make_range {start = 0 : i32, end = 4 : i32} : tensor<4xi32, #b1>
  %base = tile.splat %out : tensor<4x!tile.ptr<f32>, #b1>
  %p = tile.addptr %base, %r : tensor<4x!tile.ptr<f32>, #b1>, tensor<4xi32, #b1>
  tile.store %p, %rstd {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 1 : i32} : tensor<4x!tile.ptr<f32>, #b1>
  %back = tilegpu.convert_layout %rstd : tensor<4xf32, #b1> -> tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>>
  %e = tile.expand_dims %back {axis = 1 : i32} : tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>> -> tensor<4x1xf32, #row>
  %bc = tile.broadcast %e : tensor<4x1xf32, #row> -> tensor<4x1024xf32, #row>
  %y = arith.mulf %x, %bc : tensor<4x1024xf32, #row>
  return %y : tensor<4x1024xf32, #row>
}

// -----

#row = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#b1 = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A row statistic loaded a step ahead (LayerNorm's backward prefetching the
// next rows' rstd) and only converted in the loop: carried in the layout
// the body needs, the load reloaded there - no conversion an iteration.
// CHECK-DAG: #[[ROW:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 8]
// CHECK-DAG: #[[S:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[ROW]]}>
// CHECK-LABEL: func.func @prefetched_row_statistic(
// CHECK:         scf.for {{.*}} -> (tensor<4x1024xf32, #[[ROW]]>, tensor<4xf32, #[[S]]>)
// CHECK-NOT:       tilegpu.convert_layout
// CHECK:           tile.load {{.*}} : tensor<4x!tile.ptr<f32>, #[[S]]>
// CHECK-NOT:       tilegpu.convert_layout
// CHECK:           scf.yield
func.func @prefetched_row_statistic(%p: !tile.ptr<f32>, %x: tensor<4x1024xf32, #row>, %n: i32) -> tensor<4x1024xf32, #row> {
  %r = tile.make_range {start = 0 : i32, end = 4 : i32} : tensor<4xi32, #b1>
  %base = tile.splat %p : tensor<4x!tile.ptr<f32>, #b1>
  %ptrs = tile.addptr %base, %r : tensor<4x!tile.ptr<f32>, #b1>, tensor<4xi32, #b1>
  %first = tile.load %ptrs : tensor<4x!tile.ptr<f32>, #b1>
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %res:2 = scf.for %i = %c0 to %n step %c4 iter_args(%acc = %x, %s = %first) -> (tensor<4x1024xf32, #row>, tensor<4xf32, #b1>) : i32 {
    %sc = tilegpu.convert_layout %s : tensor<4xf32, #b1> -> tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>>
    %e = tile.expand_dims %sc {axis = 1 : i32} : tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>> -> tensor<4x1xf32, #row>
    %bc = tile.broadcast %e : tensor<4x1xf32, #row> -> tensor<4x1024xf32, #row>
    %y = arith.mulf %acc, %bc : tensor<4x1024xf32, #row>
    %off = tile.splat %i : tensor<4xi32, #b1>
    %pn = tile.addptr %ptrs, %off : tensor<4x!tile.ptr<f32>, #b1>, tensor<4xi32, #b1>
    %next = tile.load %pn : tensor<4x!tile.ptr<f32>, #b1>
    scf.yield %y, %next : tensor<4x1024xf32, #row>, tensor<4xf32, #b1>
  }
  return %res#0 : tensor<4x1024xf32, #row>
}

// -----

#row = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#b4 = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Column sums reduced across a warp-a-row tile's rows (into the slice every
// warp holds) are stored from there in vectors as wide as coalesce chose,
// rather than moved through shared memory to the pointers' layout.
// CHECK-DAG: #[[ROW:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 8]
// CHECK-DAG: #[[COLS:slice[0-9]*]] = #tilegpu.slice<{dim = 0, parent = #[[ROW]]}>
// CHECK-LABEL: func.func @column_sums_stored_from_their_slice(
// CHECK-NOT:     tilegpu.convert_layout
// CHECK:         tile.store {{.*}} {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32} : tensor<1024x!tile.ptr<f32>, #[[COLS]]>
func.func @column_sums_stored_from_their_slice(%out: !tile.ptr<f32>, %x: tensor<4x1024xf32, #row>) {
  %s = tile.reduce(%x) {axis = 0 : i32} : (tensor<4x1024xf32, #row>) -> tensor<1024xf32, #tilegpu.slice<{dim = 0, parent = #row}>> {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    tile.reduce.return %t : f32
  }
  %c = tilegpu.convert_layout %s : tensor<1024xf32, #tilegpu.slice<{dim = 0, parent = #row}>> -> tensor<1024xf32, #b4>
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b4>
  %base = tile.splat %out : tensor<1024x!tile.ptr<f32>, #b4>
  %p = tile.addptr %base, %r : tensor<1024x!tile.ptr<f32>, #b4>, tensor<1024xi32, #b4>
  tile.store %p, %c {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32} : tensor<1024x!tile.ptr<f32>, #b4>
  return
}

// -----

#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A scalar load (one use, a splat) is left alone by the tile rewrites.
// CHECK-LABEL: func.func @scalar_load_is_no_row(
// CHECK:         %[[V:.*]] = tile.load %{{.*}} : !tile.ptr<f32>
// CHECK:         tile.splat %[[V]] : tensor<64xf32, #{{.*}}>
func.func @scalar_load_is_no_row(%p: !tile.ptr<f32>) -> tensor<64xf32, #b> {
  %v = tile.load %p : !tile.ptr<f32>
  %s = tile.splat %v : tensor<64xf32, #b>
  return %s : tensor<64xf32, #b>
}

// -----

#mma = #tilegpu.mma<{warpsPerCTA = [4, 1]}>
#b4 = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A bias row met in an mma accumulator's column slice: each thread holds 2
// contiguous columns of every 8 there (128 of the 512), fewer than the load's
// 4-wide vectors and more accesses than kReloadRowAccesses - it stays loaded
// in vectors and converted (reloadsAsRow declines).
// CHECK-LABEL: func.func @row_in_an_mma_slice_stays_converted(
// CHECK:         %[[V:.*]] = tile.load {{.*}} {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32} : tensor<512x!tile.ptr<f32>, #blocked>
// CHECK:         tilegpu.convert_layout %[[V]] : tensor<512xf32, #blocked> -> tensor<512xf32, #slice>
func.func @row_in_an_mma_slice_stays_converted(%w: !tile.ptr<f32>, %acc: tensor<64x512xf32, #mma>) -> tensor<64x512xf32, #mma> {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32, #b4>
  %base = tile.splat %w : tensor<512x!tile.ptr<f32>, #b4>
  %p = tile.addptr %base, %r : tensor<512x!tile.ptr<f32>, #b4>, tensor<512xi32, #b4>
  %v = tile.load %p {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32} : tensor<512x!tile.ptr<f32>, #b4>
  %c = tilegpu.convert_layout %v : tensor<512xf32, #b4> -> tensor<512xf32, #tilegpu.slice<{dim = 0, parent = #mma}>>
  %e = tile.expand_dims %c {axis = 0 : i32} : tensor<512xf32, #tilegpu.slice<{dim = 0, parent = #mma}>> -> tensor<1x512xf32, #mma>
  %bc = tile.broadcast %e : tensor<1x512xf32, #mma> -> tensor<64x512xf32, #mma>
  %y = arith.addf %acc, %bc : tensor<64x512xf32, #mma>
  return %y : tensor<64x512xf32, #mma>
}

// -----

#row = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#b1 = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A row statistic stored under a mask computed from loaded values (not
// cheap to recompute in the statistic's layout): StoreInSourceLayout leaves
// the store, and the statistic's conversion, where they are.
// CHECK-LABEL: func.func @statistic_stored_under_a_loaded_mask(
// CHECK:         %[[C:.*]] = tilegpu.convert_layout %{{.*}} : tensor<4xf32, #slice> -> tensor<4xf32, #blocked1>
// CHECK:         tile.store %{{.*}}, %[[C]], %{{.*}} : tensor<4x!tile.ptr<f32>, #blocked1>
func.func @statistic_stored_under_a_loaded_mask(%out: !tile.ptr<f32>, %flags: !tile.ptr<i32>, %x: tensor<4x1024xf32, #row>) {
  %sum = tile.reduce(%x) {axis = 1 : i32} : (tensor<4x1024xf32, #row>) -> tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>> {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    tile.reduce.return %t : f32
  }
  %c = tilegpu.convert_layout %sum : tensor<4xf32, #tilegpu.slice<{dim = 1, parent = #row}>> -> tensor<4xf32, #b1>
  %r = tile.make_range {start = 0 : i32, end = 4 : i32} : tensor<4xi32, #b1>
  %base = tile.splat %out : tensor<4x!tile.ptr<f32>, #b1>
  %p = tile.addptr %base, %r : tensor<4x!tile.ptr<f32>, #b1>, tensor<4xi32, #b1>
  %fb = tile.splat %flags : tensor<4x!tile.ptr<i32>, #b1>
  %fp = tile.addptr %fb, %r : tensor<4x!tile.ptr<i32>, #b1>, tensor<4xi32, #b1>
  %f = tile.load %fp : tensor<4x!tile.ptr<i32>, #b1>
  %g = arith.muli %f, %f : tensor<4xi32, #b1>
  %fp2 = tile.addptr %fb, %g : tensor<4x!tile.ptr<i32>, #b1>, tensor<4xi32, #b1>
  %h = tile.load %fp2 : tensor<4x!tile.ptr<i32>, #b1>
  %zero = arith.constant dense<0> : tensor<4xi32, #b1>
  %m = arith.cmpi ne, %h, %zero : tensor<4xi32, #b1>
  tile.store %p, %c, %m : tensor<4x!tile.ptr<f32>, #b1>
  return
}

// -----

#row = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#b4 = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Column sums scaled after their conversion: wider than a statistic
// (kReloadElements) and not stored straight from the conversion, so the
// store keeps coalesce's layout and vectors (storesAsRow covers only the
// straight store).
// CHECK-LABEL: func.func @wide_row_scaled_after_its_conversion(
// CHECK:         tilegpu.convert_layout %{{.*}} : tensor<1024xf32, #slice> -> tensor<1024xf32, #blocked1>
// CHECK:         tile.store {{.*}} {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32} : tensor<1024x!tile.ptr<f32>, #blocked1>
func.func @wide_row_scaled_after_its_conversion(%out: !tile.ptr<f32>, %x: tensor<4x1024xf32, #row>, %k: f32) {
  %s = tile.reduce(%x) {axis = 0 : i32} : (tensor<4x1024xf32, #row>) -> tensor<1024xf32, #tilegpu.slice<{dim = 0, parent = #row}>> {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    tile.reduce.return %t : f32
  }
  %c = tilegpu.convert_layout %s : tensor<1024xf32, #tilegpu.slice<{dim = 0, parent = #row}>> -> tensor<1024xf32, #b4>
  %ks = tile.splat %k : tensor<1024xf32, #b4>
  %y = arith.mulf %c, %ks : tensor<1024xf32, #b4>
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b4>
  %base = tile.splat %out : tensor<1024x!tile.ptr<f32>, #b4>
  %p = tile.addptr %base, %r : tensor<1024x!tile.ptr<f32>, #b4>, tensor<1024xi32, #b4>
  tile.store %p, %y {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32} : tensor<1024x!tile.ptr<f32>, #b4>
  return
}
