// RUN: tegula-opt %s --instrument-for-simulator | FileCheck %s

// A one-warp 16x8x16 f16 product written the way tensor-core lowering will
// emit it: cp.async global -> shared (B's upper lanes zero-fill), wait,
// barrier, ldmatrix.x4 (A) and ldmatrix.x2.trans (B), mma.sync, D stored
// through its fragment layout. The simulator maps each NVVM op onto its
// tensor-core semantics; test/sim/SimulatorRuntimeTest.cpp runs this file
// and compares D with the plain product.

// CHECK-LABEL: llvm.func @mma_16x8x16(
// CHECK-NOT: nvvm.
// CHECK: llvm.call @__tegula_sim_cp_async(
// CHECK: llvm.call @__tegula_sim_cp_async_commit()
// CHECK: llvm.call @__tegula_sim_cp_async_wait(
// CHECK: llvm.call @__tegula_sim_barrier(
// CHECK: llvm.call @__tegula_sim_ldmatrix(
// CHECK: llvm.call @__tegula_sim_ldmatrix(
// CHECK: llvm.call @__tegula_sim_mma(
// CHECK: llvm.return
module attributes {tilegpu.num_warps = 1 : i32} {
  llvm.mlir.global internal @smem() {addr_space = 3 : i32} : !llvm.array<1024 x i8>

  llvm.func @mma_16x8x16(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %d: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c2 = llvm.mlir.constant(2 : i32) : i32
    %c4 = llvm.mlir.constant(4 : i32) : i32
    %c8 = llvm.mlir.constant(8 : i32) : i32
    %c15 = llvm.mlir.constant(15 : i32) : i32
    %c16 = llvm.mlir.constant(16 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %c512 = llvm.mlir.constant(512 : i32) : i32
    %zero = llvm.mlir.constant(0.0 : f32) : f32
    %lane = nvvm.read.ptx.sreg.tid.x : i32
    %smem = llvm.mlir.addressof @smem : !llvm.ptr<3>

    // A: 512 bytes, 16 per lane. B: 256 bytes from lanes 0-15; lanes 16-31
    // copy 0 bytes and zero-fill the spare shared bytes after B.
    %off = llvm.mul %lane, %c16 : i32
    %aSrc = llvm.getelementptr %a[%off] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i8
    %aDst = llvm.getelementptr %smem[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.cp.async.shared.global %aDst, %aSrc, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    %laneLo = llvm.and %lane, %c15 : i32
    %bOff = llvm.mul %laneLo, %c16 : i32
    %bSrc = llvm.getelementptr %b[%bOff] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i8
    %bDstOff = llvm.add %off, %c512 : i32
    %bDst = llvm.getelementptr %smem[%bDstOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %isLow = llvm.icmp "ult" %lane, %c16 : i32
    %bBytes = llvm.select %isLow, %c16, %c0 : i1, i32
    nvvm.cp.async.shared.global %bDst, %bSrc, 16, cache = cg, %bBytes : !llvm.ptr<3>, !llvm.ptr<1>, i32
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 0
    nvvm.barrier0

    // ldmatrix.x4: lane l gives row l % 16 of A, columns 8 * (l / 16).
    %hi = llvm.lshr %lane, %c4 : i32
    %rowOff = llvm.mul %laneLo, %c32 : i32
    %colOff = llvm.mul %hi, %c16 : i32
    %aRowOff = llvm.add %rowOff, %colOff : i32
    %aRow = llvm.getelementptr %smem[%aRowOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %af = nvvm.ldmatrix %aRow {num = 4 : i32, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
    // ldmatrix.x2.trans over B (k x n row-major): the col-major B fragment.
    %bRowOff = llvm.add %bOff, %c512 : i32
    %bRow = llvm.getelementptr %smem[%bRowOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %bf = nvvm.ldmatrix %bRow {num = 2 : i32, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>

    %a0i = llvm.extractvalue %af[0] : !llvm.struct<(i32, i32, i32, i32)>
    %a1i = llvm.extractvalue %af[1] : !llvm.struct<(i32, i32, i32, i32)>
    %a2i = llvm.extractvalue %af[2] : !llvm.struct<(i32, i32, i32, i32)>
    %a3i = llvm.extractvalue %af[3] : !llvm.struct<(i32, i32, i32, i32)>
    %b0i = llvm.extractvalue %bf[0] : !llvm.struct<(i32, i32)>
    %b1i = llvm.extractvalue %bf[1] : !llvm.struct<(i32, i32)>
    %a0 = llvm.bitcast %a0i : i32 to vector<2xf16>
    %a1 = llvm.bitcast %a1i : i32 to vector<2xf16>
    %a2 = llvm.bitcast %a2i : i32 to vector<2xf16>
    %a3 = llvm.bitcast %a3i : i32 to vector<2xf16>
    %b0 = llvm.bitcast %b0i : i32 to vector<2xf16>
    %b1 = llvm.bitcast %b1i : i32 to vector<2xf16>
    %acc = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%zero, %zero, %zero, %zero]
      {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
       shape = #nvvm.shape<m = 16, n = 8, k = 16>}
      : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>

    // d_i at row lane/4 (+8 for i >= 2), column 2*(lane%4) + (i & 1).
    %group = llvm.lshr %lane, %c2 : i32
    %tig3 = llvm.urem %lane, %c4 : i32
    %col = llvm.mul %tig3, %c2 : i32
    %row0 = llvm.mul %group, %c8 : i32
    %idx0 = llvm.add %row0, %col : i32
    %idx1 = llvm.add %idx0, %c1 : i32
    %c64 = llvm.mlir.constant(64 : i32) : i32
    %idx2 = llvm.add %idx0, %c64 : i32
    %idx3 = llvm.add %idx2, %c1 : i32
    %d0 = llvm.extractvalue %acc[0] : !llvm.struct<(f32, f32, f32, f32)>
    %d1 = llvm.extractvalue %acc[1] : !llvm.struct<(f32, f32, f32, f32)>
    %d2 = llvm.extractvalue %acc[2] : !llvm.struct<(f32, f32, f32, f32)>
    %d3 = llvm.extractvalue %acc[3] : !llvm.struct<(f32, f32, f32, f32)>
    %p0 = llvm.getelementptr %d[%idx0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %p1 = llvm.getelementptr %d[%idx1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %p2 = llvm.getelementptr %d[%idx2] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %p3 = llvm.getelementptr %d[%idx3] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %d0, %p0 : f32, !llvm.ptr<1>
    llvm.store %d1, %p1 : f32, !llvm.ptr<1>
    llvm.store %d2, %p2 : f32, !llvm.ptr<1>
    llvm.store %d3, %p3 : f32, !llvm.ptr<1>
    llvm.return
  }
}
