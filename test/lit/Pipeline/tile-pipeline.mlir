// RUN: tegula-opt %s --tegula-tile-pipeline | FileCheck %s

// The tile pipeline as the DSL's traced output meets it: literals splatted
// per use, repeated address arithmetic, an all-true mask. Canonicalisation
// folds the constant splats and drops the mask; CSE merges the two
// identical address computations.

// CHECK-LABEL: func.func @scale(
// CHECK-SAME:    %[[X:.*]]: !tile.ptr<f32>
// CHECK-DAG:     %[[TWO:.*]] = arith.constant dense<2.000000e+00> : tensor<64xf32>
// CHECK-DAG:     %[[R:.*]] = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK:         %[[S:.*]] = tile.splat %[[X]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    %[[P:.*]] = tile.addptr %[[S]], %[[R]]
// CHECK-NEXT:    %[[V:.*]] = tile.load %[[P]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %[[V]], %[[TWO]] : tensor<64xf32>
// CHECK-NEXT:    tile.store %[[P]], %[[M]] : tensor<64x!tile.ptr<f32>>
// CHECK-NEXT:    return
func.func @scale(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %true = arith.constant true
  %mask = tile.splat %true : tensor<64xi1>
  %s0 = tile.splat %x : tensor<64x!tile.ptr<f32>>
  %p0 = tile.addptr %s0, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %v = tile.load %p0, %mask : tensor<64x!tile.ptr<f32>>
  %two = arith.constant 2.0 : f32
  %twos = tile.splat %two : tensor<64xf32>
  %m = arith.mulf %v, %twos : tensor<64xf32>
  %s1 = tile.splat %x : tensor<64x!tile.ptr<f32>>
  %p1 = tile.addptr %s1, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  tile.store %p1, %m, %mask : tensor<64x!tile.ptr<f32>>
  return
}
