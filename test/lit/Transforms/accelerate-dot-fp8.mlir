// RUN: tegula-opt %s -convert-tile-to-tilegpu -accelerate-dot=chip=sm_90a | FileCheck %s --check-prefix=HOPPER
// RUN: tegula-opt %s -convert-tile-to-tilegpu -accelerate-dot=chip=sm_80 | FileCheck %s --check-prefix=AMPERE
// RUN: tegula-opt %s -convert-tile-to-tilegpu -accelerate-dot=chip=sm_80 -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM

// An fp8 dot (one format on both sides) runs on wgmma as it is on sm_90a:
// whole warpgroups along M, both operands staged K-major by the lowering.
// HOPPER: #mma = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>
// HOPPER-LABEL: func.func @fp8_dot
// HOPPER: tile.dot {{.*}} : tensor<64x64xf8E4M3FN, #{{.*}}> * tensor<64x64xf8E4M3FN, #{{.*}}> -> tensor<64x64xf32, #mma>

// Elsewhere its operands widen to f16 (exactly) and it is an f16 dot on
// mma.sync; the widening is integer code per register.
// AMPERE-LABEL: func.func @fp8_dot
// AMPERE: arith.extf %{{.*}} : tensor<64x64xf8E4M3FN, #{{.*}}> to tensor<64x64xf16, #{{.*}}>
// AMPERE: arith.extf %{{.*}} : tensor<64x64xf8E4M3FN, #{{.*}}> to tensor<64x64xf16, #{{.*}}>
// AMPERE: tile.dot {{.*}} : tensor<64x64xf16, {{.*}}> * tensor<64x64xf16, {{.*}}> -> tensor<64x64xf32, #mma>
// LLVM-LABEL: llvm.func @fp8_dot
// LLVM-NOT: f8E4M3FN
// LLVM: llvm.uitofp
// LLVM: nvvm.mma.sync
module {
  func.func @fp8_dot(%a: !tile.ptr<f8E4M3FN>, %b: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %c64 = arith.constant dense<64> : tensor<64x1xi32>
    %rowOff = arith.muli %rows, %c64 : tensor<64x1xi32>
    %rb = tile.broadcast %rowOff : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    %pa = tile.splat %a : tensor<64x64x!tile.ptr<f8E4M3FN>>
    %pb = tile.splat %b : tensor<64x64x!tile.ptr<f8E4M3FN>>
    %pc = tile.splat %c : tensor<64x64x!tile.ptr<f32>>
    %qa = tile.addptr %pa, %off : tensor<64x64x!tile.ptr<f8E4M3FN>>, tensor<64x64xi32>
    %qb = tile.addptr %pb, %off : tensor<64x64x!tile.ptr<f8E4M3FN>>, tensor<64x64xi32>
    %qc = tile.addptr %pc, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %ta = tile.load %qa : tensor<64x64x!tile.ptr<f8E4M3FN>>
    %tb = tile.load %qb : tensor<64x64x!tile.ptr<f8E4M3FN>>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %d = tile.dot %ta, %tb, %zero, ieee : tensor<64x64xf8E4M3FN> * tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
    tile.store %qc, %d : tensor<64x64x!tile.ptr<f32>>
    return
  }
}
