// RUN: tegula-opt %s -split-input-file --allocate-shared-memory | FileCheck %s
// RUN: tegula-opt %s -split-input-file --allocate-shared-memory --lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM

// Every op that needs shared memory gets `tilegpu.shared_offset` (a multiple
// of 16); the module records the total as `tilegpu.shared_bytes`. Most
// users need their buffer only while they run, so their buffers may share
// bytes; a small exchange's buffer (up to 1 KiB) lives until the next
// exchange, so consecutive ones are apart (elide-scratch-barriers then drops
// the later one's leading barrier; not run here). The lowering makes one
// global of the total's size; each user begins with a barrier (earlier users
// of the bytes are done) and has one between its writes and reads: two per
// reduction here, none after.

// No shared memory: register-only code and a convert_layout between two
// layouts that place every element in the same thread (a register move).
// CHECK: module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 0 : i32}
// CHECK-LABEL: func.func @none(
// CHECK-NOT:     tilegpu.shared_offset
// CHECK:         return
// LLVM-NOT:    @tegula_scratch
// LLVM-LABEL:  llvm.func @none(
#row = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#col = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#s = #tilegpu.slice<{dim = 1, parent = #col}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @none(%x: tensor<128xf32, #row>) -> tensor<128xf32, #s> {
    %two = arith.constant dense<2.0> : tensor<128xf32, #row>
    %y = arith.mulf %x, %two : tensor<128xf32, #row>
    %z = tilegpu.convert_layout %y : tensor<128xf32, #row> -> tensor<128xf32, #s>
    return %z : tensor<128xf32, #s>
  }
}

// -----

// Two reductions in a row, warps along the reduced axis: partials go
// through shared memory, one per result row and warp (4 x 4), at least 32
// bits each: f32 64 bytes, f64 128 bytes. The first lives until the
// second: f64 (larger first) at 0, f32 after it.
// A reduction within warps (axis 0 of #w, lanes and registers only) needs
// none.
// CHECK: module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 192 : i32}
// CHECK-LABEL: func.func @two_reductions(
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 128 : i32} : (tensor<4x512xf32
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf64
// CHECK:         tile.reduce(%{{.*}}) {axis = 0 : i32} : (tensor<32x4xf32
// LLVM: llvm.mlir.global internal @tegula_scratch() {addr_space = 3 : i32, alignment = 1024 : i64{{.*}}} : !llvm.array<192 x i8>
// LLVM-LABEL: llvm.func @two_reductions(
// LLVM:         llvm.mlir.addressof @tegula_scratch : !llvm.ptr<3>
// LLVM-COUNT-4: nvvm.barrier0
// LLVM-NOT:     nvvm.barrier0
// LLVM:         llvm.return
#r = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
#w = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]}>
#ws = #tilegpu.slice<{dim = 0, parent = #w}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @two_reductions(%a: tensor<4x512xf32, #r>, %b: tensor<4x512xf64, #r>, %c: tensor<32x4xf32, #w>)
      -> (tensor<4xf32, #rs>, tensor<4xf64, #rs>, tensor<4xf32, #ws>) {
    %sa = tile.reduce(%a) {axis = 1 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      tile.reduce.return %s : f32
    }
    %sb = tile.reduce(%b) {axis = 1 : i32} : (tensor<4x512xf64, #r>) -> tensor<4xf64, #rs> {
    ^bb0(%x: f64, %y: f64):
      %m = arith.maximumf %x, %y : f64
      tile.reduce.return %m : f64
    }
    %sc = tile.reduce(%c) {axis = 0 : i32} : (tensor<32x4xf32, #w>) -> tensor<4xf32, #ws> {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      tile.reduce.return %s : f32
    }
    return %sa, %sb, %sc : tensor<4xf32, #rs>, tensor<4xf64, #rs>, tensor<4xf32, #ws>
  }
}

// -----

// A convert_layout that moves elements between threads, inside a loop, with
// a reduction before the loop and one after it. Each buffer (the
// conversions' 128 f32 = 512 bytes, the reductions' 4 x 4) lives until the
// next exchange on every path: the first reduction through the loop's first
// conversion, the first conversion to the second, and the second around the
// back edge to the first and past the exit to the last reduction. So the
// two conversions are apart, the first reduction apart from the first
// conversion, and the last reduction takes the first conversion's bytes,
// free by then.
// CHECK: module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 1040 : i32}
// CHECK-LABEL: func.func @loop(
// CHECK:         tile.reduce(%{{.*}}) {axis = 0 : i32, tilegpu.shared_offset = 1024 : i32}
// CHECK:         scf.for
// CHECK:           tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 512 : i32} : tensor<128xf32, #{{.*}}> -> tensor<128xf32, #{{.*}}>
// CHECK:           tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 0 : i32} : tensor<128xf32, #{{.*}}> -> tensor<128xf32, #{{.*}}>
// CHECK:           scf.yield
// CHECK:         tile.reduce(%{{.*}}) {axis = 0 : i32, tilegpu.shared_offset = 512 : i32}
// LLVM: llvm.mlir.global internal @tegula_scratch() {{.*}} : !llvm.array<1040 x i8>
// LLVM-LABEL: llvm.func @loop(
// LLVM:         llvm.mlir.addressof @tegula_scratch : !llvm.ptr<3>
// LLVM:         llvm.cond_br
// LLVM-COUNT-4: nvvm.barrier0
// LLVM:         llvm.br
#a = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#v = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @loop(%x: tensor<128xf32, #a>, %n: i32) -> (f32, f32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %before = tile.reduce(%x) {axis = 0 : i32} : (tensor<128xf32, #a>) -> f32 {
    ^bb0(%p: f32, %q: f32):
      %s = arith.addf %p, %q : f32
      tile.reduce.return %s : f32
    }
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<128xf32, #a>) : i32 {
      %cv = tilegpu.convert_layout %acc : tensor<128xf32, #a> -> tensor<128xf32, #v>
      %sq = arith.mulf %cv, %cv : tensor<128xf32, #v>
      %back = tilegpu.convert_layout %sq : tensor<128xf32, #v> -> tensor<128xf32, #a>
      scf.yield %back : tensor<128xf32, #a>
    }
    %after = tile.reduce(%r) {axis = 0 : i32} : (tensor<128xf32, #a>) -> f32 {
    ^bb0(%p: f32, %q: f32):
      %s = arith.addf %p, %q : f32
      tile.reduce.return %s : f32
    }
    return %before, %after : f32, f32
  }
}

// -----

// Larger exchanges (over 1 KiB) live until the next one only where that
// costs no bytes in all. Here the 4 KiB conversion sets the total; the two
// 2 KiB ones after it fit apart within it, so the first lives until the
// second (and the second's leading barrier can go); the 4 KiB one living
// until the first 2 KiB one would need 6 KiB, so it does not.
// CHECK: module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 4096 : i32}
// CHECK-LABEL: func.func @apart_where_free(
// CHECK:         tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 0 : i32} : tensor<1024xf32
// CHECK:         tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 0 : i32} : tensor<512xf32
// CHECK:         tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 2048 : i32} : tensor<512xf32
#a = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#v = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @apart_where_free(%x: tensor<1024xf32, #a>, %y: tensor<512xf32, #a>, %z: tensor<512xf32, #a>)
      -> (tensor<1024xf32, #v>, tensor<512xf32, #v>, tensor<512xf32, #v>) {
    %x2 = tilegpu.convert_layout %x : tensor<1024xf32, #a> -> tensor<1024xf32, #v>
    %y2 = tilegpu.convert_layout %y : tensor<512xf32, #a> -> tensor<512xf32, #v>
    %z2 = tilegpu.convert_layout %z : tensor<512xf32, #a> -> tensor<512xf32, #v>
    return %x2, %y2, %z2 : tensor<1024xf32, #v>, tensor<512xf32, #v>, tensor<512xf32, #v>
  }
}

// -----

// Sizes by element type and op: exchanges take the result tile (f16 2 bytes,
// i1 1 byte, pointers 8 bytes per element), the FMA dot both operands
// (bf16: (16x16 + 16x16) x 2), a scalar atomic whose old value is used one
// element (i64: 8); an atomic whose old value is unused needs nothing. The
// f16 conversion (256 bytes) lives until the i1 one, which lives until the
// pointers' (1 KiB): the i1 one's bytes lie past the pointers' at 0.
// CHECK: module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 2048 : i32}
// CHECK-LABEL: func.func @sizes(
// CHECK:         tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 0 : i32} : tensor<128xf16
// CHECK:         tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 1024 : i32} : tensor<128xi1
// CHECK:         tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 0 : i32} : tensor<128x!tile.ptr<f32>
// CHECK:         tile.trans %{{.*}} {order = array<i32: 1, 0>, tilegpu.shared_offset = 0 : i32} : tensor<16x16xf64
// CHECK:         tile.dot {{.*}} {tilegpu.shared_offset = 0 : i32} : tensor<16x16xbf16
// CHECK:         tile.atomic_rmw add, %{{.*}}, %{{.*}} {tilegpu.shared_offset = 0 : i32} : !tile.ptr<i64>
// CHECK:         tile.atomic_rmw add, %{{.*}}, %{{.*}} : !tile.ptr<i64>
// CHECK-NOT:     tilegpu.shared_offset
// CHECK:         return
// LLVM: llvm.mlir.global internal @tegula_scratch() {{.*}} : !llvm.array<2048 x i8>
// LLVM-LABEL: llvm.func @sizes(
#a = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#v = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#m = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#t = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @sizes(%h: tensor<128xf16, #a>, %k: tensor<128xi1, #a>, %p: tensor<128x!tile.ptr<f32>, #a>,
                   %d: tensor<16x16xf64, #m>, %x: tensor<16x16xbf16, #m>, %acc: tensor<16x16xf32, #m>,
                   %q: !tile.ptr<i64>, %one: i64)
      -> (tensor<128xf16, #v>, tensor<128xi1, #v>, tensor<128x!tile.ptr<f32>, #v>, tensor<16x16xf64, #t>,
          tensor<16x16xf32, #m>, i64) {
    %h2 = tilegpu.convert_layout %h : tensor<128xf16, #a> -> tensor<128xf16, #v>
    %k2 = tilegpu.convert_layout %k : tensor<128xi1, #a> -> tensor<128xi1, #v>
    %p2 = tilegpu.convert_layout %p : tensor<128x!tile.ptr<f32>, #a> -> tensor<128x!tile.ptr<f32>, #v>
    %dt = tile.trans %d {order = array<i32: 1, 0>} : tensor<16x16xf64, #m> -> tensor<16x16xf64, #t>
    %mm = tile.dot %x, %x, %acc, ieee : tensor<16x16xbf16, #m> * tensor<16x16xbf16, #m> -> tensor<16x16xf32, #m>
    %old = tile.atomic_rmw add, %q, %one : !tile.ptr<i64>
    %unused = tile.atomic_rmw add, %q, %one : !tile.ptr<i64>
    return %h2, %k2, %p2, %dt, %mm, %old : tensor<128xf16, #v>, tensor<128xi1, #v>, tensor<128x!tile.ptr<f32>, #v>,
                                           tensor<16x16xf64, #t>, tensor<16x16xf32, #m>, i64
  }
}

// -----

// A 128x128 f32 conversion needs 64 KiB: more than a kernel may declare
// statically (48 KiB). The scratch becomes dynamic shared memory - an
// external zero-length array - and the module records the bytes each launch
// provides.
// LLVM: module attributes {tilegpu.dynamic_shared_bytes = 65536 : i32, tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 65536 : i32}
// LLVM: llvm.mlir.global external @tegula_scratch() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// LLVM-LABEL: llvm.func @big_conversion(
#rows = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#cols = #tilegpu.blocked<{sizePerThread = [4, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @big_conversion(%a: tensor<128x128xf32, #rows>) -> tensor<128x128xf32, #cols> {
    %b = tilegpu.convert_layout %a : tensor<128x128xf32, #rows> -> tensor<128x128xf32, #cols>
    return %b : tensor<128x128xf32, #cols>
  }
}

// -----

// A dot chain's hand-over: with warps along M only, the accumulator layout
// (cast to bf16) is the next dot's A operand layout - a register renaming,
// no shared memory. With warps along N too, the A operand spans columns
// other warps hold: an exchange through shared memory.
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1]}>
#dotA = #tilegpu.dot_operand<{opIdx = 0, parent = #mma, elementBits = 16}>
#mma2 = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
#dotA2 = #tilegpu.dot_operand<{opIdx = 0, parent = #mma2, elementBits = 16}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @chain_hand_over_is_free
// CHECK-NOT:     tilegpu.shared_offset
func.func @chain_hand_over_is_free(%p: tensor<64x32xbf16, #mma>) -> tensor<64x32xbf16, #dotA> {
  %a = tilegpu.convert_layout %p : tensor<64x32xbf16, #mma> -> tensor<64x32xbf16, #dotA>
  return %a : tensor<64x32xbf16, #dotA>
}
// CHECK-LABEL: func.func @warps_along_n_exchange
// CHECK:         tilegpu.convert_layout {{.*}}tilegpu.shared_offset = 0
func.func @warps_along_n_exchange(%p: tensor<64x32xbf16, #mma2>) -> tensor<64x32xbf16, #dotA2> {
  %a = tilegpu.convert_layout %p : tensor<64x32xbf16, #mma2> -> tensor<64x32xbf16, #dotA2>
  return %a : tensor<64x32xbf16, #dotA2>
}
}

// -----

// The epilogue exchange moves vectors through a swizzled tile: the bf16
// accumulator's pairs as 4-byte stores, rows of 8 bf16 read back as 16 bytes.
#mma = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
#rows = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// LLVM-LABEL: llvm.func @epilogue_vectors
// LLVM:         nvvm.barrier0
// LLVM-COUNT-16: st.shared.v2.b16
// LLVM:         nvvm.barrier0
// LLVM-COUNT-2: llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// LLVM-NOT:     nvvm.barrier0
// LLVM:         llvm.return
func.func @epilogue_vectors(%p: tensor<64x64xbf16, #mma>) -> tensor<64x64xbf16, #rows> {
  %a = tilegpu.convert_layout %p : tensor<64x64xbf16, #mma> -> tensor<64x64xbf16, #rows>
  return %a : tensor<64x64xbf16, #rows>
}
}

// -----

// Warpgroups taking turns (8 consumer warps, one program): the order's two
// mbarriers are used until the consumers' end by ops that do not name them,
// so their 16 bytes stay reserved - the later reduction's partials go
// elsewhere, not on top of live mbarriers.
// CHECK:       module attributes {tilegpu.num_warps = 8 : i32, tilegpu.producer_warps = 4 : i32, tilegpu.shared_bytes = 144 : i32}
// CHECK-LABEL: func.func @turns_keep_their_mbarriers(
// CHECK:         tilegpu.order_init {tilegpu.shared_offset = 128 : i32}
// CHECK:         tile.reduce(%{{.*}}) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32}
// CHECK:         tilegpu.order_retire
#t = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 8], order = [1, 0]}>
#ts = #tilegpu.slice<{dim = 1, parent = #t}>
module attributes {tilegpu.num_warps = 8 : i32, tilegpu.producer_warps = 4 : i32} {
  func.func @turns_keep_their_mbarriers(%a: tensor<4x1024xf32, #t>) -> tensor<4xf32, #ts> {
    tilegpu.order_init
    tilegpu.order_wait
    tilegpu.order_arrive
    %s = tile.reduce(%a) {axis = 1 : i32} : (tensor<4x1024xf32, #t>) -> tensor<4xf32, #ts> {
    ^bb0(%x: f32, %y: f32):
      %r = arith.addf %x, %y : f32
      tile.reduce.return %r : f32
    }
    tilegpu.order_retire
    return %s : tensor<4xf32, #ts>
  }
}
