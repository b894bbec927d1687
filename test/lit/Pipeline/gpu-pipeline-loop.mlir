// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | FileCheck %s
// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | tegulac - --chip=sm_80 | FileCheck %s --check-prefix=PTX

// A dynamic loop carrying a tile (sum of n rows of 128 columns): the loop
// keeps one register per element it carries and becomes LLVM branches.

// CHECK-LABEL: llvm.func @column_sums(
// CHECK-NOT:     scf.
// CHECK:         llvm.cond_br
// CHECK:         llvm.fadd
// CHECK:         llvm.br
// PTX: .visible .entry column_sums(
// PTX: add.rn.f32
// PTX: bra
func.func @column_sums(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  %cols = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : tensor<128x!tile.ptr<f32>>
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<128xf32>) : i32 {
    %row = arith.muli %i, %c128 : i32
    %rows = tile.splat %row : tensor<128xi32>
    %offs = arith.addi %rows, %cols : tensor<128xi32>
    %p = tile.addptr %xs, %offs : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
    %v = tile.load %p : tensor<128x!tile.ptr<f32>>
    %next = arith.addf %acc, %v : tensor<128xf32>
    scf.yield %next : tensor<128xf32>
  }
  %os = tile.splat %out : tensor<128x!tile.ptr<f32>>
  %po = tile.addptr %os, %cols : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  tile.store %po, %sum : tensor<128x!tile.ptr<f32>>
  return
}
