// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=2 --instrument-for-simulator | FileCheck %s

// A row sum lowered for 2 warps (shuffles, shared memory, barriers, predicated
// loads and stores), then rewritten for the host: nothing GPU-only is left,
// every shared and global access is checked, and each site records the
// user's source line.

// CHECK: module attributes {
// CHECK-SAME: tegula.sim.asm = {{\[}}[
// CHECK-SAME: ld.global
// CHECK-SAME: tegula.sim.shared_bytes = {{[1-9][0-9]*}} : i64
// CHECK-SAME: tegula.sim.sites = {{\[}}[
// CHECK-SAME: "row_sum.cpp:12"
// CHECK-LABEL: llvm.func @row_sum(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i32)
// CHECK-NOT: nvvm.
// CHECK-NOT: llvm.inline_asm
// CHECK-NOT: llvm.mlir.addressof @tegula_scratch
// CHECK-NOT: !llvm.ptr<
// CHECK-DAG: llvm.call @__tegula_sim_sreg(
// CHECK-DAG: llvm.call @__tegula_sim_shfl(
// CHECK-DAG: llvm.call @__tegula_sim_barrier(
// CHECK-DAG: llvm.call @__tegula_sim_shared(
// CHECK-DAG: llvm.call @__tegula_sim_asm(
// CHECK: llvm.call @__tegula_sim_access(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i32, i32) -> ()
// CHECK-NEXT: llvm.load
// CHECK: llvm.return
// CHECK-NOT: tegula_scratch
// CHECK: llvm.func @__tegula_sim_sreg(i32) -> i32
func.func @row_sum(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32> loc("row_sum.cpp":10:3)
  %ns = tile.splat %n : tensor<256xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<256xi32>
  %xs = tile.splat %x : tensor<256x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<256x!tile.ptr<f32>>, tensor<256xi32>
  %v = tile.load %px, %m : tensor<256x!tile.ptr<f32>> loc("row_sum.cpp":11:5)
  %s = tile.reduce(%v) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    tile.reduce.return %t : f32
  } loc("row_sum.cpp":12:7)
  tile.store %out, %s : !tile.ptr<f32> loc("row_sum.cpp":13:3)
  return
}
