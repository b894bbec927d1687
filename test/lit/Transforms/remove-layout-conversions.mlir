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
