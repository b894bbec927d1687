// RUN: not tegula-opt %s -split-input-file --lower-tilegpu-to-llvm 2>&1 | FileCheck %s --check-prefix=ERR

// An inline asm whose argument is in another layout than its result (only
// hand-written IR: convert-tile-to-tilegpu gives them one): named, with why.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#c = #tilegpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @asm_layouts(%x: tensor<256xi32, #b>) -> tensor<256xi32, #c> {
    // ERR: error: 'tile.elementwise_inline_asm' op expects every argument in its results' layout
    %y = tile.elementwise_inline_asm "mov.b32 $0, $1;", "=r,r" pure = true pack = 1 (%x : tensor<256xi32, #b>) -> tensor<256xi32, #c>
    return %y : tensor<256xi32, #c>
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
