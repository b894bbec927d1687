// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | tegulac - --chip=sm_80 | FileCheck %s
// RUN: tegula-opt %s --convert-tile-to-tilegpu=num-warps=4 --coalesce | FileCheck %s --check-prefix=WIDTH

// Contiguous f32 accesses become 128-bit: the pointer argument is 16-byte
// aligned and n divisible by 16 (as kernel specialisation records), the
// offsets are runs of 4 starting at multiples of 4, and `offs < n` is then
// constant over each run.

// WIDTH: tile.load {{.*}}{tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32}
// WIDTH: tile.store {{.*}}{tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32}
// CHECK: .visible .entry scale(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
func.func @scale(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                 %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %c1024 = arith.constant 1024 : i32
  %pid = tile.program_id x
  %base = arith.muli %pid, %c1024 : i32
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %bs = tile.splat %base : tensor<1024xi32>
  %offs = arith.addi %bs, %r : tensor<1024xi32>
  %ns = tile.splat %n : tensor<1024xi32>
  %m = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p, %m : tensor<1024x!tile.ptr<f32>>
  %two = arith.constant dense<2.0> : tensor<1024xf32>
  %s = arith.mulf %v, %two : tensor<1024xf32>
  tile.store %p, %s, %m : tensor<1024x!tile.ptr<f32>>
  return
}

