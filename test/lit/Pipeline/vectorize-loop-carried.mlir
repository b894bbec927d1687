// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --coalesce | FileCheck %s

// Loop-carried values advanced by the same amount every iteration are
// init + k * step. A scalar offset from 0 advanced by 64 (a block pointer's,
// `k += BK`) stays a multiple of 64: the accesses at it are 16-byte vectors.

// CHECK-LABEL: func.func @carried_offset
// CHECK: tile.load {{.*}}tilegpu.vector_width = 4 : i32
// CHECK: tile.store {{.*}}tilegpu.vector_width = 4 : i32
func.func @carried_offset(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                          %y: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                          %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %ys = tile.splat %y : tensor<1024x!tile.ptr<f32>>
  %end = scf.for %i = %c0 to %n step %c1 iter_args(%off = %c0) -> (i32) : i32 {
    %os = tile.splat %off : tensor<1024xi32>
    %offs = arith.addi %os, %r : tensor<1024xi32>
    %p = tile.addptr %xs, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
    %q = tile.addptr %ys, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
    %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
    tile.store %q, %v : tensor<1024x!tile.ptr<f32>>
    %next = arith.addi %off, %c64 : i32
    scf.yield %next : i32
  }
  return
}

// -----

// A pointer tile advanced by a run each iteration is a run only at the
// first: x, x + r, x + 2r, ... Its loads stay scalar (they were read as
// 16-byte vectors of consecutive elements, which the second and later
// iterations are not).

// CHECK-LABEL: func.func @advanced_by_a_run
// CHECK: tile.load
// CHECK-NOT: tilegpu.vector_width = 4
// CHECK: scf.yield
func.func @advanced_by_a_run(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                             %y: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                             %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %ys = tile.splat %y : tensor<1024x!tile.ptr<f32>>
  %q = tile.addptr %ys, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %acc0 = arith.constant dense<0.0> : tensor<1024xf32>
  %res:2 = scf.for %i = %c0 to %n step %c1 iter_args(%p = %xs, %acc = %acc0) -> (tensor<1024x!tile.ptr<f32>>, tensor<1024xf32>) : i32 {
    %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
    %s = arith.addf %acc, %v : tensor<1024xf32>
    %next = tile.addptr %p, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
    scf.yield %next, %s : tensor<1024x!tile.ptr<f32>>, tensor<1024xf32>
  }
  tile.store %q, %res#1 : tensor<1024x!tile.ptr<f32>>
  return
}
