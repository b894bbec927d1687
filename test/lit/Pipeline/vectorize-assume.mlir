// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --coalesce | FileCheck %s

// tile.assume (tl::multiple_of, tl::max_contiguous) tells the axis analysis
// what it cannot prove; accesses through the promised offsets are vectors.

// A start loaded from memory, promised a multiple of 4: runs of 4 f32 from
// a 16-byte boundary. Without the promise the loads stay scalar.
// CHECK-LABEL: func.func @loaded_start(
// CHECK:         tile.load {{.*}}tilegpu.vector_width = 4 : i32
// CHECK:         tile.load {{.*}}tilegpu.vector_width = 1 : i32
func.func @loaded_start(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                        %starts: !tile.ptr<i32> {tile.divisibility = 16 : i32}) -> (tensor<1024xf32>, tensor<1024xf32>) {
  %s = tile.load %starts : !tile.ptr<i32>
  %promised = tile.assume %s divisibility = [4] contiguity = [] : i32
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ps = tile.splat %promised : tensor<1024xi32>
  %offs = arith.addi %ps, %r : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
  %us = tile.splat %s : tensor<1024xi32>
  %uoffs = arith.addi %us, %r : tensor<1024xi32>
  %q = tile.addptr %xs, %uoffs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %w = tile.load %q : tensor<1024x!tile.ptr<f32>>
  return %v, %w : tensor<1024xf32>, tensor<1024xf32>
}

// -----

// Offsets wrapped by a modulo (the analysis drops their runs), promised
// runs of 1024 starting at multiples of 1024.
// CHECK-LABEL: func.func @wrapped(
// CHECK:         tile.load {{.*}}tilegpu.vector_width = 4 : i32
func.func @wrapped(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32) -> tensor<1024xf32> {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ns = tile.splat %n : tensor<1024xi32>
  %wrapped = arith.remsi %r, %ns : tensor<1024xi32>
  %offs = tile.assume %wrapped divisibility = [1024] contiguity = [1024] : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
  return %v : tensor<1024xf32>
}
