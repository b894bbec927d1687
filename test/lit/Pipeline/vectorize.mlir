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


// bf16: the layout holds 8 contiguous elements a thread (16 bytes), and
// the masked accesses move them as four 32-bit words (PTX vectors have at
// most four elements; there is no ld.v8.b16).
// WIDTH-LABEL: func.func @scale_bf16
// WIDTH: tile.load {{.*}}{tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 8 : i32}
// WIDTH: tile.store {{.*}}{tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 8 : i32}
// CHECK: .visible .entry scale_bf16(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK-NOT: .v8.b16
func.func @scale_bf16(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                      %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %c1024 = arith.constant 1024 : i32
  %pid = tile.program_id x
  %base = arith.muli %pid, %c1024 : i32
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %bs = tile.splat %base : tensor<1024xi32>
  %offs = arith.addi %bs, %r : tensor<1024xi32>
  %ns = tile.splat %n : tensor<1024xi32>
  %m = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  %xs = tile.splat %x : tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %offs : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p, %m : tensor<1024x!tile.ptr<bf16>>
  %s = arith.addf %v, %v : tensor<1024xbf16>
  tile.store %p, %s, %m : tensor<1024x!tile.ptr<bf16>>
  return
}
