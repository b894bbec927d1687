// RUN: tegula-opt %s -split-input-file -verify-diagnostics

// threadsPerWarp must describe exactly one warp.
// expected-error @+1 {{threadsPerWarp must multiply to 32 (a warp), got 16}}
#bad = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [16], warpsPerCTA = [4], order = [0]}>
func.func @f(%x: tensor<64xf32, #bad>) { return }

// -----

// Sizes are powers of two.
// expected-error @+1 {{layout sizes must be positive powers of two, got 3}}
#bad = #tilegpu.blocked<{sizePerThread = [3], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>
func.func @f(%x: tensor<64xf32, #bad>) { return }

// -----

// Every parameter has one entry per dimension.
// expected-error @+1 {{sizePerThread, threadsPerWarp, warpsPerCTA and order need one entry per dimension}}
#bad = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>
func.func @f(%x: tensor<64xf32, #bad>) { return }

// -----

// order is a permutation.
// expected-error @+1 {{order must be a permutation of 0..1}}
#bad = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [0, 0]}>
func.func @f(%x: tensor<64x64xf32, #bad>) { return }

// -----

// A slice names a dimension of its parent.
#b = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
// expected-error @+1 {{slice dim 2 is out of range for a rank-2 parent}}
#bad = #tilegpu.slice<{dim = 2, parent = #b}>
func.func @f(%x: tensor<64xf32, #bad>) { return }

// -----

// convert_layout works on layouts, not plain tensors.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>
func.func @f(%x: tensor<64xf32>) {
  // expected-error @+1 {{operand and result need tilegpu layouts, got 'tensor<64xf32>'}}
  %0 = tilegpu.convert_layout %x : tensor<64xf32> -> tensor<64xf32, #b>
  return
}

// -----

// It moves data, never reshapes it.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>
func.func @f(%x: tensor<64xf32, #b>) {
  // expected-error @+1 {{'tilegpu.convert_layout' op requires the same shape for all operands and results}}
  %0 = tilegpu.convert_layout %x : tensor<64xf32, #b> -> tensor<32xf32, #b>
  return
}

// -----

// mma layouts are 2-D.
// expected-error @+1 {{mma layouts are 2-D: warpsPerCTA needs 2 entries, got 1}}
#bad = #tilegpu.mma<{warpsPerCTA = [4]}>
func.func @f(%x: tensor<64xf32, #bad>) { return }

// -----

// dot operands are A or B.
#mma = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
// expected-error @+1 {{opIdx is 0 (A) or 1 (B), got 2}}
#bad = #tilegpu.dot_operand<{opIdx = 2, parent = #mma, elementBits = 16}>
func.func @f(%x: tensor<64x64xf16, #bad>) { return }

// -----

// mma.sync has no 4-bit operands here.
#mma = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
// expected-error @+1 {{mma.sync operands have 8, 16 or 32 bits, got 4}}
#bad = #tilegpu.dot_operand<{opIdx = 0, parent = #mma, elementBits = 4}>
func.func @f(%x: tensor<64x64xf16, #bad>) { return }

// -----

// A dot operand belongs to an mma accumulator.
#blocked = #tilegpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// expected-error @+1 {{dot_operand parent must be an mma layout}}
#bad = #tilegpu.dot_operand<{opIdx = 0, parent = #blocked, elementBits = 16}>
func.func @f(%x: tensor<64x64xf16, #bad>) { return }

// -----

// dot_shared on f32 rings: tf32 precision (tf32x3 on mma.sync too) only
// (ieee f32 never runs on tensor cores).
#mma = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
func.func @f(%a: !tilegpu.shared<3 x[64, 16] x f32, contiguousDim = 1>, %b: !tilegpu.shared<3 x[16, 64] x f32, contiguousDim = 1>,
             %s: i32, %acc: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  // expected-error @+1 {{takes f16/bf16 operands with an f32 accumulator or i8 ones with an i32 accumulator, f32 ones at tf32 precision (on mma.sync also tf32x3); on wgmma fp8 ones; got 'f32' operands, a 'f32' accumulator}}
  %d = tilegpu.dot_shared %a[%s], %b[%s], %acc : !tilegpu.shared<3 x[64, 16] x f32, contiguousDim = 1>, !tilegpu.shared<3 x[16, 64] x f32, contiguousDim = 1>, tensor<64x64xf32, #mma> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}

// -----

// ... and on wgmma tf32 only (the lowering rounds the stages in place;
// tf32x3's split products are mma.sync's).
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>
func.func @f(%a: !tilegpu.shared<3 x[64, 16] x f32, contiguousDim = 1>, %b: !tilegpu.shared<3 x[16, 64] x f32, contiguousDim = 1>,
             %s: i32, %acc: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  // expected-error @+1 {{got 'f32' operands, a 'f32' accumulator}}
  %d = tilegpu.dot_shared %a[%s], %b[%s], %acc {precision = 2 : i32} : !tilegpu.shared<3 x[64, 16] x f32, contiguousDim = 1>, !tilegpu.shared<3 x[16, 64] x f32, contiguousDim = 1>, tensor<64x64xf32, #mma> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}

// -----

// i8 rings accumulate in i32.
#mma = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
func.func @f(%a: !tilegpu.shared<3 x[64, 32] x i8, contiguousDim = 1>, %b: !tilegpu.shared<3 x[32, 64] x i8, contiguousDim = 0>,
             %s: i32, %acc: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  // expected-error @+1 {{got 'i8' operands, a 'f32' accumulator}}
  %d = tilegpu.dot_shared %a[%s], %b[%s], %acc : !tilegpu.shared<3 x[64, 32] x i8, contiguousDim = 1>, !tilegpu.shared<3 x[32, 64] x i8, contiguousDim = 0>, tensor<64x64xf32, #mma> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}

// -----

// store_shared writes a tile of the ring's shape and element type.
#blocked = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @f(%q: tensor<64x64xbf16, #blocked>, %r: !tilegpu.shared<1 x[64, 32] x bf16, contiguousDim = 1>, %s: i32) {
  // expected-error @+1 {{needs a laid-out tile of the ring's tile shape}}
  tilegpu.store_shared %q, %r[%s] : tensor<64x64xbf16, #blocked>, !tilegpu.shared<1 x[64, 32] x bf16, contiguousDim = 1>
  return
}

// -----

#blocked = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @f(%q: tensor<64x64xf16, #blocked>, %r: !tilegpu.shared<1 x[64, 64] x bf16, contiguousDim = 1>, %s: i32) {
  // expected-error @+1 {{stores 'f16' elements into a ring of 'bf16'}}
  tilegpu.store_shared %q, %r[%s] : tensor<64x64xf16, #blocked>, !tilegpu.shared<1 x[64, 64] x bf16, contiguousDim = 1>
  return
}

// -----

// A copy that signals another ring's mbarrier announces no bytes there: that
// mbarrier expects one arrival a phase, its own ring's copy's.
func.func @f(%a: !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>, %b: !tilegpu.shared<3 x[32, 64] x bf16, contiguousDim = 1>,
             %map: !llvm.ptr, %s: i32) {
  // expected-error @+1 {{signals another ring's mbarrier, so it announces no bytes there (expectBytes = 0)}}
  tilegpu.tma_load %b[%s], %map[%s, %s] signals %a : !tilegpu.shared<3 x[32, 64] x bf16, contiguousDim = 1>, !llvm.ptr, !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>
  return
}

// -----

func.func @f(%a: !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>, %map: !llvm.ptr, %s: i32) {
  // expected-error @+1 {{expects -8 bytes: a count of bytes is never negative}}
  tilegpu.tma_load %a[%s], %map[%s, %s] {expectBytes = -8 : i64} : !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>, !llvm.ptr
  return
}

// -----

// A copy on its own ring's mbarrier announces at least its own bytes: that
// mbarrier's phase would otherwise complete (or never arrive) before they land.
func.func @f(%a: !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>, %map: !llvm.ptr, %s: i32) {
  // expected-error @+1 {{announces 0 bytes on its own mbarrier, fewer than the 4096 its copies bring}}
  tilegpu.tma_load %a[%s], %map[%s, %s] {expectBytes = 0 : i64} : !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>, !llvm.ptr
  return
}

// -----

func.func @f(%a: !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>, %b: !tilegpu.shared<2 x[32, 64] x bf16, contiguousDim = 1>,
             %map: !llvm.ptr, %s: i32) {
  // expected-error @+1 {{signals the mbarriers of a ring with 3 stages from a ring with 2 stages}}
  tilegpu.tma_load %b[%s], %map[%s, %s] signals %a {expectBytes = 0 : i64} : !tilegpu.shared<2 x[32, 64] x bf16, contiguousDim = 1>, !llvm.ptr, !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>
  return
}

// -----

// Only rings of f32 tiles are rounded to tf32 by their tensor maps.
func.func @f() {
  // expected-error @+1 {{tf32: only rings of f32 tiles are rounded to tf32, not 'bf16'}}
  %r = tilegpu.alloc_shared {tf32} : <3 x[64, 32] x bf16, contiguousDim = 1>
  return
}
