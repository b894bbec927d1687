// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | FileCheck %s
// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | tegulac - --chip=sm_90a | FileCheck %s --check-prefix=PTX

// The whole GPU pipeline on a traced-style vector add: layouts, per-thread
// code, clean-up; index math folds to tid.x | constants.

// CHECK-LABEL: llvm.func @vector_add(
// CHECK-SAME:    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}
// CHECK-NOT:     tile.
// CHECK-NOT:     arith.
// CHECK:         llvm.return
// PTX: .visible .entry vector_add(
// PTX: .maxntid 128, 1, 1
// PTX: mov.u32 {{.*}}%tid.x
// PTX: @%p{{[0-9]+}} ld.global.b32
// PTX: add.rn.f32
// PTX: @%p{{[0-9]+}} st.global.b32
func.func @vector_add(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %out: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %c1024 = arith.constant 1024 : i32
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %pid = tile.program_id x
  %base = arith.muli %pid, %c1024 : i32
  %bs = tile.splat %base : tensor<1024xi32>
  %offs = arith.addi %bs, %r : tensor<1024xi32>
  %ns = tile.splat %n : tensor<1024xi32>
  %m = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %px = tile.addptr %xs, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %vx = tile.load %px, %m : tensor<1024x!tile.ptr<f32>>
  %ys = tile.splat %y : tensor<1024x!tile.ptr<f32>>
  %py = tile.addptr %ys, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %vy = tile.load %py, %m : tensor<1024x!tile.ptr<f32>>
  %s = arith.addf %vx, %vy : tensor<1024xf32>
  %os = tile.splat %out : tensor<1024x!tile.ptr<f32>>
  %po = tile.addptr %os, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %po, %s, %m : tensor<1024x!tile.ptr<f32>>
  return
}
