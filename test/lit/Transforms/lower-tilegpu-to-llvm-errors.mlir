// RUN: not tegula-opt %s -split-input-file --lower-tilegpu-to-llvm 2>&1 | FileCheck %s --check-prefix=ERR

// Not lowered yet (f64 atomic max: PTX has no NaN-propagating f64 max): the failure names the op.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @atomic(%p: tensor<128x!tile.ptr<f64>, #b>, %v: tensor<128xf64, #b>) {
    // ERR: error: failed to legalize operation 'tile.atomic_rmw'
    %o = tile.atomic_rmw max, %p, %v : tensor<128x!tile.ptr<f64>, #b>
    return
  }
}

// -----

// The pass needs layouts first.
// ERR: error: run convert-tile-to-tilegpu first (no tilegpu.num_warps)
module {
  func.func @plain() { return }
}

// -----

// Shared-memory users need the offsets of allocate-shared-memory.
#r = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @unallocated(%a: tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    // ERR: error: needs 64 bytes of shared memory but has no tilegpu.shared_offset: run allocate-shared-memory first
    %s = tile.reduce(%a) {axis = 1 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%x: f32, %y: f32):
      %sum = arith.addf %x, %y : f32
      tile.reduce.return %sum : f32
    }
    return %s : tensor<4xf32, #rs>
  }
}

// -----

// An offset past the module's total (stale attributes) is caught too.
#r = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 64 : i32} {
  func.func @outside(%a: tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    // ERR: error: shared-memory buffer [64, 128) is not a 16-byte aligned part of the module's 64 bytes (tilegpu.shared_bytes): run allocate-shared-memory again
    %s = tile.reduce(%a) {axis = 1 : i32, tilegpu.shared_offset = 64 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%x: f32, %y: f32):
      %sum = arith.addf %x, %y : f32
      tile.reduce.return %sum : f32
    }
    return %s : tensor<4xf32, #rs>
  }
}
