// RUN: tegula-opt %s -split-input-file -accelerate-dot=chip=sm_90a | FileCheck %s
// RUN: tegula-opt %s -split-input-file -accelerate-dot=chip=sm_90a -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: tegula-opt %s -split-input-file -accelerate-dot | FileCheck %s --check-prefix=AMPERE

// On sm_90a a bf16 dot whose M holds whole warpgroups of 16-row slices goes
// to wgmma: mma version 3, all warps along M; both operands keep their
// layouts (the lowering stores them into swizzled tiles for the
// descriptors). For sm_80 the same dot stays on mma.sync.
#b = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-DAG: #[[MMA:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>
// CHECK-LABEL: func.func @bf16
// CHECK:   tile.dot %{{.*}}, %{{.*}}, %{{.*}}, ieee : tensor<64x32xbf16, #blocked> * tensor<32x64xbf16, #blocked> -> tensor<64x64xf32, #[[MMA]]>
// AMPERE: #tilegpu.mma<{warpsPerCTA = [2, 2]}>
// AMPERE-NOT: version = 3
// A 64x64x32 tile at 4 warps: one warpgroup, one m64n64 instruction per
// k16 step (2), both operands from shared memory: A K-major (64-byte rows,
// 64-byte swizzle, SBO 512: descriptor 0x8000002000010000), B N-major
// (128-byte swizzle, LBO 32 x 128 = 4096, SBO 1024: 0x4000004001000000).
// Each is a low word (address field, LBO) with its constant high word.
// LLVM-LABEL: llvm.func @bf16
// LLVM-DAG: llvm.mlir.constant(65536 : i32)
// LLVM-DAG: llvm.mlir.constant(-9223371899415822336 : i64)
// LLVM-DAG: llvm.mlir.constant(16777216 : i32)
// LLVM-DAG: llvm.mlir.constant(4611686293305294848 : i64)
// LLVM: nvvm.barrier0
// LLVM: st.shared
// LLVM: fence.proxy.async.shared::cta
// LLVM: nvvm.barrier0
// LLVM: wgmma.fence.sync.aligned
// LLVM-COUNT-2: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, 0, 1;
// LLVM: wgmma.commit_group.sync.aligned
// LLVM: wgmma.wait_group.sync.aligned 0;
func.func @bf16(%a: tensor<64x32xbf16, #b>, %b: tensor<32x64xbf16, #b>, %c: tensor<64x64xf32, #b>) -> tensor<64x64xf32, #b> {
  %d = tile.dot %a, %b, %c, ieee : tensor<64x32xbf16, #b> * tensor<32x64xbf16, #b> -> tensor<64x64xf32, #b>
  return %d : tensor<64x64xf32, #b>
}
}

// -----

// Not whole warpgroups: 32 rows at 4 warps (wgmma's m64 needs 64 per
// warpgroup) - mma.sync.
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @small
// CHECK-NOT: version = 3
// CHECK: return
func.func @small(%a: tensor<32x32xbf16, #b>, %b: tensor<32x32xbf16, #b>, %c: tensor<32x32xf32, #b>) -> tensor<32x32xf32, #b> {
  %d = tile.dot %a, %b, %c, ieee : tensor<32x32xbf16, #b> * tensor<32x32xbf16, #b> -> tensor<32x32xf32, #b>
  return %d : tensor<32x32xf32, #b>
}
}
