// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot=chip=sm_90a --remove-layout-conversions --cse --coalesce --pipeline-dot-operands=num-stages=3 -drop-unused-tensor-maps | FileCheck %s
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot=chip=sm_90a --remove-layout-conversions --cse --coalesce "--pipeline-dot-operands=num-stages=3 warp-specialize=true" -drop-unused-tensor-maps | FileCheck %s --check-prefix=WS

// pipeline-dot-operands-shared.mlir's two dots reading one streamed tile,
// the tile read through a tensor descriptor on sm_90a: one TMA ring (its own
// tensor map, 128-byte swizzle; the descriptor's map is dropped), its stage
// waited for on its mbarrier phase before the first dot, refilled after the
// second (each copy only for an iteration that exists: nothing to drain
// after the loop).
// CHECK:     tilegpu.tensor_maps = "1 6 2 4 1 -1 64 -1 64 -1 1 64 64 128 @{{[0-9]+:[^\\]+}}\0A"
// CHECK:     %[[R:.*]] = tilegpu.alloc_shared {mbarriers} : <3 x[64, 64] x bf16
// CHECK-NOT: tilegpu.alloc_shared
// CHECK:     tilegpu.tma_init %[[R]]
// CHECK:     tilegpu.tma_load %[[R]][%{{.*}}], %[[MAP:arg[0-9]+]][
// CHECK:     tilegpu.tma_load %[[R]][%{{.*}}], %[[MAP]][
// CHECK:     scf.for
// CHECK-NOT:   tile.descriptor_load
// CHECK:       tilegpu.tma_wait %[[R]][%[[S:.*]]], %{{.*}} :
// CHECK-NEXT:  %[[D1:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S]]], %{{.*}} :
// CHECK-NEXT:  %[[D2:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S]]], %{{.*}} {transposeB}
// CHECK:       tilegpu.tma_load %[[R]][%{{.*}}], %[[MAP]][
// CHECK:       tilegpu.wgmma_wait %[[D1]] {pending = 0 : i32}
// CHECK-NEXT:  tilegpu.wgmma_wait %[[D2]] {pending = 0 : i32}
// CHECK:       scf.yield
// CHECK-NOT:   tilegpu.tma_wait
// CHECK:     tilegpu.tma_release %[[R]]

// Warp specialised: the producer fills the one ring once per iteration
// (after the stage's release from its second use on); the consumers wait
// for the stage once, issue both dots, wait for both groups and release
// the stage once - one arrival per consumer thread per use of the stage.
// WS:        tilegpu.producer_warps = 4
// WS:        %[[R:.*]] = tilegpu.alloc_shared {mbarriers, released}
// WS:        scf.if
// WS:          scf.for
// WS:            tilegpu.tma_wait %[[R]][%{{.*}}], %{{.*}} {released}
// WS:          tilegpu.tma_load %[[R]]
// WS-NOT:      tilegpu.tma_load
// WS:        } else {
// WS:          scf.for
// WS:            tilegpu.tma_wait %[[R]][%[[S:.*]]], %{{.*}} {noBarrier}
// WS-NEXT:       %[[D1:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S]]]
// WS-NEXT:       %[[D2:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S]]], %{{.*}} {transposeB}
// WS-NEXT:       tilegpu.wgmma_wait %[[D1]] {pending = 0 : i32}
// WS-NEXT:       tilegpu.wgmma_wait %[[D2]] {pending = 0 : i32}
// WS-NEXT:       tilegpu.tma_arrive %[[R]][%[[S]]]
// WS-NEXT:       scf.yield
// WS:          tilegpu.tma_release %[[R]]
module {
  func.func @two_dots_tma(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c1"}, %arg3: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c2"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<64> : tensor<64x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c1_i64 = arith.constant 1 : i64
    %c64_i64 = arith.constant 64 : i64
    %c64_i32 = arith.constant 64 : i32
    %0 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %2 = tile.expand_dims %0 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %3 = arith.muli %2, %cst : tensor<64x1xi32>
    %4 = tile.splat %arg0 : tensor<64x1x!tile.ptr<bf16>>
    %5 = tile.addptr %4, %3 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %6 = tile.broadcast %5 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %7 = tile.broadcast %1 : tensor<1x64xi32> -> tensor<64x64xi32>
    %8 = tile.addptr %6, %7 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %9 = tile.load %8 : tensor<64x64x!tile.ptr<bf16>>
    %10 = arith.extsi %arg4 : i32 to i64
    %11 = tile.make_tensor_descriptor %arg1, [%10, %c64_i64], [%c64_i64, %c1_i64] : <bf16> -> <tensor<64x64xbf16>>
    %12:2 = scf.for %arg5 = %c0_i32 to %arg4 step %c64_i32 iter_args(%arg6 = %cst_0, %arg7 = %cst_0) -> (tensor<64x64xf32>, tensor<64x64xf32>)  : i32 {
      %19 = tile.descriptor_load %11[%arg5, %c0_i32] : <tensor<64x64xbf16>> -> tensor<64x64xbf16>
      %20 = tile.dot %9, %19, %arg6, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      %21 = tile.trans %19 {order = array<i32: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
      %22 = tile.dot %9, %21, %arg7, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      scf.yield %20, %22 : tensor<64x64xf32>, tensor<64x64xf32>
    }
    %13 = tile.broadcast %3 : tensor<64x1xi32> -> tensor<64x64xi32>
    %14 = arith.addi %13, %7 : tensor<64x64xi32>
    %15 = tile.splat %arg2 : tensor<64x64x!tile.ptr<f32>>
    %16 = tile.addptr %15, %14 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %16, %12#0 : tensor<64x64x!tile.ptr<f32>>
    %17 = tile.splat %arg3 : tensor<64x64x!tile.ptr<f32>>
    %18 = tile.addptr %17, %14 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %18, %12#1 : tensor<64x64x!tile.ptr<f32>>
    return
  }
}

