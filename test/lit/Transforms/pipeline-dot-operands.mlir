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

