// RUN: tegula-opt %s -split-input-file -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands=warp-specialize=true | FileCheck %s

// A K loop inside a loop at the top of the kernel (a persistent kernel's
// tile loop) whose K iterations are the same for every tile: the producer
// runs both loops, recomputing each tile's coordinates; stages and phases
// count the K iterations of the whole kernel (tile iteration j * trip count
// + i), so the rings are allocated once, before the split, and released
// after the tile loop - the producer fills the next tile's stages while the
// consumers store this one. Each tile's K loop releases its own stages: the
// previous iteration's in the loop, the last one after the loop's final
// wgmma wait, so the producer may refill every stage during the epilogue.
// The C block's TMA store waits for its copy's read before the next tile's
// store (tilegpu.tma_store_deferred) and once after the tile loop
// (tilegpu.tma_store_wait), not right after issuing.
// CHECK-LABEL: module attributes
// CHECK-SAME: tilegpu.producer_warps = 4
// CHECK: %[[A:.*]] = tilegpu.alloc_shared {mbarriers, released}
// CHECK: %[[B:.*]] = tilegpu.alloc_shared :
// CHECK: scf.if %{{.*}} {
// CHECK:   scf.for %[[T:.*]] =
// CHECK:     arith.muli %[[T]]
// CHECK:     arith.subi %[[T]]
// CHECK:     scf.for
// CHECK:       tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {released}
// CHECK:       tilegpu.tma_load %[[A]][
// CHECK:       tilegpu.tma_load %[[B]][{{.*}} signals %[[A]]
// CHECK: } else {
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       tilegpu.tma_wait %[[A]][
// CHECK:       tilegpu.dot_shared
// CHECK:       tilegpu.tma_arrive %[[A]][
// CHECK:     tilegpu.wgmma_wait %{{.*}} {pending = 0 : i32}
// CHECK:     scf.if
// CHECK:       tilegpu.tma_arrive %[[A]][
// CHECK:     tile.descriptor_store {{.*}}tilegpu.tma_store_deferred
// CHECK:   }
// CHECK:   tilegpu.tma_store_wait
// CHECK:   tilegpu.tma_release %[[A]]
// CHECK-NOT: tilegpu.tma_release
// CHECK: } {tilegpu.warp_specialized}

module {
  func.func @mm(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32},
                %tiles: i32) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i64
    %k64 = arith.extsi %k : i32 to i64
    %da = tile.make_tensor_descriptor %a, [%c128, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x32xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c128], [%c128, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<32x64xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c128, %c128], [%c128, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    scf.for %t = %c0 to %tiles step %one : i32 {
      %row = arith.muli %t, %c64 : i32
      %zero = arith.constant dense<0.0> : tensor<64x64xf32>
      %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %zero) -> (tensor<64x64xf32>) : i32 {
        %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<64x32xbf16>> -> tensor<64x32xbf16>
        %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<32x64xbf16>> -> tensor<32x64xbf16>
        %d = tile.dot %ta, %tb, %x, ieee : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
        scf.yield %d : tensor<64x64xf32>
      }
      tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    }
    return
  }
}

// -----

// When the K loop's bounds change from tile to tile (stream-K's runs), both
// tile loops carry the K iterations run so far - the producer's and the
// consumers' - and number the stages and phases from it: each adds its
// tile's trip count. The rest is as above.
// CHECK: // -----
// CHECK: tilegpu.producer_warps = 4
// CHECK: %[[A:.*]] = tilegpu.alloc_shared {mbarriers, released}
// CHECK: scf.if %{{.*}} {
// CHECK:   scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[PDONE:.*]] = %{{.*}}) -> (i32)
// CHECK:     %[[PTRIP:.*]] = arith.select
// CHECK:     scf.for %[[PK:.*]] =
// CHECK:       %[[PI:.*]] = arith.divsi
// CHECK:       %[[PG:.*]] = arith.addi %[[PDONE]], %[[PI]]
// CHECK:       arith.remsi %[[PG]]
// CHECK:       tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {released}
// CHECK:       tilegpu.tma_load %[[A]][
// CHECK:     %[[PNEXT:.*]] = arith.addi %[[PDONE]], %[[PTRIP]]
// CHECK:     scf.yield %[[PNEXT]] : i32
// CHECK: } else {
// CHECK:   scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[CDONE:.*]] = %{{.*}}) -> (i32)
// CHECK:     %[[CTRIP:.*]] = arith.select
// CHECK:     scf.for
// CHECK:       %[[CI:.*]] = arith.divsi
// CHECK:       arith.addi %[[CDONE]], %[[CI]]
// CHECK:       tilegpu.tma_wait %[[A]][
// CHECK:       tilegpu.dot_shared
// CHECK:     tilegpu.wgmma_wait %{{.*}} {pending = 0 : i32}
// CHECK:     tile.descriptor_store {{.*}}tilegpu.tma_store_deferred
// CHECK:     %[[CNEXT:.*]] = arith.addi %[[CDONE]], %[[CTRIP]]
// CHECK:     scf.yield %[[CNEXT]] : i32
// CHECK:   tilegpu.tma_store_wait
// CHECK:   tilegpu.tma_release %[[A]]
// CHECK: } {tilegpu.warp_specialized}
module {
  func.func @mm(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32},
                %tiles: i32) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i64
    %k64 = arith.extsi %k : i32 to i64
    %da = tile.make_tensor_descriptor %a, [%c128, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x32xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c128], [%c128, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<32x64xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c128, %c128], [%c128, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    scf.for %t = %c0 to %tiles step %one : i32 {
      %row = arith.muli %t, %c64 : i32
      %zero = arith.constant dense<0.0> : tensor<64x64xf32>
      %kt = arith.addi %k, %row : i32
      %acc = scf.for %i = %c0 to %kt step %c32 iter_args(%x = %zero) -> (tensor<64x64xf32>) : i32 {
        %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<64x32xbf16>> -> tensor<64x32xbf16>
        %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<32x64xbf16>> -> tensor<32x64xbf16>
        %d = tile.dot %ta, %tb, %x, ieee : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
        scf.yield %d : tensor<64x64xf32>
      }
      tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    }
    return
  }
}
