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
