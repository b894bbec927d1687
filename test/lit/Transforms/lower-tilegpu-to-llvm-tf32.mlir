// RUN: tegula-opt %s -accelerate-dot -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=SM80
// RUN: tegula-opt %s -accelerate-dot -allocate-shared-memory -lower-tilegpu-to-llvm=chip=sm_90a | FileCheck %s --check-prefix=SM90

// f32 operands round to tf32 (nearest, ties to even) before mma.sync reads
// them. sm_80 has no such instruction: integer arithmetic (add the rounding
// bias, mask the low 13 bits; seven instructions an element). From sm_90 on
// one cvt.rn.tf32.f32 does it for tf32's operands. tf32x3 splits x into
// hi = tf32(x) and lo = tf32(x - hi), which needs hi's low bits zero: it
// keeps the integer rounding everywhere.
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// SM80-LABEL: llvm.func @tf32(
// SM80: llvm.mlir.constant(-8192 : i32)
// SM80-NOT: cvt.rn.tf32.f32
// SM80: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>
// SM90-LABEL: llvm.func @tf32(
// SM90-NOT: llvm.mlir.constant(-8192 : i32)
// SM90: llvm.inline_asm "cvt.rn.tf32.f32 $0, $1;", "=r,f"
// SM90: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>
// SM90-NOT: llvm.mlir.constant(-8192 : i32)
// SM90: llvm.return
  func.func @tf32(%a: tensor<32x16xf32, #b>, %bb: tensor<16x32xf32, #b>, %c: tensor<32x32xf32, #b>) {
    %0 = tile.dot %a, %bb, %c, tf32 : tensor<32x16xf32, #b> * tensor<16x32xf32, #b> -> tensor<32x32xf32, #b>
    return
  }
// SM90-LABEL: llvm.func @tf32x3
// SM90: llvm.mlir.constant(-8192 : i32)
// SM90-NOT: cvt.rn.tf32.f32
// SM90: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>
// SM90-NOT: cvt.rn.tf32.f32
// SM90: llvm.return
  func.func @tf32x3(%a: tensor<32x16xf32, #b>, %bb: tensor<16x32xf32, #b>, %c: tensor<32x32xf32, #b>) {
    %0 = tile.dot %a, %bb, %c, tf32x3 : tensor<32x16xf32, #b> * tensor<16x32xf32, #b> -> tensor<32x32xf32, #b>
    return
  }
}
