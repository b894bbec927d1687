// RUN: tegula-opt %s --drop-interpreter-checks | FileCheck %s
// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | FileCheck %s --check-prefix=GPU

// An interpreter-only assertion (a block pointer's unchecked dimension stays
// inside the tensor) is erased; tl::device_assert's stays. In the GPU
// pipeline the erased check's arithmetic goes too: no report site names it.

// CHECK-LABEL: func.func @checks(
// CHECK-NOT:     unchecked dimension
// CHECK:         tile.assert %{{.*}}, "x must be positive" : tensor<64xi1>
// CHECK-NOT:     unchecked dimension
// CHECK:         return
// GPU:     tegula.error_sites
// GPU-SAME: x must be positive
// GPU-NOT: unchecked dimension
func.func @checks(%x: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %nn = tile.splat %n : tensor<64xi32>
  %inside = arith.cmpi slt, %r, %nn : tensor<64xi32>
  tile.assert %inside, "unchecked dimension 0 leaves the tensor" {interpreter_only} : tensor<64xi1>
  %p = tile.splat %x : tensor<64x!tile.ptr<f32>>
  %ps = tile.addptr %p, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %v = tile.load %ps : tensor<64x!tile.ptr<f32>>
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %positive = arith.cmpf ogt, %v, %zero : tensor<64xf32>
  tile.assert %positive, "x must be positive" : tensor<64xi1>
  return
}
