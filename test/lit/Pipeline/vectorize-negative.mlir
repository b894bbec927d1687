// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --coalesce | FileCheck %s

// Accesses that must stay scalar: the analysis cannot prove a whole group
// of 4 f32 is aligned and under one mask value.

// `offs <= n` changes inside a group (e.g. n = 16: elements 17..19 are off).
// CHECK-LABEL: func.func @less_equal(
// CHECK:         tile.load {{.*}}tilegpu.vector_width = 1 : i32
func.func @less_equal(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                      %n: i32 {tile.divisibility = 16 : i32}) -> tensor<1024xf32> {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ns = tile.splat %n : tensor<1024xi32>
  %m = arith.cmpi sle, %r, %ns : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p, %m : tensor<1024x!tile.ptr<f32>>
  return %v : tensor<1024xf32>
}

// -----

// `offs != n` is one element wide.
// CHECK-LABEL: func.func @not_equal(
// CHECK:         tile.load {{.*}}tilegpu.vector_width = 1 : i32
func.func @not_equal(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                     %n: i32 {tile.divisibility = 16 : i32}) -> tensor<1024xf32> {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ns = tile.splat %n : tensor<1024xi32>
  %m = arith.cmpi ne, %r, %ns : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p, %m : tensor<1024x!tile.ptr<f32>>
  return %v : tensor<1024xf32>
}

// -----

// Rows at an unknown stride: x + rows[:, None] * stride + cols[None, :]
// starts each row at an address of unknown alignment.
// CHECK-LABEL: func.func @row_stride(
// CHECK:         tile.load {{.*}}tilegpu.vector_width = 1 : i32
func.func @row_stride(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %stride: i32) -> tensor<16x64xf32> {
  %rows = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %cols = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %st = tile.splat %stride : tensor<16xi32>
  %ro = arith.muli %rows, %st : tensor<16xi32>
  %r2 = tile.expand_dims %ro {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %c2 = tile.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %r2 : tensor<16x1xi32> -> tensor<16x64xi32>
  %cb = tile.broadcast %c2 : tensor<1x64xi32> -> tensor<16x64xi32>
  %offs = arith.addi %rb, %cb : tensor<16x64xi32>
  %xs = tile.splat %x : tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %offs : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  return %v : tensor<16x64xf32>
}

// -----

// The same with a stride divisible by 16: rows stay 16-byte aligned.
// CHECK-LABEL: func.func @aligned_row_stride(
// CHECK:         tile.load {{.*}}tilegpu.vector_width = 4 : i32
func.func @aligned_row_stride(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                              %stride: i32 {tile.divisibility = 16 : i32}) -> tensor<16x64xf32> {
  %rows = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %cols = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %st = tile.splat %stride : tensor<16xi32>
  %ro = arith.muli %rows, %st : tensor<16xi32>
  %r2 = tile.expand_dims %ro {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %c2 = tile.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %r2 : tensor<16x1xi32> -> tensor<16x64xi32>
  %cb = tile.broadcast %c2 : tensor<1x64xi32> -> tensor<16x64xi32>
  %offs = arith.addi %rb, %cb : tensor<16x64xi32>
  %xs = tile.splat %x : tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %offs : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  return %v : tensor<16x64xf32>
}
