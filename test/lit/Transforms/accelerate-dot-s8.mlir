// RUN: tegula-opt %s -convert-tile-to-tilegpu -accelerate-dot=chip=sm_90a | FileCheck %s --check-prefix=HOPPER
// RUN: tegula-opt %s -convert-tile-to-tilegpu -accelerate-dot=chip=sm_80 | FileCheck %s --check-prefix=AMPERE
// RUN: tegula-opt %s -convert-tile-to-tilegpu -accelerate-dot=chip=sm_90a -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM

// i8 x i8 -> i32 runs on wgmma (.s32.s8.s8) on sm_90a when both operands
// arrive K-major - A row-major, B loaded [N, K] and transposed - so their
// loads can fill wgmma's tiles as they are; integer accumulators in "=r"
// registers, no imm-scale operands.
// HOPPER-DAG: #[[WG:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>
// HOPPER-DAG: #[[SYNC:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
// HOPPER-LABEL: func.func @s8_k_major
// HOPPER: tile.dot {{.*}} : tensor<64x64xi8, #{{.*}}> * tensor<64x64xi8, #{{.*}}> -> tensor<64x64xi32, #[[WG]]>
// Not with B row-major: mma.sync pipelines that order, wgmma would not.
// HOPPER-LABEL: func.func @s8_b_row_major
// HOPPER: tile.dot {{.*}} -> tensor<64x64xi32, #[[SYNC]]>

// Before Hopper both are mma.sync m16n8k32.
// AMPERE-NOT: version = 3
// AMPERE-LABEL: func.func @s8_k_major
// AMPERE: tile.dot {{.*}} -> tensor<64x64xi32, #mma>

// LLVM-LABEL: llvm.func @s8_k_major
// LLVM: wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {$0, {{.*}}}, ${{[0-9]+}}, ${{[0-9]+}}, %scale_d;
// LLVM-SAME: "=r,=r,
// LLVM: wgmma.wait_group.sync.aligned 0;", "=r,
// LLVM-LABEL: llvm.func @s8_b_row_major
// LLVM-NOT: wgmma
// LLVM: nvvm.mma.sync
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @s8_k_major(%a: !tile.ptr<i8>, %b: !tile.ptr<i8>, %c: !tile.ptr<i32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %c64 = arith.constant dense<64> : tensor<64x1xi32>
    %rowOff = arith.muli %rows, %c64 : tensor<64x1xi32>
    %rb = tile.broadcast %rowOff : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    %pa = tile.splat %a : tensor<64x64x!tile.ptr<i8>>
    %pb = tile.splat %b : tensor<64x64x!tile.ptr<i8>>
    %pc = tile.splat %c : tensor<64x64x!tile.ptr<i32>>
    %qa = tile.addptr %pa, %off : tensor<64x64x!tile.ptr<i8>>, tensor<64x64xi32>
    %qb = tile.addptr %pb, %off : tensor<64x64x!tile.ptr<i8>>, tensor<64x64xi32>
    %qc = tile.addptr %pc, %off : tensor<64x64x!tile.ptr<i32>>, tensor<64x64xi32>
    %ta = tile.load %qa : tensor<64x64x!tile.ptr<i8>>
    %tbn = tile.load %qb : tensor<64x64x!tile.ptr<i8>>
    %tb = tile.trans %tbn {order = array<i32: 1, 0>} : tensor<64x64xi8> -> tensor<64x64xi8>
    %zero = arith.constant dense<0> : tensor<64x64xi32>
    %d = tile.dot %ta, %tb, %zero, ieee : tensor<64x64xi8> * tensor<64x64xi8> -> tensor<64x64xi32>
    tile.store %qc, %d : tensor<64x64x!tile.ptr<i32>>
    return
  }
  func.func @s8_b_row_major(%a: !tile.ptr<i8>, %b: !tile.ptr<i8>, %c: !tile.ptr<i32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %c64 = arith.constant dense<64> : tensor<64x1xi32>
    %rowOff = arith.muli %rows, %c64 : tensor<64x1xi32>
    %rb = tile.broadcast %rowOff : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    %pa = tile.splat %a : tensor<64x64x!tile.ptr<i8>>
    %pb = tile.splat %b : tensor<64x64x!tile.ptr<i8>>
    %pc = tile.splat %c : tensor<64x64x!tile.ptr<i32>>
    %qa = tile.addptr %pa, %off : tensor<64x64x!tile.ptr<i8>>, tensor<64x64xi32>
    %qb = tile.addptr %pb, %off : tensor<64x64x!tile.ptr<i8>>, tensor<64x64xi32>
    %qc = tile.addptr %pc, %off : tensor<64x64x!tile.ptr<i32>>, tensor<64x64xi32>
    %ta = tile.load %qa : tensor<64x64x!tile.ptr<i8>>
    %tb = tile.load %qb : tensor<64x64x!tile.ptr<i8>>
    %zero = arith.constant dense<0> : tensor<64x64xi32>
    %d = tile.dot %ta, %tb, %zero, ieee : tensor<64x64xi8> * tensor<64x64xi8> -> tensor<64x64xi32>
    tile.store %qc, %d : tensor<64x64x!tile.ptr<i32>>
    return
  }
}
