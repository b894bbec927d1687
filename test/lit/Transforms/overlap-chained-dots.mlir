// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -pipeline-dot-operands -overlap-chained-dots | FileCheck %s
// RUN: tegula-opt %s -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -coalesce -remove-layout-conversions -cse -pipeline-dot-operands -overlap-chained-dots=explain=true 2>&1 | FileCheck %s --check-prefix=CPASYNC
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -pipeline-dot-operands -overlap-chained-dots -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM

// Flash attention (examples::attention_fwd_descriptors, 64 x 64 blocks, d 64,
// 4 warps) with K and V in TMA rings: S = Q K^T and O = P V + alpha O on
// wgmma. The loop is rotated by half an iteration: a prologue (under
// `lb < ub`) runs iteration 0 up to V's ring wait; each iteration then
// issues the next S, then this P V, waits for S alone (wait_group 1: P V
// stays in flight), refills K and runs the softmax, waits for P V keeping
// P's fragments alive (keepA), refills V and rescales O for the next P V;
// the epilogue issues the last P V.
// CHECK:      %[[K:.*]] = tilegpu.alloc_shared {mbarriers} : <3 x[64, 64] x bf16
// CHECK:      %[[V:.*]] = tilegpu.alloc_shared {mbarriers} : <3 x[64, 64] x bf16
// CHECK:      tilegpu.tma_load %[[V]][%c1_i32
// CHECK:      %[[RUNS:.*]] = arith.cmpi slt, %c0_i32, %[[UB:arg4]] : i32
// CHECK:      scf.if %[[RUNS]] -> (tensor<64xf32, #slice>, tensor<64xf32, #slice>, tensor<64x64xf32, #mma>) {
// CHECK:        tilegpu.tma_wait %[[K]][
// CHECK-NEXT:   %[[S0:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[K]][%{{.*}}], %{{.*}} {transposeB}
// CHECK-NEXT:   tilegpu.wgmma_wait %[[S0]] {pending = 0 : i32}
// CHECK-NOT:    tilegpu.dot_shared_b
// CHECK:        %[[LAST:.*]] = arith.subi %[[UB]], %c64_i32 : i32
// CHECK:        %[[LOOP:.*]]:8 = scf.for %[[J:.*]] = %c0_i32 to %[[LAST]] step %c64_i32 iter_args(
// CHECK:          %[[NEXT:.*]] = arith.addi %[[J]], %c64_i32 : i32
// CHECK:          tilegpu.tma_wait %[[K]][
// CHECK-NEXT:     %[[S:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[K]][%{{.*}}], %{{.*}} {transposeB}
// CHECK-NEXT:     tilegpu.tma_wait %[[V]][
// CHECK-NEXT:     %[[O:.*]] = tilegpu.dot_shared_b %{{.*}}, %[[V]][
// CHECK-NEXT:     tilegpu.wgmma_wait %[[S]] {pending = 1 : i32}
// CHECK:          tilegpu.tma_load %[[K]]
// CHECK:          math.exp
// CHECK:          %[[OD:.*]] = tilegpu.wgmma_wait %[[O]] {keepA, pending = 0 : i32}
// CHECK:          tilegpu.tma_load %[[V]]
// CHECK:          arith.mulf %[[OD]], %{{.*}} : tensor<64x64xf32, #mma>
// CHECK:          scf.yield
// CHECK:        tilegpu.tma_wait %[[V]][%[[LOOP]]#3], %[[LOOP]]#4
// CHECK-NEXT:   %[[OL:.*]] = tilegpu.dot_shared_b %[[LOOP]]#5, %[[V]][%[[LOOP]]#3], %[[LOOP]]#6
// CHECK-NEXT:   %[[OLD:.*]] = tilegpu.wgmma_wait %[[OL]] {pending = 0 : i32}
// CHECK:        scf.yield %[[LOOP]]#0, %[[LOOP]]#1, %[[OLD]]
// CHECK:      } else {
// CHECK-NEXT:   scf.yield

// Lowered, the loop's first wait (S: 32 accumulator registers a thread)
// leaves one group in flight, and P V's wait passes P's 16 packed fragment
// registers through with its 32 accumulators, so that nothing reuses them
// while the tensor cores may still read them.
// LLVM: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 1;", "{{(=f,){31}=f,0,}}
// LLVM: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;", "{{(=f,){32}(=r,){15}=r,0,}}

// Without TMA the rings are cp.async's, whose waits count commit groups
// across rings in issue order: the loop is left as it is.
// CPASYNC: remark: overlap-chained-dots: not rotated: an operation with side effects the rotation cannot reorder
// CPASYNC-NOT: keepA

module {
  func.func @attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "q"}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "k"}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "v"}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.name = "out"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "seq_len"}, %arg5: i32 {tile.divisibility = 16 : i32, tile.name = "rows"}, %arg6: f32 {tile.name = "scale"}) attributes {tile.constants = {BM = 64 : i64, BN = 64 : i64, D = 64 : i64, causal = 0 : i64}, tile.kernel} {
    %cst = arith.constant dense<0xFF800000> : tensor<64x64xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %cst_1 = arith.constant dense<64> : tensor<64x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_4 = arith.constant dense<0xFF800000> : tensor<64xf32>
    %c64_i32 = arith.constant 64 : i32
    %c64_i64 = arith.constant 64 : i64
    %c1_i64 = arith.constant 1 : i64
    %0 = arith.extsi %arg5 : i32 to i64
    %1 = tile.make_tensor_descriptor %arg1, [%0, %c64_i64], [%c64_i64, %c1_i64] : <bf16> -> <tensor<64x64xbf16>>
    %2 = tile.make_tensor_descriptor %arg2, [%0, %c64_i64], [%c64_i64, %c1_i64] : <bf16> -> <tensor<64x64xbf16>>
    %3 = tile.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %4 = tile.program_id x
    %5 = arith.muli %4, %c64_i32 : i32
    %6 = tile.splat %5 : tensor<64xi32>
    %7 = arith.addi %6, %3 : tensor<64xi32>
    %8 = tile.program_id y
    %9 = arith.muli %8, %arg4 : i32
    %10 = tile.expand_dims %7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %11 = tile.splat %arg4 : tensor<64x1xi32>
    %12 = arith.cmpi slt, %10, %11 : tensor<64x1xi32>
    %13 = tile.expand_dims %3 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %14 = tile.splat %9 : tensor<64x1xi32>
    %15 = arith.addi %14, %10 : tensor<64x1xi32>
    %16 = arith.muli %15, %cst_1 : tensor<64x1xi32>
    %17 = tile.splat %arg0 : tensor<64x1x!tile.ptr<bf16>>
    %18 = tile.addptr %17, %16 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %19 = tile.broadcast %18 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %20 = tile.broadcast %13 : tensor<1x64xi32> -> tensor<64x64xi32>
    %21 = tile.addptr %19, %20 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %22 = tile.broadcast %12 : tensor<64x1xi1> -> tensor<64x64xi1>
    %23 = tile.load %21, %22, %cst_0 : tensor<64x64x!tile.ptr<bf16>>
    %24:3 = scf.for %arg7 = %c0_i32 to %arg4 step %c64_i32 iter_args(%arg8 = %cst_4, %arg9 = %cst_3, %arg10 = %cst_2) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>)  : i32 {
      %33 = tile.splat %arg7 : tensor<64xi32>
      %34 = arith.addi %33, %3 : tensor<64xi32>
      %35 = arith.addi %9, %arg7 : i32
      %36 = tile.descriptor_load %1[%35, %c0_i32] : <tensor<64x64xbf16>> -> tensor<64x64xbf16>
      %37 = tile.trans %36 {order = array<i32: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
      %38 = tile.dot %23, %37, %cst_2, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      %39 = tile.splat %arg6 : tensor<64x64xf32>
      %40 = arith.mulf %38, %39 : tensor<64x64xf32>
      %41 = tile.expand_dims %34 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %42 = tile.splat %arg4 : tensor<1x64xi32>
      %43 = arith.cmpi slt, %41, %42 : tensor<1x64xi32>
      %44 = tile.broadcast %43 : tensor<1x64xi1> -> tensor<64x64xi1>
      %45 = arith.select %44, %40, %cst : tensor<64x64xi1>, tensor<64x64xf32>
      %46 = tile.reduce(%45) {axis = 1 : i32} : (tensor<64x64xf32>) -> tensor<64xf32> {
      ^bb0(%arg11: f32, %arg12: f32):
        %63 = arith.maximumf %arg11, %arg12 : f32
        tile.reduce.return %63 : f32
      }
      %47 = arith.maximumf %arg8, %46 : tensor<64xf32>
      %48 = tile.expand_dims %47 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %49 = tile.broadcast %48 : tensor<64x1xf32> -> tensor<64x64xf32>
      %50 = arith.subf %45, %49 : tensor<64x64xf32>
      %51 = math.exp %50 : tensor<64x64xf32>
      %52 = arith.subf %arg8, %47 : tensor<64xf32>
      %53 = math.exp %52 : tensor<64xf32>
      %54 = tile.reduce(%51) {axis = 1 : i32} : (tensor<64x64xf32>) -> tensor<64xf32> {
      ^bb0(%arg11: f32, %arg12: f32):
        %63 = arith.addf %arg11, %arg12 : f32
        tile.reduce.return %63 : f32
      }
      %55 = arith.mulf %arg9, %53 : tensor<64xf32>
      %56 = arith.addf %55, %54 : tensor<64xf32>
      %57 = tile.expand_dims %53 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %58 = tile.broadcast %57 : tensor<64x1xf32> -> tensor<64x64xf32>
      %59 = arith.mulf %arg10, %58 : tensor<64x64xf32>
      %60 = tile.descriptor_load %2[%35, %c0_i32] : <tensor<64x64xbf16>> -> tensor<64x64xbf16>
      %61 = arith.truncf %51 : tensor<64x64xf32> to tensor<64x64xbf16>
      %62 = tile.dot %61, %60, %59, ieee : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
      scf.yield %47, %56, %62 : tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>
    }
    %25 = tile.expand_dims %24#1 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %26 = tile.broadcast %25 : tensor<64x1xf32> -> tensor<64x64xf32>
    %27 = arith.divf %24#2, %26 : tensor<64x64xf32>
    %28 = arith.truncf %27 : tensor<64x64xf32> to tensor<64x64xbf16>
    %29 = tile.splat %arg3 : tensor<64x1x!tile.ptr<bf16>>
    %30 = tile.addptr %29, %16 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %31 = tile.broadcast %30 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %32 = tile.addptr %31, %20 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    tile.store %32, %28, %22 : tensor<64x64x!tile.ptr<bf16>>
    return
  }
}
