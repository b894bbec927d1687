// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 | FileCheck %s
// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=8 | FileCheck %s --check-prefix=W8
// RUN: not tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=3 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: num-warps must be a power of two, got 3

// 1-D tiles: 4 contiguous elements per thread (128-bit f32 accesses) when
// the tile has that many, 32 lanes, warps along the tile; constants are
// retyped with their values.
// CHECK: #[[B:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK: module attributes {tilegpu.num_warps = 4 : i32}
// CHECK-LABEL: func.func @vector(
// CHECK:         arith.constant dense<0xFF800000> : tensor<1024xf32, #[[B]]>
// CHECK:         tile.make_range {{.*}} : tensor<1024xi32, #[[B]]>
// CHECK:         tile.load {{.*}} : tensor<1024x!tile.ptr<f32>, #[[B]]>
// W8: warpsPerCTA = [8]
// W8: module attributes {tilegpu.num_warps = 8 : i32}
func.func @vector(%x: !tile.ptr<f32>, %n: i32) {
  %ninf = arith.constant dense<0xFF800000> : tensor<1024xf32>
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ns = tile.splat %n : tensor<1024xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<1024xi32>
  %ps = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %ps, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p, %m, %ninf : tensor<1024x!tile.ptr<f32>>
  tile.store %p, %v, %m : tensor<1024x!tile.ptr<f32>>
  return
}

// -----

// 2-D: lanes along the last dim, warps along rows. A row reduction yields
// the slice of its operand's layout, converted back for its users; an
// expand_dims operand is converted to the slice of its result's layout; a
// broadcast operand shares its result's layout.
// CHECK-DAG: #[[B2:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[ROW:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-DAG: #[[COL:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[S:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[B2]]}>
// CHECK-DAG: #[[S2:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[COL]]}>
// CHECK-LABEL: func.func @rows(
// CHECK:         %[[SUM:.*]] = tile.reduce(%{{.*}}) {axis = 1 : i32} : (tensor<16x64xf32, #[[B2]]>) -> tensor<16xf32, #[[S]]>
// CHECK:         %[[BACK:.*]] = tilegpu.convert_layout %[[SUM]] : tensor<16xf32, #[[S]]> -> tensor<16xf32, #[[ROW]]>
// CHECK:         %[[TO_SLICE:.*]] = tilegpu.convert_layout %[[BACK]] : tensor<16xf32, #[[ROW]]> -> tensor<16xf32, #[[S2]]>
// CHECK:         %[[E:.*]] = tile.expand_dims %[[TO_SLICE]] {axis = 1 : i32} : tensor<16xf32, #[[S2]]> -> tensor<16x1xf32, #[[COL]]>
// CHECK:         %[[SHARED:.*]] = tilegpu.convert_layout %[[E]] : tensor<16x1xf32, #[[COL]]> -> tensor<16x1xf32, #[[B2]]>
// CHECK:         tile.broadcast %[[SHARED]] : tensor<16x1xf32, #[[B2]]> -> tensor<16x64xf32, #[[B2]]>
func.func @rows(%t: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %sum = tile.reduce(%t) {axis = 1 : i32} : (tensor<16x64xf32>) -> tensor<16xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  %e = tile.expand_dims %sum {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  %bc = tile.broadcast %e : tensor<16x1xf32> -> tensor<16x64xf32>
  %d = arith.subf %t, %bc : tensor<16x64xf32>
  return %d : tensor<16x64xf32>
}

// -----

// A scan runs in a layout ordered along its axis (ScanToLLVM): the axis
// fastest, its lanes and warps first, each thread a run of it (1024 over 4
// warps: 8 consecutive elements a thread - the default's 4-element vectors
// would wrap round and put elements 512 apart in one thread); operands and
// results convert from and to the default.
// CHECK-DAG: #[[D:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-DAG: #[[SC:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// Down the columns of [16, 64]: lanes along dim 0 first.
// CHECK-DAG: #[[COLS:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]}>
// CHECK-LABEL: func.func @running_sum(
// CHECK:         %[[IN:.*]] = tilegpu.convert_layout %{{.*}} : tensor<1024xf32, #[[D]]> -> tensor<1024xf32, #[[SC]]>
// CHECK:         %[[S:.*]] = tile.scan(%[[IN]]) {axis = 0 : i32} : (tensor<1024xf32, #[[SC]]>) -> tensor<1024xf32, #[[SC]]>
// CHECK:         tilegpu.convert_layout %[[S]] : tensor<1024xf32, #[[SC]]> -> tensor<1024xf32, #[[D]]>
// CHECK-LABEL: func.func @down_columns(
// CHECK:         tile.scan(%{{.*}}) {axis = 0 : i32, reverse} : (tensor<16x64xf32, #[[COLS]]>) -> tensor<16x64xf32, #[[COLS]]>
func.func @running_sum(%t: tensor<1024xf32>) -> tensor<1024xf32> {
  %r = tile.scan(%t) {axis = 0 : i32} : (tensor<1024xf32>) -> tensor<1024xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return %r : tensor<1024xf32>
}
func.func @down_columns(%t: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = tile.scan(%t) {axis = 0 : i32, reverse} : (tensor<16x64xf32>) -> tensor<16x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return %r : tensor<16x64xf32>
}

// -----

// Loop-carried tiles keep one layout through the loop.
// CHECK-LABEL: func.func @loop(
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<128xf32, #[[L:blocked[0-9]*]]>)
// CHECK:           scf.yield %{{.*}} : tensor<128xf32, #[[L]]>
func.func @loop(%n: i32) -> tensor<128xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant dense<0.0> : tensor<128xf32>
  %one = arith.constant dense<1.0> : tensor<128xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<128xf32>) : i32 {
    %s = arith.addf %acc, %one : tensor<128xf32>
    scf.yield %s : tensor<128xf32>
  }
  return %r : tensor<128xf32>
}

// -----

// tl::debug_barrier is the GPU's barrier of the program's threads.
// CHECK-LABEL: func.func @debug_barrier(
// CHECK-NEXT:    tilegpu.barrier
// CHECK-NEXT:    return
func.func @debug_barrier() {
  tile.debug_barrier
  return
}
