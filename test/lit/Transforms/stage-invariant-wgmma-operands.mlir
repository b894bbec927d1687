// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -coalesce -remove-layout-conversions -cse -pipeline-dot-operands -stage-invariant-wgmma-operands | FileCheck %s --check-prefix=STAGED
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -coalesce -remove-layout-conversions -cse -pipeline-dot-operands -stage-invariant-wgmma-operands -overlap-chained-dots | FileCheck %s
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -coalesce -remove-layout-conversions -cse -pipeline-dot-operands -stage-invariant-wgmma-operands -overlap-chained-dots | FileCheck %s --check-prefix=NOQREG
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -coalesce -remove-layout-conversions -cse -pipeline-dot-operands -stage-invariant-wgmma-operands -overlap-chained-dots -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: not tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -coalesce -remove-layout-conversions -cse -pipeline-dot-operands=num-stages=4 -stage-invariant-wgmma-operands 2>&1 | FileCheck %s --check-prefix=FULL

// Flash attention (examples::attention_fwd_descriptors, causal) at 128 x 128
// blocks, d 128, 8 warps. Q is loaded before the loop and is S = Q K^T's A
// operand in every iteration: wgmma cannot keep it in registers across the
// loop (ptxas 13.0 gives those registers to the softmax; wrong results on an
// H100). It is stored once before the loop (as loaded, 16 bytes a thread at
// a time) into a one-stage ring in wgmma's K-major tile, fenced for the
// async proxy, and S = Q K^T reads both operands from rings (dot_shared);
// P V still takes P, made in the loop, from registers.
// STAGED:      %[[QLOAD:.*]] = tile.load {{.*}} : tensor<128x128x!tile.ptr<bf16>, #blocked>
// STAGED:      %[[Q:.*]] = tilegpu.alloc_shared : <1 x[128, 128] x bf16, contiguousDim = 1, swizzle = [1, 2, 4], blockElements = 64>
// STAGED:      tilegpu.store_shared %[[QLOAD]], %[[Q]][%{{.*}}] {fenceAsyncProxy} : tensor<128x128xbf16, #blocked>
// STAGED:      scf.for
// STAGED:        tilegpu.dot_shared %[[Q]][%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}} {transposeB}
// STAGED:        tilegpu.dot_shared_b %{{.*}}, %{{.*}}[
// STAGED-NOT:  tilegpu.dot_shared_b

// Rotated by overlap-chained-dots, the staged Q feeds S in the prologue and
// in the loop.
// CHECK:      %[[QLOAD:.*]] = tile.load {{.*}} : tensor<128x128x!tile.ptr<bf16>, #blocked>
// CHECK:      %[[K:.*]] = tilegpu.alloc_shared {mbarriers} : <3 x[128, 128] x bf16
// CHECK:      %[[V:.*]] = tilegpu.alloc_shared {mbarriers} : <3 x[128, 128] x bf16
// CHECK:      %[[Q:.*]] = tilegpu.alloc_shared : <1 x[128, 128] x bf16, contiguousDim = 1, swizzle = [1, 2, 4], blockElements = 64>
// CHECK:      tilegpu.store_shared %[[QLOAD]], %[[Q]][%[[ZERO:.*]]] {fenceAsyncProxy} : tensor<128x128xbf16, #blocked>
// CHECK:      scf.if
// CHECK:        tilegpu.dot_shared %[[Q]][%{{.*}}], %[[K]][%{{.*}}], %{{.*}} {transposeB}
// CHECK:        scf.for
// CHECK:          tilegpu.dot_shared %[[Q]][%{{.*}}], %[[K]][%{{.*}}], %{{.*}} {transposeB}
// CHECK-NEXT:     tilegpu.tma_wait %[[V]][
// CHECK-NEXT:     tilegpu.dot_shared_b %{{.*}}, %[[V]][
// CHECK-NEXT:     tilegpu.wgmma_wait %{{.*}} {pending = 1 : i32}
// CHECK:          tilegpu.wgmma_wait %{{.*}} {keepA, pending = 0 : i32}
// CHECK:        tilegpu.dot_shared_b %{{.*}}, %[[V]][

// Q never becomes fragments in registers (only P does, from the mma layout).
// NOQREG-NOT: #blocked> -> tensor<128x128xbf16, #dot_op>

// With four stages the K and V rings take 256 KiB: no room for Q beside
// them, and the kernel is rejected with the sizes.
// FULL: error: the loop-invariant A operand of this dot (32768 bytes) must be kept in shared memory on sm_90a
// FULL-SAME: needs {{[0-9]+}} bytes, more than the 232448 a CTA may use

// Lowered: each of the 256 threads stores its 64 elements of Q in eight
// 16-byte vectors, fences the async proxy and meets the others at a barrier
// before the first wgmma reads the tile.
// LLVM-COUNT-8: st.shared.v4.b32
// LLVM-NOT:     wgmma.mma_async
// LLVM:         fence.proxy.async.shared::cta;
// LLVM-NEXT:    nvvm.barrier0
// LLVM:         wgmma.mma_async

module {
  func.func @attention_fwd_descriptors(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "q"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "k"}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "v"}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "out"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "seq_len"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "rows"}, %arg6: f32 {tile.name = "scale"}) attributes {tile.constants = {BM = 128 : i64, BN = 128 : i64, D = 128 : i64, causal = 1 : i64}, tile.kernel} {
    %cst = arith.constant dense<0xFF800000> : tensor<128x128xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %cst_1 = arith.constant dense<128> : tensor<128x1xi32>
    %cst_2 = arith.constant 1.44269502 : f32
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_5 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %c128_i32 = arith.constant 128 : i32
    %c128_i64 = arith.constant 128 : i64
    %c1_i64 = arith.constant 1 : i64
    %0 = arith.extsi %arg5 : i32 to i64
    %1 = tile.make_tensor_descriptor %arg1, [%0, %c128_i64], [%c128_i64, %c1_i64] : <bf16> -> <tensor<128x128xbf16>>
    %2 = tile.make_tensor_descriptor %arg2, [%0, %c128_i64], [%c128_i64, %c1_i64] : <bf16> -> <tensor<128x128xbf16>>
    %3 = tile.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %4 = tile.program_id x
    %5 = arith.muli %4, %c128_i32 : i32
    %6 = tile.splat %5 : tensor<128xi32>
    %7 = arith.addi %6, %3 : tensor<128xi32>
    %8 = tile.program_id y
    %9 = arith.muli %8, %arg4 : i32
    %10 = tile.expand_dims %7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %11 = tile.splat %arg4 : tensor<128x1xi32>
    %12 = arith.cmpi slt, %10, %11 : tensor<128x1xi32>
    %13 = tile.expand_dims %3 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %14 = tile.splat %9 : tensor<128x1xi32>
    %15 = arith.addi %14, %10 : tensor<128x1xi32>
    %16 = arith.muli %15, %cst_1 : tensor<128x1xi32>
    %17 = tile.splat %arg0 : tensor<128x1x!tile.ptr<bf16>>
    %18 = tile.addptr %17, %16 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %19 = tile.broadcast %18 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
    %20 = tile.broadcast %13 : tensor<1x128xi32> -> tensor<128x128xi32>
    %21 = tile.addptr %19, %20 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
    %22 = tile.broadcast %12 : tensor<128x1xi1> -> tensor<128x128xi1>
    %23 = tile.load %21, %22, %cst_0 : tensor<128x128x!tile.ptr<bf16>>
    %24 = arith.addi %4, %c1_i32 : i32
    %25 = arith.muli %24, %c128_i32 : i32
    %26 = arith.minsi %25, %arg4 : i32
    %27:3 = scf.for %arg7 = %c0_i32 to %26 step %c128_i32 iter_args(%arg8 = %cst_5, %arg9 = %cst_4, %arg10 = %cst_3) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>)  : i32 {
      %36 = tile.splat %arg7 : tensor<128xi32>
      %37 = arith.addi %36, %3 : tensor<128xi32>
      %38 = arith.mulf %arg6, %cst_2 : f32
      %39 = arith.addi %9, %arg7 : i32
      %40 = tile.descriptor_load %1[%39, %c0_i32] : <tensor<128x128xbf16>> -> tensor<128x128xbf16>
      %41 = tile.trans %40 {order = array<i32: 1, 0>} : tensor<128x128xbf16> -> tensor<128x128xbf16>
      %42 = tile.dot %23, %41, %cst_3, ieee : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
      %43 = tile.splat %38 : tensor<128x128xf32>
      %44 = arith.mulf %42, %43 : tensor<128x128xf32>
      %45 = tile.expand_dims %37 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %46 = tile.splat %arg4 : tensor<1x128xi32>
      %47 = arith.cmpi slt, %45, %46 : tensor<1x128xi32>
      %48 = tile.broadcast %45 : tensor<1x128xi32> -> tensor<128x128xi32>
      %49 = tile.broadcast %10 : tensor<128x1xi32> -> tensor<128x128xi32>
      %50 = arith.cmpi sle, %48, %49 : tensor<128x128xi32>
      %51 = tile.broadcast %47 : tensor<1x128xi1> -> tensor<128x128xi1>
      %52 = arith.andi %51, %50 : tensor<128x128xi1>
      %53 = arith.select %52, %44, %cst : tensor<128x128xi1>, tensor<128x128xf32>
      %54 = tile.reduce(%53) {axis = 1 : i32} : (tensor<128x128xf32>) -> tensor<128xf32> {
      ^bb0(%arg11: f32, %arg12: f32):
        %71 = arith.maximumf %arg11, %arg12 : f32
        tile.reduce.return %71 : f32
      }
      %55 = arith.maximumf %arg8, %54 : tensor<128xf32>
      %56 = tile.expand_dims %55 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %57 = tile.broadcast %56 : tensor<128x1xf32> -> tensor<128x128xf32>
      %58 = arith.subf %53, %57 : tensor<128x128xf32>
      %59 = math.exp2 %58 : tensor<128x128xf32>
      %60 = arith.subf %arg8, %55 : tensor<128xf32>
      %61 = math.exp2 %60 : tensor<128xf32>
      %62 = tile.reduce(%59) {axis = 1 : i32} : (tensor<128x128xf32>) -> tensor<128xf32> {
      ^bb0(%arg11: f32, %arg12: f32):
        %71 = arith.addf %arg11, %arg12 : f32
        tile.reduce.return %71 : f32
      }
      %63 = arith.mulf %arg9, %61 : tensor<128xf32>
      %64 = arith.addf %63, %62 : tensor<128xf32>
      %65 = tile.expand_dims %61 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %66 = tile.broadcast %65 : tensor<128x1xf32> -> tensor<128x128xf32>
      %67 = arith.mulf %arg10, %66 : tensor<128x128xf32>
      %68 = tile.descriptor_load %2[%39, %c0_i32] : <tensor<128x128xbf16>> -> tensor<128x128xbf16>
      %69 = arith.truncf %59 : tensor<128x128xf32> to tensor<128x128xbf16>
      %70 = tile.dot %69, %68, %67, ieee : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
      scf.yield %55, %64, %70 : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
    }
    %28 = tile.expand_dims %27#1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %29 = tile.broadcast %28 : tensor<128x1xf32> -> tensor<128x128xf32>
    %30 = arith.divf %27#2, %29 : tensor<128x128xf32>
    %31 = arith.truncf %30 : tensor<128x128xf32> to tensor<128x128xbf16>
    %32 = tile.splat %arg3 : tensor<128x1x!tile.ptr<bf16>>
    %33 = tile.addptr %32, %16 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %34 = tile.broadcast %33 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
    %35 = tile.addptr %34, %20 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
    tile.store %35, %31, %22 : tensor<128x128x!tile.ptr<bf16>>
    return
  }
}

