// RUN: tegula-opt %s --tegula-gpu-pipeline="chip=sm_90a warp-specialize=true cluster-size=2" | FileCheck %s
// RUN: tegula-opt %s --tegula-gpu-pipeline="chip=sm_90a warp-specialize=true cluster-size=2" | FileCheck %s --check-prefix=SCOPE

// A persistent GEMM whose B blocks the programs of a cluster all load
// (tl::multicast), lowered for clusters of 2 CTAs:
// - the kernel declares its cluster shape (nvvm.cluster_dim: PTX
//   .reqnctapercluster 2, 1, 1);
// - each release mbarrier counts the consumer warps of both CTAs (4 x 2);
// - the CTAs meet (barrier.cluster) after the initialisation and at the end
//   of the producer and of the consumers;
// - the producer waits for a stage's release (default .acquire.cta scope:
//   the consumers' reads completed before they arrived), then copies
//   its half of B's block (its cluster rank's 16 rows, at rank x 16 x 128
//   bytes into the stage) into both CTAs (ctaMask 3), A's block into its own;
// - a consumer warp releases a stage in both CTAs (mapa to rank 0 and 1,
//   then a remote arrive at the default .release.cta semantics, as CUTLASS's
//   cluster barriers arrive).
// CHECK-DAG: "@$1 mbarrier.init.shared::cta.b64 [$0], 8;"
// CHECK-DAG: fence.mbarrier_init.release.cluster
// CHECK-DAG: "barrier.cluster.arrive.release;\0Abarrier.cluster.wait.acquire;"
// CHECK-DAG: tegula_wait_release:\0Ambarrier.try_wait.parity.shared::cta.b64
// CHECK-DAG: "mov.u32 $0, %cluster_ctarank;"
// CHECK-DAG: llvm.mlir.constant(3 : i16)
// CHECK-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [$5], [$2, {$6, $3}], [$0], $4;
// CHECK-DAG: "mapa.shared::cluster.u64 $0, $1, $2;"
// CHECK-DAG: "@$0 mbarrier.arrive.shared::cluster.b64 _, [$1];"
// SCOPE-NOT: release.cluster.shared::cluster
// SCOPE-NOT: acquire.cluster.shared::cta
// CHECK-DAG: nvvm.cluster_dim = array<i32: 2, 1, 1>
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
    scf.for %t = %c0 to %tiles step %one : i32 {
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
