// RUN: tegula-opt %s --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot=chip=sm_90a --propagate-mma-layout --remove-layout-conversions --cse --coalesce --remove-layout-conversions --cse --pipeline-dot-operands=num-stages=3 | FileCheck %s
// RUN: tegula-opt %s --tegula-gpu-pipeline="num-warps=4 num-stages=3 chip=sm_90a" | FileCheck %s --check-prefix=LLVM

// The tf32 GEMM of test/kernels/TestKernels.h with B K-major (Storage::NT:
// B [N, K] row-major, loaded as [K, N]) traced at BM = BN = 64, BK = 16. On
// Hopper both operands load K-major, the only order wgmma reads tf32 in:
// the dot runs on wgmma, fed by rings in its 64-byte swizzled layouts,
// filled 16 bytes a copy, one wgmma group in flight across iterations.
// CHECK-LABEL: func.func @gemm_tf32_nt
// CHECK:     %[[RA:.*]] = tilegpu.alloc_shared : <3 x[64, 16] x f32, contiguousDim = 1, swizzle = [0, 1, 2], blockElements = 16>
// CHECK:     %[[RB:.*]] = tilegpu.alloc_shared : <3 x[16, 64] x f32, contiguousDim = 0, swizzle = [0, 1, 2], blockElements = 16>
// CHECK:     tilegpu.async_load %[[RA]][%{{.*}}], %{{.*}}, %{{.*}} {tilegpu.vector_width = 4 : i32}
// CHECK:     tilegpu.async_load %[[RB]][%{{.*}}], %{{.*}}, %{{.*}} {tilegpu.vector_width = 4 : i32}
// CHECK:     scf.for
// CHECK-NOT:   tile.load
// CHECK:       tilegpu.async_wait {fenceAsyncProxy, pending = 0 : i32}
// CHECK-NEXT:  %[[D:.*]] = tilegpu.dot_shared %[[RA]][%[[S:.*]]], %[[RB]][%[[S]]], %{{.*}} {precision = 1 : i32} : {{.*}} -> tensor<64x64xf32, #mma>
// CHECK-NEXT:  tilegpu.wgmma_wait %[[D]] {pending = 1 : i32}
// CHECK:       tilegpu.async_load %[[RA]]
// CHECK:       tilegpu.async_load %[[RB]]

// Lowered, each (cp.async) stage is rounded to tf32 in place before wgmma
// reads it - 16-byte pieces, each element by one cvt.rn.tf32.f32 (nearest,
// ties to even; sm_90 code) - then the async proxy is fenced and the warps
// meet. (TMA rings are rounded by their tensor maps instead:
// pipeline-dot-operands-tf32-tma.mlir.)
// LLVM-LABEL: llvm.func @gemm_tf32_nt
// LLVM:         llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// LLVM-COUNT-4: llvm.inline_asm "cvt.rn.tf32.f32 $0, $1;", "=r,f"
// LLVM:         llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// LLVM:         fence.proxy.async.shared::cta
// LLVM-NEXT:    nvvm.barrier0
// LLVM:         wgmma.fence.sync.aligned
// LLVM:         wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
module {
  func.func @gemm_tf32_nt(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "M"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "N"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 16 : i64, BM = 64 : i64, BN = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<16x64xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c64_i32 = arith.constant 64 : i32
    %0 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %1 = tile.program_id x
    %2 = arith.muli %1, %c64_i32 : i32
    %3 = tile.splat %2 : tensor<64xi32>
    %4 = arith.addi %3, %0 : tensor<64xi32>
    %5 = tile.program_id y
    %6 = arith.muli %5, %c64_i32 : i32
    %7 = tile.splat %6 : tensor<64xi32>
    %8 = arith.addi %7, %0 : tensor<64xi32>
    %9 = tile.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %10 = scf.for %arg6 = %c0_i32 to %arg5 step %c16_i32 iter_args(%arg7 = %cst_1) -> (tensor<64x64xf32>)  : i32 {
      %27 = tile.splat %arg6 : tensor<16xi32>
      %28 = arith.addi %27, %9 : tensor<16xi32>
      %29 = tile.expand_dims %4 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %30 = tile.expand_dims %28 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %31 = tile.splat %arg5 : tensor<1x16xi32>
      %32 = arith.cmpi slt, %30, %31 : tensor<1x16xi32>
      %33 = tile.splat %arg3 : tensor<64x1xi32>
      %34 = arith.cmpi slt, %29, %33 : tensor<64x1xi32>
      %35 = tile.broadcast %34 : tensor<64x1xi1> -> tensor<64x16xi1>
      %36 = tile.broadcast %32 : tensor<1x16xi1> -> tensor<64x16xi1>
      %37 = arith.andi %35, %36 : tensor<64x16xi1>
      %38 = tile.splat %arg5 : tensor<64x1xi32>
      %39 = arith.muli %29, %38 : tensor<64x1xi32>
      %40 = tile.splat %arg0 : tensor<64x1x!tile.ptr<f32>>
      %41 = tile.addptr %40, %39 : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
      %42 = tile.broadcast %41 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x16x!tile.ptr<f32>>
      %43 = tile.broadcast %30 : tensor<1x16xi32> -> tensor<64x16xi32>
      %44 = tile.addptr %42, %43 : tensor<64x16x!tile.ptr<f32>>, tensor<64x16xi32>
      %45 = tile.load %44, %37, %cst_0 : tensor<64x16x!tile.ptr<f32>>
      %46 = tile.expand_dims %8 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %47 = tile.splat %arg4 : tensor<1x64xi32>
      %48 = arith.cmpi slt, %46, %47 : tensor<1x64xi32>
      %49 = tile.expand_dims %28 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %50 = tile.splat %arg5 : tensor<16x1xi32>
      %51 = arith.cmpi slt, %49, %50 : tensor<16x1xi32>
      %52 = tile.broadcast %51 : tensor<16x1xi1> -> tensor<16x64xi1>
      %53 = tile.broadcast %48 : tensor<1x64xi1> -> tensor<16x64xi1>
      %54 = arith.andi %52, %53 : tensor<16x64xi1>
      %55 = tile.splat %arg5 : tensor<1x64xi32>
      %56 = arith.muli %46, %55 : tensor<1x64xi32>
      %57 = tile.splat %arg1 : tensor<1x64x!tile.ptr<f32>>
      %58 = tile.addptr %57, %56 : tensor<1x64x!tile.ptr<f32>>, tensor<1x64xi32>
      %59 = tile.broadcast %58 : tensor<1x64x!tile.ptr<f32>> -> tensor<16x64x!tile.ptr<f32>>
      %60 = tile.broadcast %49 : tensor<16x1xi32> -> tensor<16x64xi32>
      %61 = tile.addptr %59, %60 : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
      %62 = tile.load %61, %54, %cst : tensor<16x64x!tile.ptr<f32>>
      %63 = tile.dot %45, %62, %arg7, tf32 : tensor<64x16xf32> * tensor<16x64xf32> -> tensor<64x64xf32>
      scf.yield %63 : tensor<64x64xf32>
    }
    %11 = tile.expand_dims %8 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %12 = tile.splat %arg4 : tensor<1x64xi32>
    %13 = arith.cmpi slt, %11, %12 : tensor<1x64xi32>
    %14 = tile.expand_dims %4 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %15 = tile.splat %arg3 : tensor<64x1xi32>
    %16 = arith.cmpi slt, %14, %15 : tensor<64x1xi32>
    %17 = tile.broadcast %16 : tensor<64x1xi1> -> tensor<64x64xi1>
    %18 = tile.broadcast %13 : tensor<1x64xi1> -> tensor<64x64xi1>
    %19 = arith.andi %17, %18 : tensor<64x64xi1>
    %20 = tile.splat %arg4 : tensor<64x1xi32>
    %21 = arith.muli %14, %20 : tensor<64x1xi32>
    %22 = tile.splat %arg2 : tensor<64x1x!tile.ptr<f32>>
    %23 = tile.addptr %22, %21 : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
    %24 = tile.broadcast %23 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %25 = tile.broadcast %11 : tensor<1x64xi32> -> tensor<64x64xi32>
    %26 = tile.addptr %24, %25 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %26, %10, %19 : tensor<64x64x!tile.ptr<f32>>
    return
  }
}

