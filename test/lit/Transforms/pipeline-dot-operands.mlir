// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot --remove-layout-conversions --cse --coalesce --pipeline-dot-operands=num-stages=3 | FileCheck %s
// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot --remove-layout-conversions --cse --coalesce --pipeline-dot-operands=num-stages=1 | FileCheck %s --check-prefix=OFF

// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot=chip=sm_90a --remove-layout-conversions --cse --coalesce --pipeline-dot-operands=num-stages=3 | FileCheck %s --check-prefix=HOPPER

// examples::matmul<bf16> traced at BM = BN = 64, BK = 16 (the tile IR the
// DSL produces). With 3 stages: a ring of 3 swizzled tiles per operand, the
// loads of iterations 0 and 1 issued before the loop (masked off past the
// upper bound), and in the loop: wait for this stage (2 groups per later
// stage may stay in flight), the dot on this stage's tiles, the loads of
// iteration i + 2 into stage (i + 2) % 3; after the loop, a wait for all.
// CHECK-LABEL: func.func @gemm
// CHECK:     %[[RA:.*]] = tilegpu.alloc_shared : <3 x[64, 16] x bf16, contiguousDim = 1, swizzle = [
// CHECK:     %[[RB:.*]] = tilegpu.alloc_shared : <3 x[16, 64] x bf16, contiguousDim = 1, swizzle = [
// CHECK:     tilegpu.async_load %[[RA]][%{{.*}}], %{{.*}}, %{{.*}} {tilegpu.vector_width = 8 : i32}
// CHECK:     tilegpu.async_load %[[RB]][%{{.*}}], %{{.*}}, %{{.*}} {tilegpu.vector_width = 8 : i32}
// CHECK:     tilegpu.async_load %[[RA]]
// CHECK:     tilegpu.async_load %[[RB]]
// CHECK:     scf.for
// CHECK-NOT:   tile.load
// CHECK:       tilegpu.async_wait {pending = 2 : i32}
// CHECK-NEXT:  %[[D:.*]] = tilegpu.dot_shared %[[RA]][%[[S:.*]]], %[[RB]][%[[S]]], %{{.*}} :
// CHECK:       arith.cmpi slt
// CHECK:       tilegpu.async_load %[[RA]]
// CHECK:       tilegpu.async_load %[[RB]]
// CHECK:       scf.yield %[[D]]
// CHECK:     tilegpu.async_wait %[[RA]], %[[RB]] : {{.*}} {pending = 0 : i32}
// On sm_90a (wgmma): the rings are in wgmma's layouts (A 64x16 K-major with
// the 32-byte swizzle, B 16x64 N-major with the 128-byte one); the wait
// fences the async proxy; one wgmma group stays in flight (wgmma_wait 1) so
// the loads look one iteration less ahead (into stage (i + 1) % 3, which
// the group of iteration i - 2 read); after the loop the last group is waited for.
// HOPPER-LABEL: func.func @gemm
// HOPPER:     %[[RA:.*]] = tilegpu.alloc_shared : <3 x[64, 16] x bf16, contiguousDim = 1, swizzle = [0, 0, 1], blockElements = 16>
// HOPPER:     %[[RB:.*]] = tilegpu.alloc_shared : <3 x[16, 64] x bf16, contiguousDim = 1, swizzle = [1, 2, 4], blockElements = 64>
// HOPPER:     tilegpu.async_load %[[RA]]
// HOPPER:     tilegpu.async_load %[[RB]]
// HOPPER-NOT: tilegpu.async_load
// HOPPER:     scf.for
// HOPPER:       tilegpu.async_wait {fenceAsyncProxy, pending = 0 : i32}
// HOPPER-NEXT:  %[[D:.*]] = tilegpu.dot_shared %[[RA]][%[[S:.*]]], %[[RB]][%[[S]]], %{{.*}} :
// HOPPER-NEXT:  %[[W:.*]] = tilegpu.wgmma_wait %[[D]] {pending = 1 : i32}
// HOPPER:       tilegpu.async_load %[[RA]]
// HOPPER:       tilegpu.async_load %[[RB]]
// HOPPER:       scf.yield %[[W]]
// HOPPER:     tilegpu.async_wait %[[RA]], %[[RB]] : {{.*}} {pending = 0 : i32}
// HOPPER-NEXT: tilegpu.wgmma_wait %{{.*}} {pending = 0 : i32}
// OFF-LABEL: func.func @gemm
// OFF-NOT:   tilegpu.async_load
// OFF:       tile.dot
module {
  func.func @gemm(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "c"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "M"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "N"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 16 : i64, BM = 64 : i64, BN = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<16x64xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x16xbf16>
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
      %28 = tile.splat %arg6 : tensor<16xi32>
      %29 = arith.addi %28, %9 : tensor<16xi32>
      %30 = tile.expand_dims %29 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %31 = tile.splat %arg5 : tensor<1x16xi32>
      %32 = arith.cmpi slt, %30, %31 : tensor<1x16xi32>
      %33 = tile.expand_dims %4 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %34 = tile.splat %arg3 : tensor<64x1xi32>
      %35 = arith.cmpi slt, %33, %34 : tensor<64x1xi32>
      %36 = tile.broadcast %35 : tensor<64x1xi1> -> tensor<64x16xi1>
      %37 = tile.broadcast %32 : tensor<1x16xi1> -> tensor<64x16xi1>
      %38 = arith.andi %36, %37 : tensor<64x16xi1>
      %39 = tile.splat %arg5 : tensor<64x1xi32>
      %40 = arith.muli %33, %39 : tensor<64x1xi32>
      %41 = tile.splat %arg0 : tensor<64x1x!tile.ptr<bf16>>
      %42 = tile.addptr %41, %40 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
      %43 = tile.broadcast %42 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x16x!tile.ptr<bf16>>
      %44 = tile.broadcast %30 : tensor<1x16xi32> -> tensor<64x16xi32>
      %45 = tile.addptr %43, %44 : tensor<64x16x!tile.ptr<bf16>>, tensor<64x16xi32>
      %46 = tile.load %45, %38, %cst_0 : tensor<64x16x!tile.ptr<bf16>>
      %47 = tile.expand_dims %8 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %48 = tile.splat %arg4 : tensor<1x64xi32>
      %49 = arith.cmpi slt, %47, %48 : tensor<1x64xi32>
      %50 = tile.expand_dims %29 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %51 = tile.splat %arg5 : tensor<16x1xi32>
      %52 = arith.cmpi slt, %50, %51 : tensor<16x1xi32>
      %53 = tile.broadcast %52 : tensor<16x1xi1> -> tensor<16x64xi1>
      %54 = tile.broadcast %49 : tensor<1x64xi1> -> tensor<16x64xi1>
      %55 = arith.andi %53, %54 : tensor<16x64xi1>
      %56 = tile.splat %arg4 : tensor<16x1xi32>
      %57 = arith.muli %50, %56 : tensor<16x1xi32>
      %58 = tile.splat %arg1 : tensor<16x1x!tile.ptr<bf16>>
      %59 = tile.addptr %58, %57 : tensor<16x1x!tile.ptr<bf16>>, tensor<16x1xi32>
      %60 = tile.broadcast %59 : tensor<16x1x!tile.ptr<bf16>> -> tensor<16x64x!tile.ptr<bf16>>
      %61 = tile.broadcast %47 : tensor<1x64xi32> -> tensor<16x64xi32>
      %62 = tile.addptr %60, %61 : tensor<16x64x!tile.ptr<bf16>>, tensor<16x64xi32>
      %63 = tile.load %62, %55, %cst : tensor<16x64x!tile.ptr<bf16>>
      %64 = tile.dot %46, %63, %arg7, ieee : tensor<64x16xbf16> * tensor<16x64xbf16> -> tensor<64x64xf32>
      scf.yield %64 : tensor<64x64xf32>
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
    %22 = tile.splat %arg2 : tensor<64x1x!tile.ptr<bf16>>
    %23 = tile.addptr %22, %21 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %24 = tile.broadcast %23 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %25 = tile.broadcast %11 : tensor<1x64xi32> -> tensor<64x64xi32>
    %26 = tile.addptr %24, %25 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %27 = arith.truncf %10 : tensor<64x64xf32> to tensor<64x64xbf16>
    tile.store %26, %27, %19 : tensor<64x64x!tile.ptr<bf16>>
    return
  }
}

// -----

// A load whose masked-off elements read as 1 cannot be a zero-filling
// cp.async: the loop stays as it was.
// CHECK-LABEL: func.func @gemm_other_one
// CHECK-NOT:   tilegpu.async_load
// CHECK:       tile.dot
module {
  func.func @gemm_other_one(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "c"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "M"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "N"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 16 : i64, BM = 64 : i64, BN = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<16x64xbf16>
    %cst_0 = arith.constant dense<1.000000e+00> : tensor<64x16xbf16>
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
      %28 = tile.splat %arg6 : tensor<16xi32>
      %29 = arith.addi %28, %9 : tensor<16xi32>
      %30 = tile.expand_dims %29 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %31 = tile.splat %arg5 : tensor<1x16xi32>
      %32 = arith.cmpi slt, %30, %31 : tensor<1x16xi32>
      %33 = tile.expand_dims %4 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %34 = tile.splat %arg3 : tensor<64x1xi32>
      %35 = arith.cmpi slt, %33, %34 : tensor<64x1xi32>
      %36 = tile.broadcast %35 : tensor<64x1xi1> -> tensor<64x16xi1>
      %37 = tile.broadcast %32 : tensor<1x16xi1> -> tensor<64x16xi1>
      %38 = arith.andi %36, %37 : tensor<64x16xi1>
      %39 = tile.splat %arg5 : tensor<64x1xi32>
      %40 = arith.muli %33, %39 : tensor<64x1xi32>
      %41 = tile.splat %arg0 : tensor<64x1x!tile.ptr<bf16>>
      %42 = tile.addptr %41, %40 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
      %43 = tile.broadcast %42 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x16x!tile.ptr<bf16>>
      %44 = tile.broadcast %30 : tensor<1x16xi32> -> tensor<64x16xi32>
      %45 = tile.addptr %43, %44 : tensor<64x16x!tile.ptr<bf16>>, tensor<64x16xi32>
      %46 = tile.load %45, %38, %cst_0 : tensor<64x16x!tile.ptr<bf16>>
      %47 = tile.expand_dims %8 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %48 = tile.splat %arg4 : tensor<1x64xi32>
      %49 = arith.cmpi slt, %47, %48 : tensor<1x64xi32>
      %50 = tile.expand_dims %29 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %51 = tile.splat %arg5 : tensor<16x1xi32>
      %52 = arith.cmpi slt, %50, %51 : tensor<16x1xi32>
      %53 = tile.broadcast %52 : tensor<16x1xi1> -> tensor<16x64xi1>
      %54 = tile.broadcast %49 : tensor<1x64xi1> -> tensor<16x64xi1>
      %55 = arith.andi %53, %54 : tensor<16x64xi1>
      %56 = tile.splat %arg4 : tensor<16x1xi32>
      %57 = arith.muli %50, %56 : tensor<16x1xi32>
      %58 = tile.splat %arg1 : tensor<16x1x!tile.ptr<bf16>>
      %59 = tile.addptr %58, %57 : tensor<16x1x!tile.ptr<bf16>>, tensor<16x1xi32>
      %60 = tile.broadcast %59 : tensor<16x1x!tile.ptr<bf16>> -> tensor<16x64x!tile.ptr<bf16>>
      %61 = tile.broadcast %47 : tensor<1x64xi32> -> tensor<16x64xi32>
      %62 = tile.addptr %60, %61 : tensor<16x64x!tile.ptr<bf16>>, tensor<16x64xi32>
      %63 = tile.load %62, %55, %cst : tensor<16x64x!tile.ptr<bf16>>
      %64 = tile.dot %46, %63, %arg7, ieee : tensor<64x16xbf16> * tensor<16x64xbf16> -> tensor<64x64xf32>
      scf.yield %64 : tensor<64x64xf32>
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
    %22 = tile.splat %arg2 : tensor<64x1x!tile.ptr<bf16>>
    %23 = tile.addptr %22, %21 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %24 = tile.broadcast %23 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %25 = tile.broadcast %11 : tensor<1x64xi32> -> tensor<64x64xi32>
    %26 = tile.addptr %24, %25 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %27 = arith.truncf %10 : tensor<64x64xf32> to tensor<64x64xbf16>
    tile.store %26, %27, %19 : tensor<64x64x!tile.ptr<bf16>>
    return
  }
}

// -----
// Triton's tutorial style: pointer tiles carried by the loop and advanced by
// BK (A) and BK * N (B, computed in the body from loop-invariant values)
// each iteration, masks from K - k (M, N, K divisible by 16). Coalesce sees
// through the carried pointers (contiguous like their initial values), and
// the loads of iteration i use init + i * delta: both operands become
// cp.async rings.
// CHECK-LABEL: func.func @matmul_ptr_inc
// CHECK:     tilegpu.alloc_shared
// CHECK:     tilegpu.alloc_shared
// CHECK:     arith.muli %{{.*}}, %{{.*}} : tensor<64x16xi32
// CHECK:     tile.addptr
// CHECK:     tilegpu.async_load {{.*}} {tilegpu.vector_width = 8 : i32}
// CHECK:     scf.for
// CHECK-NOT:   tile.load
// CHECK:       tilegpu.dot_shared
// CHECK:       tilegpu.async_load {{.*}} {tilegpu.vector_width = 8 : i32}
// CHECK:       tilegpu.async_load {{.*}} {tilegpu.vector_width = 8 : i32}
// OFF-LABEL: func.func @matmul_ptr_inc
// OFF-NOT:   tilegpu.async_load
module {
  func.func @matmul_ptr_inc(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "c"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "M"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "N"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 16 : i64, BM = 64 : i64, BN = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<16> : tensor<64x16xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x64xbf16>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x16xbf16>
    %c16_i32 = arith.constant 16 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
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
    %10 = tile.expand_dims %9 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %11 = tile.expand_dims %4 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %12 = tile.splat %arg5 : tensor<64x1xi32>
    %13 = arith.muli %11, %12 : tensor<64x1xi32>
    %14 = tile.splat %arg0 : tensor<64x1x!tile.ptr<bf16>>
    %15 = tile.addptr %14, %13 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %16 = tile.broadcast %15 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x16x!tile.ptr<bf16>>
    %17 = tile.broadcast %10 : tensor<1x16xi32> -> tensor<64x16xi32>
    %18 = tile.addptr %16, %17 : tensor<64x16x!tile.ptr<bf16>>, tensor<64x16xi32>
    %19 = tile.expand_dims %8 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %20 = tile.expand_dims %9 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %21 = tile.splat %arg4 : tensor<16x1xi32>
    %22 = arith.muli %20, %21 : tensor<16x1xi32>
    %23 = tile.splat %arg1 : tensor<16x1x!tile.ptr<bf16>>
    %24 = tile.addptr %23, %22 : tensor<16x1x!tile.ptr<bf16>>, tensor<16x1xi32>
    %25 = tile.broadcast %24 : tensor<16x1x!tile.ptr<bf16>> -> tensor<16x64x!tile.ptr<bf16>>
    %26 = tile.broadcast %19 : tensor<1x64xi32> -> tensor<16x64xi32>
    %27 = tile.addptr %25, %26 : tensor<16x64x!tile.ptr<bf16>>, tensor<16x64xi32>
    %28:3 = scf.for %arg6 = %c0_i32 to %arg5 step %c16_i32 iter_args(%arg7 = %cst_2, %arg8 = %18, %arg9 = %27) -> (tensor<64x64xf32>, tensor<64x16x!tile.ptr<bf16>>, tensor<16x64x!tile.ptr<bf16>>)  : i32 {
      %44 = arith.subi %arg5, %arg6 : i32
      %45 = tile.splat %44 : tensor<1x16xi32>
      %46 = arith.cmpi slt, %10, %45 : tensor<1x16xi32>
      %47 = tile.splat %arg3 : tensor<64x1xi32>
      %48 = arith.cmpi slt, %11, %47 : tensor<64x1xi32>
      %49 = tile.broadcast %48 : tensor<64x1xi1> -> tensor<64x16xi1>
      %50 = tile.broadcast %46 : tensor<1x16xi1> -> tensor<64x16xi1>
      %51 = arith.andi %49, %50 : tensor<64x16xi1>
      %52 = tile.load %arg8, %51, %cst_1 : tensor<64x16x!tile.ptr<bf16>>
      %53 = tile.splat %arg4 : tensor<1x64xi32>
      %54 = arith.cmpi slt, %19, %53 : tensor<1x64xi32>
      %55 = tile.splat %44 : tensor<16x1xi32>
      %56 = arith.cmpi slt, %20, %55 : tensor<16x1xi32>
      %57 = tile.broadcast %56 : tensor<16x1xi1> -> tensor<16x64xi1>
      %58 = tile.broadcast %54 : tensor<1x64xi1> -> tensor<16x64xi1>
      %59 = arith.andi %57, %58 : tensor<16x64xi1>
      %60 = tile.load %arg9, %59, %cst_0 : tensor<16x64x!tile.ptr<bf16>>
      %61 = tile.dot %52, %60, %arg7, ieee : tensor<64x16xbf16> * tensor<16x64xbf16> -> tensor<64x64xf32>
      %62 = tile.addptr %arg8, %cst : tensor<64x16x!tile.ptr<bf16>>, tensor<64x16xi32>
      %63 = arith.muli %arg4, %c16_i32 : i32
      %64 = tile.splat %63 : tensor<16x64xi32>
      %65 = tile.addptr %arg9, %64 : tensor<16x64x!tile.ptr<bf16>>, tensor<16x64xi32>
      scf.yield %61, %62, %65 : tensor<64x64xf32>, tensor<64x16x!tile.ptr<bf16>>, tensor<16x64x!tile.ptr<bf16>>
    }
    %29 = tile.splat %arg4 : tensor<1x64xi32>
    %30 = arith.cmpi slt, %19, %29 : tensor<1x64xi32>
    %31 = tile.splat %arg3 : tensor<64x1xi32>
    %32 = arith.cmpi slt, %11, %31 : tensor<64x1xi32>
    %33 = tile.broadcast %32 : tensor<64x1xi1> -> tensor<64x64xi1>
    %34 = tile.broadcast %30 : tensor<1x64xi1> -> tensor<64x64xi1>
    %35 = arith.andi %33, %34 : tensor<64x64xi1>
    %36 = tile.splat %arg4 : tensor<64x1xi32>
    %37 = arith.muli %11, %36 : tensor<64x1xi32>
    %38 = tile.splat %arg2 : tensor<64x1x!tile.ptr<bf16>>
    %39 = tile.addptr %38, %37 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %40 = tile.broadcast %39 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %41 = tile.broadcast %19 : tensor<1x64xi32> -> tensor<64x64xi32>
    %42 = tile.addptr %40, %41 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %43 = arith.truncf %28#0 : tensor<64x64xf32> to tensor<64x64xbf16>
    tile.store %42, %43, %35 : tensor<64x64x!tile.ptr<bf16>>
    return
  }
}


// -----
// A block-pointer GEMM (tl::make_block_ptr / tl::advance): the loop carries
// i32 offsets advanced by BK, and the pointers and bounds masks are computed
// from them in the body. An offset at iteration i is init + i * BK, so both
// operands still become cp.async rings.
// CHECK-LABEL: func.func @block_ptr_matmul
// CHECK:     tilegpu.alloc_shared
// CHECK:     tilegpu.alloc_shared
// CHECK:     tilegpu.async_load {{.*}} {tilegpu.vector_width = 8 : i32}
// CHECK:     scf.for
// CHECK-NOT:   tile.load
// CHECK:       tilegpu.dot_shared
// CHECK:       tilegpu.async_load {{.*}} {tilegpu.vector_width = 8 : i32}
// CHECK:       tilegpu.async_load {{.*}} {tilegpu.vector_width = 8 : i32}
// OFF-LABEL: func.func @block_ptr_matmul
// OFF-NOT:   tilegpu.async_load
module {
  func.func @block_ptr_matmul(%arg0: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "M"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "N"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 32 : i64, BM = 64 : i64, BN = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xf16>
    %cst_0 = arith.constant dense<0> : tensor<1x32xi64>
    %cst_1 = arith.constant dense<0> : tensor<64x1xi64>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<32x64xf16>
    %cst_3 = arith.constant dense<0> : tensor<1x64xi64>
    %cst_4 = arith.constant dense<0> : tensor<32x1xi64>
    %c32_i32 = arith.constant 32 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %0 = tile.program_id x
    %1 = arith.muli %0, %c64_i32 : i32
    %2 = tile.program_id y
    %3 = arith.muli %2, %c64_i32 : i32
    %4 = arith.extsi %arg3 : i32 to i64
    %5 = arith.extsi %arg5 : i32 to i64
    %6 = arith.extsi %arg4 : i32 to i64
    %7:3 = scf.for %arg6 = %c0_i32 to %arg5 step %c32_i32 iter_args(%arg7 = %cst_5, %arg8 = %c0_i32, %arg9 = %c0_i32) -> (tensor<64x64xf32>, i32, i32)  : i32 {
      %39 = arith.extsi %arg9 : i32 to i64
      %40 = arith.muli %39, %6 : i64
      %41 = tile.addptr %arg1, %40 : !tile.ptr<f16>, i64
      %42 = arith.extsi %3 : i32 to i64
      %43 = tile.addptr %41, %42 : !tile.ptr<f16>, i64
      %44 = tile.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %45 = arith.extsi %44 : tensor<32xi32> to tensor<32xi64>
      %46 = tile.expand_dims %45 {axis = 1 : i32} : tensor<32xi64> -> tensor<32x1xi64>
      %47 = tile.splat %6 : tensor<32x1xi64>
      %48 = arith.muli %46, %47 : tensor<32x1xi64>
      %49 = tile.splat %43 : tensor<32x1x!tile.ptr<f16>>
      %50 = tile.addptr %49, %48 : tensor<32x1x!tile.ptr<f16>>, tensor<32x1xi64>
      %51 = tile.splat %39 : tensor<32x1xi64>
      %52 = arith.addi %51, %46 : tensor<32x1xi64>
      %53 = tile.splat %5 : tensor<32x1xi64>
      %54 = arith.cmpi slt, %52, %53 : tensor<32x1xi64>
      %55 = arith.cmpi sge, %52, %cst_4 : tensor<32x1xi64>
      %56 = arith.andi %55, %54 : tensor<32x1xi1>
      %57 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %58 = arith.extsi %57 : tensor<64xi32> to tensor<64xi64>
      %59 = tile.expand_dims %58 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
      %60 = tile.broadcast %50 : tensor<32x1x!tile.ptr<f16>> -> tensor<32x64x!tile.ptr<f16>>
      %61 = tile.broadcast %59 : tensor<1x64xi64> -> tensor<32x64xi64>
      %62 = tile.addptr %60, %61 : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi64>
      %63 = tile.splat %42 : tensor<1x64xi64>
      %64 = arith.addi %63, %59 : tensor<1x64xi64>
      %65 = tile.splat %6 : tensor<1x64xi64>
      %66 = arith.cmpi slt, %64, %65 : tensor<1x64xi64>
      %67 = arith.cmpi sge, %64, %cst_3 : tensor<1x64xi64>
      %68 = arith.andi %67, %66 : tensor<1x64xi1>
      %69 = tile.broadcast %56 : tensor<32x1xi1> -> tensor<32x64xi1>
      %70 = tile.broadcast %68 : tensor<1x64xi1> -> tensor<32x64xi1>
      %71 = arith.andi %69, %70 : tensor<32x64xi1>
      %72 = tile.load %62, %71, %cst_2 : tensor<32x64x!tile.ptr<f16>>
      %73 = arith.extsi %1 : i32 to i64
      %74 = arith.muli %73, %5 : i64
      %75 = tile.addptr %arg0, %74 : !tile.ptr<f16>, i64
      %76 = arith.extsi %arg8 : i32 to i64
      %77 = tile.addptr %75, %76 : !tile.ptr<f16>, i64
      %78 = tile.expand_dims %58 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
      %79 = tile.splat %5 : tensor<64x1xi64>
      %80 = arith.muli %78, %79 : tensor<64x1xi64>
      %81 = tile.splat %77 : tensor<64x1x!tile.ptr<f16>>
      %82 = tile.addptr %81, %80 : tensor<64x1x!tile.ptr<f16>>, tensor<64x1xi64>
      %83 = tile.splat %73 : tensor<64x1xi64>
      %84 = arith.addi %83, %78 : tensor<64x1xi64>
      %85 = tile.splat %4 : tensor<64x1xi64>
      %86 = arith.cmpi slt, %84, %85 : tensor<64x1xi64>
      %87 = arith.cmpi sge, %84, %cst_1 : tensor<64x1xi64>
      %88 = arith.andi %87, %86 : tensor<64x1xi1>
      %89 = tile.expand_dims %45 {axis = 0 : i32} : tensor<32xi64> -> tensor<1x32xi64>
      %90 = tile.broadcast %82 : tensor<64x1x!tile.ptr<f16>> -> tensor<64x32x!tile.ptr<f16>>
      %91 = tile.broadcast %89 : tensor<1x32xi64> -> tensor<64x32xi64>
      %92 = tile.addptr %90, %91 : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi64>
      %93 = tile.splat %76 : tensor<1x32xi64>
      %94 = arith.addi %93, %89 : tensor<1x32xi64>
      %95 = tile.splat %5 : tensor<1x32xi64>
      %96 = arith.cmpi slt, %94, %95 : tensor<1x32xi64>
      %97 = arith.cmpi sge, %94, %cst_0 : tensor<1x32xi64>
      %98 = arith.andi %97, %96 : tensor<1x32xi1>
      %99 = tile.broadcast %88 : tensor<64x1xi1> -> tensor<64x32xi1>
      %100 = tile.broadcast %98 : tensor<1x32xi1> -> tensor<64x32xi1>
      %101 = arith.andi %99, %100 : tensor<64x32xi1>
      %102 = tile.load %92, %101, %cst : tensor<64x32x!tile.ptr<f16>>
      %103 = tile.dot %102, %72, %arg7, ieee : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
      %104 = arith.addi %arg8, %c32_i32 : i32
      %105 = arith.addi %arg9, %c32_i32 : i32
      scf.yield %103, %104, %105 : tensor<64x64xf32>, i32, i32
    }
    %8 = arith.extsi %1 : i32 to i64
    %9 = arith.muli %8, %6 : i64
    %10 = tile.addptr %arg2, %9 : !tile.ptr<f32>, i64
    %11 = arith.extsi %3 : i32 to i64
    %12 = tile.addptr %10, %11 : !tile.ptr<f32>, i64
    %13 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %14 = arith.extsi %13 : tensor<64xi32> to tensor<64xi64>
    %15 = tile.expand_dims %14 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
    %16 = tile.splat %6 : tensor<64x1xi64>
    %17 = arith.muli %15, %16 : tensor<64x1xi64>
    %18 = tile.splat %12 : tensor<64x1x!tile.ptr<f32>>
    %19 = tile.addptr %18, %17 : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi64>
    %20 = tile.splat %8 : tensor<64x1xi64>
    %21 = arith.addi %20, %15 : tensor<64x1xi64>
    %22 = tile.splat %4 : tensor<64x1xi64>
    %23 = arith.cmpi slt, %21, %22 : tensor<64x1xi64>
    %24 = arith.cmpi sge, %21, %cst_1 : tensor<64x1xi64>
    %25 = arith.andi %24, %23 : tensor<64x1xi1>
    %26 = tile.expand_dims %14 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
    %27 = tile.broadcast %19 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %28 = tile.broadcast %26 : tensor<1x64xi64> -> tensor<64x64xi64>
    %29 = tile.addptr %27, %28 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi64>
    %30 = tile.splat %11 : tensor<1x64xi64>
    %31 = arith.addi %30, %26 : tensor<1x64xi64>
    %32 = tile.splat %6 : tensor<1x64xi64>
    %33 = arith.cmpi slt, %31, %32 : tensor<1x64xi64>
    %34 = arith.cmpi sge, %31, %cst_3 : tensor<1x64xi64>
    %35 = arith.andi %34, %33 : tensor<1x64xi1>
    %36 = tile.broadcast %25 : tensor<64x1xi1> -> tensor<64x64xi1>
    %37 = tile.broadcast %35 : tensor<1x64xi1> -> tensor<64x64xi1>
    %38 = arith.andi %36, %37 : tensor<64x64xi1>
    tile.store %29, %7#0, %38 : tensor<64x64x!tile.ptr<f32>>
    return
  }
}

// -----
// The same loop with tl::loop_options{.num_stages = 1}: its own depth (1)
// overrides the pass's, so its loads stay where they are.
// CHECK-LABEL: func.func @block_ptr_matmul_one_stage
// CHECK-NOT:   tilegpu.async_load
// CHECK:       tile.load
// CHECK-NOT:   tilegpu.async_load
// CHECK:       return
module {
  func.func @block_ptr_matmul_one_stage(%arg0: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "a"}, %arg1: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "b"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "M"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "N"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "K"}) attributes {tile.constants = {BK = 32 : i64, BM = 64 : i64, BN = 64 : i64}, tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xf16>
    %cst_0 = arith.constant dense<0> : tensor<1x32xi64>
    %cst_1 = arith.constant dense<0> : tensor<64x1xi64>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<32x64xf16>
    %cst_3 = arith.constant dense<0> : tensor<1x64xi64>
    %cst_4 = arith.constant dense<0> : tensor<32x1xi64>
    %c32_i32 = arith.constant 32 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %0 = tile.program_id x
    %1 = arith.muli %0, %c64_i32 : i32
    %2 = tile.program_id y
    %3 = arith.muli %2, %c64_i32 : i32
    %4 = arith.extsi %arg3 : i32 to i64
    %5 = arith.extsi %arg5 : i32 to i64
    %6 = arith.extsi %arg4 : i32 to i64
    %7:3 = scf.for %arg6 = %c0_i32 to %arg5 step %c32_i32 iter_args(%arg7 = %cst_5, %arg8 = %c0_i32, %arg9 = %c0_i32) -> (tensor<64x64xf32>, i32, i32)  : i32 {
      %39 = arith.extsi %arg9 : i32 to i64
      %40 = arith.muli %39, %6 : i64
      %41 = tile.addptr %arg1, %40 : !tile.ptr<f16>, i64
      %42 = arith.extsi %3 : i32 to i64
      %43 = tile.addptr %41, %42 : !tile.ptr<f16>, i64
      %44 = tile.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %45 = arith.extsi %44 : tensor<32xi32> to tensor<32xi64>
      %46 = tile.expand_dims %45 {axis = 1 : i32} : tensor<32xi64> -> tensor<32x1xi64>
      %47 = tile.splat %6 : tensor<32x1xi64>
      %48 = arith.muli %46, %47 : tensor<32x1xi64>
      %49 = tile.splat %43 : tensor<32x1x!tile.ptr<f16>>
      %50 = tile.addptr %49, %48 : tensor<32x1x!tile.ptr<f16>>, tensor<32x1xi64>
      %51 = tile.splat %39 : tensor<32x1xi64>
      %52 = arith.addi %51, %46 : tensor<32x1xi64>
      %53 = tile.splat %5 : tensor<32x1xi64>
      %54 = arith.cmpi slt, %52, %53 : tensor<32x1xi64>
      %55 = arith.cmpi sge, %52, %cst_4 : tensor<32x1xi64>
      %56 = arith.andi %55, %54 : tensor<32x1xi1>
      %57 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %58 = arith.extsi %57 : tensor<64xi32> to tensor<64xi64>
      %59 = tile.expand_dims %58 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
      %60 = tile.broadcast %50 : tensor<32x1x!tile.ptr<f16>> -> tensor<32x64x!tile.ptr<f16>>
      %61 = tile.broadcast %59 : tensor<1x64xi64> -> tensor<32x64xi64>
      %62 = tile.addptr %60, %61 : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi64>
      %63 = tile.splat %42 : tensor<1x64xi64>
      %64 = arith.addi %63, %59 : tensor<1x64xi64>
      %65 = tile.splat %6 : tensor<1x64xi64>
      %66 = arith.cmpi slt, %64, %65 : tensor<1x64xi64>
      %67 = arith.cmpi sge, %64, %cst_3 : tensor<1x64xi64>
      %68 = arith.andi %67, %66 : tensor<1x64xi1>
      %69 = tile.broadcast %56 : tensor<32x1xi1> -> tensor<32x64xi1>
      %70 = tile.broadcast %68 : tensor<1x64xi1> -> tensor<32x64xi1>
      %71 = arith.andi %69, %70 : tensor<32x64xi1>
      %72 = tile.load %62, %71, %cst_2 : tensor<32x64x!tile.ptr<f16>>
      %73 = arith.extsi %1 : i32 to i64
      %74 = arith.muli %73, %5 : i64
      %75 = tile.addptr %arg0, %74 : !tile.ptr<f16>, i64
      %76 = arith.extsi %arg8 : i32 to i64
      %77 = tile.addptr %75, %76 : !tile.ptr<f16>, i64
      %78 = tile.expand_dims %58 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
      %79 = tile.splat %5 : tensor<64x1xi64>
      %80 = arith.muli %78, %79 : tensor<64x1xi64>
      %81 = tile.splat %77 : tensor<64x1x!tile.ptr<f16>>
      %82 = tile.addptr %81, %80 : tensor<64x1x!tile.ptr<f16>>, tensor<64x1xi64>
      %83 = tile.splat %73 : tensor<64x1xi64>
      %84 = arith.addi %83, %78 : tensor<64x1xi64>
      %85 = tile.splat %4 : tensor<64x1xi64>
      %86 = arith.cmpi slt, %84, %85 : tensor<64x1xi64>
      %87 = arith.cmpi sge, %84, %cst_1 : tensor<64x1xi64>
      %88 = arith.andi %87, %86 : tensor<64x1xi1>
      %89 = tile.expand_dims %45 {axis = 0 : i32} : tensor<32xi64> -> tensor<1x32xi64>
      %90 = tile.broadcast %82 : tensor<64x1x!tile.ptr<f16>> -> tensor<64x32x!tile.ptr<f16>>
      %91 = tile.broadcast %89 : tensor<1x32xi64> -> tensor<64x32xi64>
      %92 = tile.addptr %90, %91 : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi64>
      %93 = tile.splat %76 : tensor<1x32xi64>
      %94 = arith.addi %93, %89 : tensor<1x32xi64>
      %95 = tile.splat %5 : tensor<1x32xi64>
      %96 = arith.cmpi slt, %94, %95 : tensor<1x32xi64>
      %97 = arith.cmpi sge, %94, %cst_0 : tensor<1x32xi64>
      %98 = arith.andi %97, %96 : tensor<1x32xi1>
      %99 = tile.broadcast %88 : tensor<64x1xi1> -> tensor<64x32xi1>
      %100 = tile.broadcast %98 : tensor<1x32xi1> -> tensor<64x32xi1>
      %101 = arith.andi %99, %100 : tensor<64x32xi1>
      %102 = tile.load %92, %101, %cst : tensor<64x32x!tile.ptr<f16>>
      %103 = tile.dot %102, %72, %arg7, ieee : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
      %104 = arith.addi %arg8, %c32_i32 : i32
      %105 = arith.addi %arg9, %c32_i32 : i32
      scf.yield %103, %104, %105 : tensor<64x64xf32>, i32, i32
    } {tile.num_stages = 1 : i32}
    %8 = arith.extsi %1 : i32 to i64
    %9 = arith.muli %8, %6 : i64
    %10 = tile.addptr %arg2, %9 : !tile.ptr<f32>, i64
    %11 = arith.extsi %3 : i32 to i64
    %12 = tile.addptr %10, %11 : !tile.ptr<f32>, i64
    %13 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %14 = arith.extsi %13 : tensor<64xi32> to tensor<64xi64>
    %15 = tile.expand_dims %14 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
    %16 = tile.splat %6 : tensor<64x1xi64>
    %17 = arith.muli %15, %16 : tensor<64x1xi64>
    %18 = tile.splat %12 : tensor<64x1x!tile.ptr<f32>>
    %19 = tile.addptr %18, %17 : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi64>
    %20 = tile.splat %8 : tensor<64x1xi64>
    %21 = arith.addi %20, %15 : tensor<64x1xi64>
    %22 = tile.splat %4 : tensor<64x1xi64>
    %23 = arith.cmpi slt, %21, %22 : tensor<64x1xi64>
    %24 = arith.cmpi sge, %21, %cst_1 : tensor<64x1xi64>
    %25 = arith.andi %24, %23 : tensor<64x1xi1>
    %26 = tile.expand_dims %14 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
    %27 = tile.broadcast %19 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %28 = tile.broadcast %26 : tensor<1x64xi64> -> tensor<64x64xi64>
    %29 = tile.addptr %27, %28 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi64>
    %30 = tile.splat %11 : tensor<1x64xi64>
    %31 = arith.addi %30, %26 : tensor<1x64xi64>
    %32 = tile.splat %6 : tensor<1x64xi64>
    %33 = arith.cmpi slt, %31, %32 : tensor<1x64xi64>
    %34 = arith.cmpi sge, %31, %cst_3 : tensor<1x64xi64>
    %35 = arith.andi %34, %33 : tensor<1x64xi1>
    %36 = tile.broadcast %25 : tensor<64x1xi1> -> tensor<64x64xi1>
    %37 = tile.broadcast %35 : tensor<1x64xi1> -> tensor<64x64xi1>
    %38 = arith.andi %36, %37 : tensor<64x64xi1>
    tile.store %29, %7#0, %38 : tensor<64x64x!tile.ptr<f32>>
    return
  }
}
