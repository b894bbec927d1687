// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands=warp-specialize=true | FileCheck %s

// A K loop inside another loop (a persistent kernel's tile loop) is not
// warp-specialised yet: its rings are pipelined as without the option
// (prologue copies, refills in the loop, drain), and the kernel keeps its
// warps.
// CHECK-NOT: tilegpu.producer_warps
// CHECK-NOT: is_producer_warp
// CHECK: scf.for
// CHECK:   tilegpu.alloc_shared {mbarriers}
// CHECK:   tilegpu.tma_load
// CHECK:   scf.for
// CHECK:     tilegpu.tma_wait
// CHECK:     tilegpu.dot_shared
// CHECK:     tilegpu.tma_load
module {
  func.func @mm(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32},
                %tiles: i32) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i64
    %k64 = arith.extsi %k : i32 to i64
    %da = tile.make_tensor_descriptor %a, [%c128, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x32xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c128], [%c128, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<32x64xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c128, %c128], [%c128, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    scf.for %t = %c0 to %tiles step %one : i32 {
      %row = arith.muli %t, %c64 : i32
      %zero = arith.constant dense<0.0> : tensor<64x64xf32>
      %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %zero) -> (tensor<64x64xf32>) : i32 {
        %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<64x32xbf16>> -> tensor<64x32xbf16>
        %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<32x64xbf16>> -> tensor<32x64xbf16>
        %d = tile.dot %ta, %tb, %x, ieee : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
        scf.yield %d : tensor<64x64xf32>
      }
      tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    }
    return
  }
}
