// RUN: tegula-opt %s -split-input-file -lower-tensor-descriptors | FileCheck %s
// RUN: tegula-opt %s -split-input-file -lower-tensor-descriptors -convert-tile-to-tilegpu -coalesce | FileCheck %s --check-prefix=COALESCE

// A block load becomes pointers base + i*stride + j (i64) and the mask of
// coordinates inside [0, M) x [0, N), zeros elsewhere; the descriptor
// asserts TMA's stride rule (2 bytes x stride a multiple of 16).
// CHECK-LABEL: func.func @load_block
// CHECK: arith.remsi
// CHECK: tile.assert %{{.*}}, "tensor descriptor stride 0 must be a positive multiple of 16 bytes (8 elements of 2 bytes)" : i1
// CHECK: tile.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
// CHECK: arith.extsi %{{.*}} : tensor<16xi32> to tensor<16xi64>
// CHECK: arith.cmpi sge, %{{.*}} : tensor<16x64xi64>
// CHECK: arith.cmpi slt, %{{.*}} : tensor<16x64xi64>
// CHECK: arith.muli %{{.*}} : tensor<16x64xi64>
// CHECK: tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK: %[[PTRS:.*]] = tile.addptr %{{.*}}, %{{.*}} : tensor<16x64x!tile.ptr<bf16>>, tensor<16x64xi64>
// CHECK: %[[V:.*]] = tile.load %[[PTRS]], %{{.*}}, %{{.*}} : tensor<16x64x!tile.ptr<bf16>>
// CHECK: tile.store
// CHECK-NOT: tile.descriptor_
// CHECK-NOT: tile.make_tensor_descriptor
// COALESCE-LABEL: func.func @load_block
// With the row stride divisible by 16, rows are 8 bf16 vectors.
// COALESCE: tile.load {{.*}}{tilegpu.vector_dim = 1 : i32, tilegpu.vector_width = 8 : i32}
func.func @load_block(%p: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                      %m: i64, %n: i64 {tile.divisibility = 16 : i32}, %ld: i64 {tile.divisibility = 16 : i32}, %i: i32) {
  %c1 = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %d = tile.make_tensor_descriptor %p, [%m, %n], [%ld, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<16x64xbf16>>
  %v = tile.descriptor_load %d[%i, %c0] : !tile.tensordesc<tensor<16x64xbf16>> -> tensor<16x64xbf16>
  %j = arith.addi %i, %i : i32
  tile.descriptor_store %d[%j, %c0], %v : !tile.tensordesc<tensor<16x64xbf16>>, tensor<16x64xbf16>
  return
}

// -----

// A store writes only the elements inside the tensor; a 1-D descriptor
// needs no stride assertion (its only stride is the literal 1).
// CHECK-LABEL: func.func @store_1d
// CHECK-NOT: tile.assert
// CHECK: %[[PTRS:.*]] = tile.addptr
// CHECK: tile.store %[[PTRS]], %{{.*}}, %{{.*}} : tensor<32x!tile.ptr<f32>>
func.func @store_1d(%p: !tile.ptr<f32>, %n: i64, %i: i32, %v: tensor<32xf32>) {
  %c1 = arith.constant 1 : i64
  %d = tile.make_tensor_descriptor %p, [%n], [%c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<32xf32>>
  tile.descriptor_store %d[%i], %v : !tile.tensordesc<tensor<32xf32>>, tensor<32xf32>
  return
}
