// RUN: not tegula-opt %s -split-input-file --lower-tilegpu-to-llvm 2>&1 | FileCheck %s --check-prefix=ERR

// Not lowered yet: the failure names the op.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @reduce(%t: tensor<128xf32, #b>) -> f32 {
    // ERR: error: failed to legalize operation 'tile.reduce'
    %s = tile.reduce(%t) {axis = 0 : i32} : (tensor<128xf32, #b>) -> f32 {
    ^bb0(%a: f32, %c: f32):
      %x = arith.addf %a, %c : f32
      tile.reduce.return %x : f32
    }
    return %s : f32
  }
}

// -----

// The pass needs layouts first.
// ERR: error: run convert-tile-to-tilegpu first (no tilegpu.num_warps)
module {
  func.func @plain() { return }
}
