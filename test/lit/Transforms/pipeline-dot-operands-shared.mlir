// RUN: tegula-opt %s --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot --remove-layout-conversions --cse --coalesce --pipeline-dot-operands=num-stages=3 | FileCheck %s
// RUN: tegula-opt %s --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot=chip=sm_90a --remove-layout-conversions --cse --coalesce --pipeline-dot-operands=num-stages=3 | FileCheck %s --check-prefix=HOPPER

// A streamed tile read by two dots, as it is and transposed (the tile IR of
// test/kernels/SharedOperandRingTest.cpp's two_dots at BK = 64): one ring,
// filled once per iteration - the prologue's two loads, one in the loop after
// both dots - and read by both (dot_shared_b, the second {transposeB}); A is
// loop-invariant, in registers. On wgmma the two dots are independent: both
// issue, and each group is waited for where its result is needed (the yield).
// CHECK-LABEL: func.func @two_dots
// CHECK:     %[[R:.*]] = tilegpu.alloc_shared : <3 x[64, 64] x bf16
// CHECK-NOT: tilegpu.alloc_shared
// CHECK:     tilegpu.async_load %[[R]][
// CHECK:     tilegpu.async_load %[[R]][
// CHECK:     scf.for
// CHECK-NOT:   tile.load
// CHECK:       tilegpu.async_wait {pending = 1 : i32}
// CHECK-NEXT:  %[[D1:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S:.*]]], %{{.*}} :
// CHECK-NEXT:  %[[D2:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S]]], %{{.*}} {transposeB}
// CHECK:       tilegpu.async_load %[[R]][
// CHECK-NOT:   tilegpu.async_load
// CHECK:       scf.yield %[[D1]], %[[D2]]
// CHECK:     tilegpu.async_wait %[[R]] : {{.*}} {pending = 0 : i32}
// The same tile also stored: a use that is no dot's - no ring, the loads stay.
// CHECK-LABEL: func.func @also_stored
// CHECK-NOT:   tilegpu.alloc_shared
// CHECK:       scf.for
// CHECK:         tile.load
// CHECK:         tile.dot
// HOPPER-LABEL: func.func @two_dots
// HOPPER:     %[[R:.*]] = tilegpu.alloc_shared : <3 x[64, 64] x bf16, contiguousDim = 1, swizzle = [1, 2, 4], blockElements = 64>
// HOPPER:     scf.for
// HOPPER:       tilegpu.async_wait {fenceAsyncProxy, pending = 1 : i32}
// HOPPER-NEXT:  %[[D1:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S:.*]]], %{{.*}} :
// HOPPER-NEXT:  %[[D2:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[R]][%[[S]]], %{{.*}} {transposeB}
// HOPPER:       tilegpu.async_load %[[R]][
// HOPPER:       %[[W1:.*]] = tilegpu.wgmma_wait %[[D1]] {pending = 0 : i32}
// HOPPER-NEXT:  %[[W2:.*]] = tilegpu.wgmma_wait %[[D2]] {pending = 0 : i32}
// HOPPER-NEXT:  scf.yield %[[W1]], %[[W2]]
module {
  func.func @two_dots(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c1"}, %arg3: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c2"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %cst_0 = arith.constant dense<64> : tensor<64x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c64_i32 = arith.constant 64 : i32
    %0 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %2 = tile.expand_dims %0 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %3 = arith.muli %2, %cst_0 : tensor<64x1xi32>
    %4 = tile.splat %arg0 : tensor<64x1x!tile.ptr<bf16>>
    %5 = tile.addptr %4, %3 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %6 = tile.broadcast %5 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %7 = tile.broadcast %1 : tensor<1x64xi32> -> tensor<64x64xi32>
    %8 = tile.addptr %6, %7 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %9 = tile.load %8 : tensor<64x64x!tile.ptr<bf16>>
    %10:2 = scf.for %arg5 = %c0_i32 to %arg4 step %c64_i32 iter_args(%arg6 = %cst_1, %arg7 = %cst_1) -> (tensor<64x64xf32>, tensor<64x64xf32>)  : i32 {
      %17 = tile.splat %arg5 : tensor<64xi32>
      %18 = arith.addi %17, %0 : tensor<64xi32>
      %19 = tile.expand_dims %18 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %20 = tile.splat %arg4 : tensor<64x1xi32>
      %21 = arith.cmpi slt, %19, %20 : tensor<64x1xi32>
      %22 = arith.muli %19, %cst_0 : tensor<64x1xi32>
      %23 = tile.splat %arg1 : tensor<64x1x!tile.ptr<bf16>>
      %24 = tile.addptr %23, %22 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
      %25 = tile.broadcast %24 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
      %26 = tile.addptr %25, %7 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
      %27 = tile.broadcast %21 : tensor<64x1xi1> -> tensor<64x64xi1>
      %28 = tile.load %26, %27, %cst : tensor<64x64x!tile.ptr<bf16>>
      %29 = tile.dot %9, %28, %arg6, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      %30 = tile.trans %28 {order = array<i32: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
      %31 = tile.dot %9, %30, %arg7, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      scf.yield %29, %31 : tensor<64x64xf32>, tensor<64x64xf32>
    }
    %11 = tile.broadcast %3 : tensor<64x1xi32> -> tensor<64x64xi32>
    %12 = arith.addi %11, %7 : tensor<64x64xi32>
    %13 = tile.splat %arg2 : tensor<64x64x!tile.ptr<f32>>
    %14 = tile.addptr %13, %12 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %14, %10#0 : tensor<64x64x!tile.ptr<f32>>
    %15 = tile.splat %arg3 : tensor<64x64x!tile.ptr<f32>>
    %16 = tile.addptr %15, %12 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %16, %10#1 : tensor<64x64x!tile.ptr<f32>>
    return
  }
  func.func @also_stored(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c1"}, %arg3: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c2"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %cst_0 = arith.constant dense<64> : tensor<64x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c64_i32 = arith.constant 64 : i32
    %0 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %2 = tile.expand_dims %0 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %3 = arith.muli %2, %cst_0 : tensor<64x1xi32>
    %4 = tile.splat %arg0 : tensor<64x1x!tile.ptr<bf16>>
    %5 = tile.addptr %4, %3 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %6 = tile.broadcast %5 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %7 = tile.broadcast %1 : tensor<1x64xi32> -> tensor<64x64xi32>
    %8 = tile.addptr %6, %7 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %9 = tile.load %8 : tensor<64x64x!tile.ptr<bf16>>
    %10:2 = scf.for %arg5 = %c0_i32 to %arg4 step %c64_i32 iter_args(%arg6 = %cst_1, %arg7 = %cst_1) -> (tensor<64x64xf32>, tensor<64x64xf32>)  : i32 {
      %17 = tile.splat %arg5 : tensor<64xi32>
      %18 = arith.addi %17, %0 : tensor<64xi32>
      %19 = tile.expand_dims %18 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %20 = tile.splat %arg4 : tensor<64x1xi32>
      %21 = arith.cmpi slt, %19, %20 : tensor<64x1xi32>
      %22 = arith.muli %19, %cst_0 : tensor<64x1xi32>
      %23 = tile.splat %arg1 : tensor<64x1x!tile.ptr<bf16>>
      %24 = tile.addptr %23, %22 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
      %25 = tile.broadcast %24 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
      %26 = tile.addptr %25, %7 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
      %27 = tile.broadcast %21 : tensor<64x1xi1> -> tensor<64x64xi1>
      %28 = tile.load %26, %27, %cst : tensor<64x64x!tile.ptr<bf16>>
      %29 = tile.dot %9, %28, %arg6, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      %30 = tile.trans %28 {order = array<i32: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
      %31 = tile.dot %9, %30, %arg7, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      tile.store %8, %28 : tensor<64x64x!tile.ptr<bf16>>
      scf.yield %29, %31 : tensor<64x64xf32>, tensor<64x64xf32>
    }
    %11 = tile.broadcast %3 : tensor<64x1xi32> -> tensor<64x64xi32>
    %12 = arith.addi %11, %7 : tensor<64x64xi32>
    %13 = tile.splat %arg2 : tensor<64x64x!tile.ptr<f32>>
    %14 = tile.addptr %13, %12 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %14, %10#0 : tensor<64x64x!tile.ptr<f32>>
    %15 = tile.splat %arg3 : tensor<64x64x!tile.ptr<f32>>
    %16 = tile.addptr %15, %12 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %16, %10#1 : tensor<64x64x!tile.ptr<f32>>
    return
  }
}

