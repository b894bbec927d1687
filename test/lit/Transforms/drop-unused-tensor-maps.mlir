// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands -drop-unused-tensor-maps | FileCheck %s
// RUN: tegula-opt %s -use-tma -drop-unused-tensor-maps | FileCheck %s --check-prefix=UNCHANGED

// use-tma gives A, B and C a tensor map each (hidden arguments 4, 5, 6);
// pipeline-dot-operands gives the rings of A and B maps of their own (7, 8)
// with the rings' boxes and swizzles. A's and B's first maps are then read
// by nothing: they are erased with their specs, and C's descriptor, the one
// left, keeps its map as argument 4 (only stored through: 64 x 32 f32
// boxes, 128-byte swizzle). Three maps remain: C's, the rings'.
// CHECK: tilegpu.tensor_maps = "2 7 2 -1 128 -1 128 -1 128 -1 1 64 32 128 @{{[0-9]+:[^\\]+}}\0A0 6 2 -1 128 3 1 3 1 -1 1 64 32 64 @{{[0-9]+:[^\\]+}}\0A1 6 2 3 1 -1 128 -1 128 -1 1 32 64 128 @{{[0-9]+:[^\\]+}}\0A"
// CHECK: func.func @mm(
// CHECK-SAME: %arg6: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>}) attributes
// CHECK: tile.make_tensor_descriptor %arg2, {{.*}} {tilegpu.tensor_map = 4 : i32}
// CHECK: tilegpu.tma_load %{{.*}}, %arg5[
// CHECK: tilegpu.tma_load %{{.*}}, %arg6[
// CHECK: tile.descriptor_store

// Without the rings, every descriptor still reads its map: nothing changes.
// UNCHANGED: tilegpu.tensor_maps = "0 6
// UNCHANGED-SAME: 1 6
// UNCHANGED-SAME: 2 7
// UNCHANGED: tilegpu.tensor_map = 4
// UNCHANGED: tilegpu.tensor_map = 5
// UNCHANGED: tilegpu.tensor_map = 6
module {
  func.func @mm(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %c128 = arith.constant 128 : i64
    %k64 = arith.extsi %k : i32 to i64
    %da = tile.make_tensor_descriptor %a, [%c128, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x32xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c128], [%c128, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<32x64xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c128, %c128], [%c128, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %zero) -> (tensor<64x64xf32>) : i32 {
      %ta = tile.descriptor_load %da[%c0, %i] : !tile.tensordesc<tensor<64x32xbf16>> -> tensor<64x32xbf16>
      %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<32x64xbf16>> -> tensor<32x64xbf16>
      %d = tile.dot %ta, %tb, %x, ieee : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
      scf.yield %d : tensor<64x64xf32>
    }
    tile.descriptor_store %dc[%c0, %c0], %acc : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    return
  }
}
