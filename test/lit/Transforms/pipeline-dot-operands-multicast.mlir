// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands="warp-specialize=true cluster-size=2" | FileCheck %s
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands="warp-specialize=true cluster-size=4" | FileCheck %s --check-prefix=FOUR
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands="warp-specialize=false cluster-size=2" | FileCheck %s --check-prefix=NOWS

// A persistent kernel's K loop whose B block every program of a cluster
// loads alike (tile.descriptor_load {multicast}), warp specialised in
// clusters of 2: B's ring is filled by multicast copies - each CTA's
// producer copies half of each block's 32 rows (its tensor map's box is
// 16 rows) into both CTAs - while A's stays the CTA's own. The CTAs meet
// (tilegpu.cluster_sync) after the mbarriers' initialisation, before the
// split, and at the end of both the producer and the consumers, before the
// mbarriers are invalidated. The module says the cluster size.
// tl::cluster_size() (tile.cluster_size) is the launch's: the constant 2
// from here on, also recorded as tilegpu.launch_cluster_size.
// CHECK-NOT: tile.cluster_size
// CHECK-LABEL: module attributes
// CHECK-SAME: tilegpu.cluster_size = 2
// CHECK-SAME: tilegpu.launch_cluster_size = 2
// CHECK-SAME: tilegpu.producer_warps = 4
// The rings' tensor maps (after the descriptors' own three): A's box 64x32,
// B's 16x64 (boxes and swizzle end each record).
// CHECK-SAME: tilegpu.tensor_maps = "{{.*}} 64 32 64 @{{[0-9]+:[^\\]+}}{{.}}0A{{.*}} 16 64 128 @{{[0-9]+:[^\\]+}}{{.}}0A"
// CHECK: %[[A:.*]] = tilegpu.alloc_shared {mbarriers, released}
// CHECK: %[[B:.*]] = tilegpu.alloc_shared :
// CHECK: tilegpu.cluster_sync
// CHECK:      scf.if %{{.*}} {
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {released}
// CHECK:       tilegpu.tma_load %[[A]][
// CHECK-NOT:   multicast
// CHECK-SAME:  expectBytes = 8192
// CHECK:       tilegpu.tma_load %[[B]][{{.*}} signals %[[A]] {expectBytes = 0 : i64, multicast = 2 : i64}
// CHECK:   tilegpu.cluster_sync
// CHECK: } else {
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       tilegpu.tma_arrive %[[A]][
// CHECK:   tilegpu.tma_store_wait
// CHECK-NEXT: tilegpu.cluster_sync
// CHECK-NEXT: tilegpu.tma_release %[[A]]
// CHECK: } {tilegpu.warp_specialized}

// Four CTAs split 32 rows into slices of 8, one swizzle period each.
// FOUR-NOT: tile.cluster_size
// FOUR: tilegpu.cluster_size = 4
// FOUR: tilegpu.tensor_maps = "{{.*}} 8 64 128 @{{[0-9]+:[^\\]+}}{{.}}0A"
// FOUR: tilegpu.tma_load {{.*}}multicast = 4 : i64

// Without warp specialisation there is no release barrier the other CTAs
// could arrive on: no clusters, the rings are the CTA's own.
// NOWS-NOT: tilegpu.cluster_size
// NOWS-NOT: multicast =
// NOWS-NOT: cluster_sync

module attributes {tilegpu.num_warps = 4 : i32} {
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
    %ctas = tile.cluster_size
    scf.for %t = %c0 to %tiles step %ctas : i32 {
      %row = arith.muli %t, %c64 : i32
      %zero = arith.constant dense<0.0> : tensor<64x64xf32>
      %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %zero) -> (tensor<64x64xf32>) : i32 {
        %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<64x32xbf16>> -> tensor<64x32xbf16>
        %tb = tile.descriptor_load %db[%i, %c0] {multicast} : !tile.tensordesc<tensor<32x64xbf16>> -> tensor<32x64xbf16>
        %d = tile.dot %ta, %tb, %x, ieee : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
        scf.yield %d : tensor<64x64xf32>
      }
      tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    }
    return
  }
}
