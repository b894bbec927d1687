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
