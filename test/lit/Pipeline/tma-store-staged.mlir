// RUN: tegula-opt %s --tegula-gpu-pipeline="num-warps=4 chip=sm_90a" | FileCheck %s

// A 64x256 bf16 C block through a TMA store (examples::matmul_descriptors,
// traced): four 128-byte column blocks, staged two at a time
// (layout::tmaStoreStaging). Each block is written (stmatrix), fenced for
// the async proxy and sent in a bulk group of its own; blocks 2 and 3 first
// wait for the copy out of their slot (wait_group.read 1); the store ends
// once every copy has read its block (wait_group.read 0).

// CHECK-LABEL: llvm.func @matmul_descriptors(
// CHECK:         nvvm.stmatrix
// CHECK:         "fence.proxy.async.shared::cta;"
// CHECK:         "@$2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$3, $4}], [$1];"
// CHECK-NEXT:    "@$0 cp.async.bulk.commit_group;"
// CHECK-NOT:     wait_group.read
// CHECK:         nvvm.stmatrix
// CHECK:         "@$2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// CHECK-NEXT:    "@$0 cp.async.bulk.commit_group;"
// CHECK-NEXT:    "@$0 cp.async.bulk.wait_group.read 1;"
// CHECK:         nvvm.stmatrix
// CHECK:         "@$2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// CHECK-NEXT:    "@$0 cp.async.bulk.commit_group;"
// CHECK-NEXT:    "@$0 cp.async.bulk.wait_group.read 1;"
// CHECK:         nvvm.stmatrix
// CHECK:         "@$2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// CHECK-NEXT:    "@$0 cp.async.bulk.commit_group;"
// CHECK-NEXT:    "@$0 cp.async.bulk.wait_group.read 0;"
// CHECK-NOT:     cp.async.bulk.tensor.2d.global
// CHECK:         llvm.return
module {
  func.func @matmul_descriptors(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "c"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "M"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "N"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "K"}, %arg6: i32 {tile.divisibility = 16 : i32, tile.name = "lda"}, %arg7: i32 {tile.divisibility = 16 : i32, tile.name = "ldb"}, %arg8: i32 {tile.divisibility = 16 : i32, tile.name = "ldc"}) attributes {tile.constants = {BK = 32 : i64, BM = 64 : i64, BN = 256 : i64}, tile.kernel} {
    %c32_i32 = arith.constant 32 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64x256xf32>
    %c256_i32 = arith.constant 256 : i32
    %c64_i32 = arith.constant 64 : i32
    %c1_i64 = arith.constant 1 : i64
    %0 = arith.extsi %arg6 : i32 to i64
    %1 = arith.extsi %arg3 : i32 to i64
    %2 = arith.extsi %arg5 : i32 to i64
    %3 = tile.make_tensor_descriptor %arg0, [%1, %2], [%0, %c1_i64] : <bf16> -> <tensor<64x32xbf16>>
    %4 = arith.extsi %arg7 : i32 to i64
    %5 = arith.extsi %arg4 : i32 to i64
    %6 = tile.make_tensor_descriptor %arg1, [%2, %5], [%4, %c1_i64] : <bf16> -> <tensor<32x256xbf16>>
    %7 = arith.extsi %arg8 : i32 to i64
    %8 = tile.make_tensor_descriptor %arg2, [%1, %5], [%7, %c1_i64] : <bf16> -> <tensor<64x256xbf16>>
    %9 = tile.program_id x
    %10 = arith.muli %9, %c64_i32 : i32
    %11 = tile.program_id y
    %12 = arith.muli %11, %c256_i32 : i32
    %13 = scf.for %arg9 = %c0_i32 to %arg5 step %c32_i32 iter_args(%arg10 = %cst) -> (tensor<64x256xf32>)  : i32 {
      %15 = tile.descriptor_load %6[%arg9, %12] : <tensor<32x256xbf16>> -> tensor<32x256xbf16>
      %16 = tile.descriptor_load %3[%10, %arg9] : <tensor<64x32xbf16>> -> tensor<64x32xbf16>
      %17 = tile.dot %16, %15, %arg10, ieee : tensor<64x32xbf16> * tensor<32x256xbf16> -> tensor<64x256xf32>
      scf.yield %17 : tensor<64x256xf32>
    }
    %14 = arith.truncf %13 : tensor<64x256xf32> to tensor<64x256xbf16>
    tile.descriptor_store %8[%10, %12], %14 : <tensor<64x256xbf16>>, tensor<64x256xbf16>
    return
  }
}
