// RUN: tegula-opt %s -split-input-file --elide-scratch-barriers | FileCheck %s
// RUN: tegula-opt %s -split-input-file --elide-scratch-barriers --lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM

// A reduction, a scan across warps and a convert_layout through shared
// memory lower to: barrier, writes, barrier, reads. The first barrier is
// left out (`tilegpu.skip_leading_barrier`) where no access since the last
// barrier on any path may touch the op's bytes. Offsets are given here, as
// allocate-shared-memory would place them (its own test shows how).

// LayerNorm's backward: two row sums an iteration. allocate-shared-memory
// keeps each buffer live until the other, so they are apart; each one's leading barrier
// then has only the other's reads behind it (the previous iteration's
// second sum, or this one's first), or nothing at the kernel's start: two
// barriers an iteration instead of four.
// CHECK-LABEL: func.func @two_sums_a_row(
// CHECK:         scf.for
// CHECK:           tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 16 : i32, tilegpu.skip_leading_barrier}
// CHECK:           tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32, tilegpu.skip_leading_barrier}
// LLVM-LABEL: llvm.func @two_sums_a_row(
// LLVM:         llvm.cond_br
// LLVM-COUNT-2: nvvm.barrier0
// LLVM-NOT:     nvvm.barrier0
// LLVM:         llvm.br
#r = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 32 : i32} {
  func.func @two_sums_a_row(%x: tensor<1x1024xf32, #r>, %n: i32) -> tensor<1x1024xf32, #r> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %out = scf.for %i = %c0 to %n step %c1 iter_args(%g = %x) -> (tensor<1x1024xf32, #r>) : i32 {
      %s = tile.reduce(%g) {axis = 1 : i32, tilegpu.shared_offset = 16 : i32} : (tensor<1x1024xf32, #r>) -> tensor<1xf32, #rs> {
      ^bb0(%a: f32, %b: f32):
        %t = arith.addf %a, %b : f32
        tile.reduce.return %t : f32
      }
      %sq = arith.mulf %g, %g : tensor<1x1024xf32, #r>
      %q = tile.reduce(%sq) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<1x1024xf32, #r>) -> tensor<1xf32, #rs> {
      ^bb0(%a: f32, %b: f32):
        %t = arith.addf %a, %b : f32
        tile.reduce.return %t : f32
      }
      %se = tile.expand_dims %s {axis = 1 : i32} : tensor<1xf32, #rs> -> tensor<1x1xf32, #r>
      %qe = tile.expand_dims %q {axis = 1 : i32} : tensor<1xf32, #rs> -> tensor<1x1xf32, #r>
      %sb = tile.broadcast %se : tensor<1x1xf32, #r> -> tensor<1x1024xf32, #r>
      %qb = tile.broadcast %qe : tensor<1x1xf32, #r> -> tensor<1x1024xf32, #r>
      %d = arith.subf %g, %sb : tensor<1x1024xf32, #r>
      %next = arith.mulf %d, %qb : tensor<1x1024xf32, #r>
      scf.yield %next : tensor<1x1024xf32, #r>
    }
    return %out : tensor<1x1024xf32, #r>
  }
}

// -----

// One sum a row: the previous iteration may still be reading the bytes this
// one writes, so the barrier stays (the first iteration's is the price).
// CHECK-LABEL: func.func @one_sum_a_row(
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} :
// LLVM-LABEL: llvm.func @one_sum_a_row(
// LLVM:         llvm.cond_br
// LLVM-COUNT-2: nvvm.barrier0
// LLVM-NOT:     nvvm.barrier0
// LLVM:         llvm.br
#r = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 16 : i32} {
  func.func @one_sum_a_row(%x: tensor<1x1024xf32, #r>, %n: i32) -> tensor<1x1024xf32, #r> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %out = scf.for %i = %c0 to %n step %c1 iter_args(%g = %x) -> (tensor<1x1024xf32, #r>) : i32 {
      %s = tile.reduce(%g) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<1x1024xf32, #r>) -> tensor<1xf32, #rs> {
      ^bb0(%a: f32, %b: f32):
        %t = arith.addf %a, %b : f32
        tile.reduce.return %t : f32
      }
      %se = tile.expand_dims %s {axis = 1 : i32} : tensor<1xf32, #rs> -> tensor<1x1xf32, #r>
      %sb = tile.broadcast %se : tensor<1x1xf32, #r> -> tensor<1x1024xf32, #r>
      %next = arith.subf %g, %sb : tensor<1x1024xf32, #r>
      scf.yield %next : tensor<1x1024xf32, #r>
    }
    return %out : tensor<1x1024xf32, #r>
  }
}

// -----

// The first reduction has nothing before it (the kernel's start). The
// second writes the bytes the first one's reads may still be on, and keeps
// its barrier; the third's
// lie apart from the second's. Between the third and the fourth, a scalar
// atomic shares its old value through shared memory, which this analysis
// does not model: the fourth keeps its barrier. The fifth follows a
// branch whose one side holds an exchange: on the other side the fourth's
// reads (at 0) are pending, so it keeps it too; the sixth, after a plain
// barrier, does not need one.
// CHECK-LABEL: func.func @given_offsets(
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32, tilegpu.skip_leading_barrier}
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} :
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 64 : i32, tilegpu.skip_leading_barrier}
// CHECK:         tile.atomic_rmw
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} :
// CHECK:         scf.if
// CHECK:           tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 128 : i32, tilegpu.skip_leading_barrier}
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} :
// CHECK:         tilegpu.barrier
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32, tilegpu.skip_leading_barrier}
#r = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
#a = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#v = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 1024 : i32} {
  func.func @given_offsets(%x: tensor<4x512xf32, #r>, %p: !tile.ptr<i32>, %one: i32, %c: i1,
                           %y: tensor<128xf32, #a>) -> (tensor<4xf32, #rs>, i32) {
    %s1 = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tile.reduce.return %t : f32
    }
    %s2 = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.maximumf %a, %b : f32
      tile.reduce.return %t : f32
    }
    %s3 = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 64 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.minimumf %a, %b : f32
      tile.reduce.return %t : f32
    }
    %old = tile.atomic_rmw add, %p, %one {tilegpu.shared_offset = 512 : i32} : !tile.ptr<i32>
    %s4 = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tile.reduce.return %t : f32
    }
    scf.if %c {
      %cv = tilegpu.convert_layout %y {tilegpu.shared_offset = 128 : i32} : tensor<128xf32, #a> -> tensor<128xf32, #v>
      tile.store %p, %one : !tile.ptr<i32>
    }
    %s5 = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tile.reduce.return %t : f32
    }
    tilegpu.barrier
    %s6 = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tile.reduce.return %t : f32
    }
    %m1 = arith.addf %s1, %s2 : tensor<4xf32, #rs>
    %m2 = arith.addf %m1, %s3 : tensor<4xf32, #rs>
    %m3 = arith.addf %m2, %s4 : tensor<4xf32, #rs>
    %m4 = arith.addf %m3, %s5 : tensor<4xf32, #rs>
    %m5 = arith.addf %m4, %s6 : tensor<4xf32, #rs>
    return %m5, %old : tensor<4xf32, #rs>, i32
  }
}

// -----

// In a warp-specialised kernel's consumer branch the barriers are the
// consumers' own (bar.sync 1): the second reduction's bytes are apart from
// the first's, and only consumers touch them. What comes before the branch
// is not modelled, so the first keeps its barrier.
// CHECK-LABEL: func.func @consumer_branch(
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} :
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 64 : i32, tilegpu.skip_leading_barrier}
#r = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.producer_warps = 4 : i32, tilegpu.shared_bytes = 128 : i32} {
  func.func @consumer_branch(%x: tensor<4x512xf32, #r>, %p: !tile.ptr<f32>) {
    %producer = tilegpu.is_producer_warp
    scf.if %producer {
    } else {
      %s = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
      ^bb0(%a: f32, %b: f32):
        %t = arith.addf %a, %b : f32
        tile.reduce.return %t : f32
      }
      %q = tile.reduce(%x) {axis = 1 : i32, tilegpu.shared_offset = 64 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
      ^bb0(%a: f32, %b: f32):
        %t = arith.maximumf %a, %b : f32
        tile.reduce.return %t : f32
      }
    } {tilegpu.warp_specialized}
    return
  }
}
