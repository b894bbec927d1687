// RUN: tegula-opt %s -convert-tile-to-tilegpu -accelerate-dot=chip=sm_90a | FileCheck %s

// f32 at tf32 precision on sm_90a: wgmma reads tf32 K-major only. An
// operand loaded along M or N through pointers still goes there (4-byte
// cp.async copies scatter it into a K-major ring: pipeline-dot-operands);
// one a TMA box brings along N stays on mma.sync (no box could fill such a
// ring; mma.sync pipelines either order). Operands computed in registers
// are stored K-major by the lowering.
// CHECK-DAG: #[[WG:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>
// CHECK-DAG: #[[SYNC:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
// CHECK-LABEL: func.func @tf32_k_major
// CHECK: tile.dot {{.*}}, tf32 : tensor<64x64xf32, #{{.*}}> * tensor<64x64xf32, #{{.*}}> -> tensor<64x64xf32, #[[WG]]>
// CHECK-LABEL: func.func @tf32_b_row_major
// CHECK: tile.dot {{.*}} -> tensor<64x64xf32, #[[WG]]>
// CHECK-LABEL: func.func @tf32_b_row_major_box
// CHECK: tile.dot {{.*}} -> tensor<64x64xf32, #[[SYNC]]>
// CHECK-LABEL: func.func @tf32_computed
// CHECK: tile.dot {{.*}} -> tensor<64x64xf32, #[[WG]]>
module attributes {tilegpu.num_warps = 4 : i32} {
  func.func @tf32_k_major(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>, %c: !tile.ptr<f32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %c64 = arith.constant dense<64> : tensor<64x1xi32>
    %rowOff = arith.muli %rows, %c64 : tensor<64x1xi32>
    %rb = tile.broadcast %rowOff : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    %pa = tile.splat %a : tensor<64x64x!tile.ptr<f32>>
    %pb = tile.splat %b : tensor<64x64x!tile.ptr<f32>>
    %pc = tile.splat %c : tensor<64x64x!tile.ptr<f32>>
    %qa = tile.addptr %pa, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %qb = tile.addptr %pb, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %qc = tile.addptr %pc, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %ta = tile.load %qa : tensor<64x64x!tile.ptr<f32>>
    %tbn = tile.load %qb : tensor<64x64x!tile.ptr<f32>>
    %tb = tile.trans %tbn {order = array<i32: 1, 0>} : tensor<64x64xf32> -> tensor<64x64xf32>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %d = tile.dot %ta, %tb, %zero, tf32 : tensor<64x64xf32> * tensor<64x64xf32> -> tensor<64x64xf32>
    tile.store %qc, %d : tensor<64x64x!tile.ptr<f32>>
    return
  }
  func.func @tf32_b_row_major(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>, %c: !tile.ptr<f32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %c64 = arith.constant dense<64> : tensor<64x1xi32>
    %rowOff = arith.muli %rows, %c64 : tensor<64x1xi32>
    %rb = tile.broadcast %rowOff : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    %pa = tile.splat %a : tensor<64x64x!tile.ptr<f32>>
    %pb = tile.splat %b : tensor<64x64x!tile.ptr<f32>>
    %pc = tile.splat %c : tensor<64x64x!tile.ptr<f32>>
    %qa = tile.addptr %pa, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %qb = tile.addptr %pb, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %qc = tile.addptr %pc, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %ta = tile.load %qa : tensor<64x64x!tile.ptr<f32>>
    %tb = tile.load %qb : tensor<64x64x!tile.ptr<f32>>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %d = tile.dot %ta, %tb, %zero, tf32 : tensor<64x64xf32> * tensor<64x64xf32> -> tensor<64x64xf32>
    tile.store %qc, %d : tensor<64x64x!tile.ptr<f32>>
    return
  }
  func.func @tf32_b_row_major_box(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                                  %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32>) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i64
    %da = tile.make_tensor_descriptor %a, [%c64, %c64], [%c64, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    %db = tile.make_tensor_descriptor %b, [%c64, %c64], [%c64, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    %dc = tile.make_tensor_descriptor %c, [%c64, %c64], [%c64, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    %ta = tile.descriptor_load %da[%c0, %c0] : !tile.tensordesc<tensor<64x64xf32>> -> tensor<64x64xf32>
    %tb = tile.descriptor_load %db[%c0, %c0] : !tile.tensordesc<tensor<64x64xf32>> -> tensor<64x64xf32>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %d = tile.dot %ta, %tb, %zero, tf32 : tensor<64x64xf32> * tensor<64x64xf32> -> tensor<64x64xf32>
    tile.descriptor_store %dc[%c0, %c0], %d : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    return
  }
  func.func @tf32_computed(%x: f32, %c: !tile.ptr<f32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %c64 = arith.constant dense<64> : tensor<64x1xi32>
    %rowOff = arith.muli %rows, %c64 : tensor<64x1xi32>
    %rb = tile.broadcast %rowOff : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    %pc = tile.splat %c : tensor<64x64x!tile.ptr<f32>>
    %qc = tile.addptr %pc, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %v = tile.splat %x : tensor<64x64xf32>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %d = tile.dot %v, %v, %zero, tf32 : tensor<64x64xf32> * tensor<64x64xf32> -> tensor<64x64xf32>
    tile.store %qc, %d : tensor<64x64x!tile.ptr<f32>>
    return
  }
}
