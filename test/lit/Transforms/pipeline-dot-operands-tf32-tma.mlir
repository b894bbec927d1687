// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands | FileCheck %s
// RUN: tegula-opt %s --tegula-gpu-pipeline="num-warps=4 num-stages=3 chip=sm_90a" | FileCheck %s --check-prefix=LLVM

// A tf32 dot whose f32 operands both arrive K-major through TMA descriptors
// (TN: B is loaded as [N, K] and transposed). Their rings' tensor maps round
// each element to tf32 as it lands (CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: the
// spec's trailing "tf32"), and the rings say so (alloc_shared {tf32}), so
// the wgmma reads the stages as they are: no rounding in place, no fence or
// barrier between the mbarrier wait and the wgmma. (cp.async rings of f32
// are still rounded in place: pipeline-dot-operands-tf32-wgmma.mlir.)
// CHECK: tilegpu.tensor_maps = "{{.*}}\0A0 7 2 {{.*}} 128 tf32 @{{[0-9]+:[^\\]+}}\0A1 7 2 {{.*}} 128 tf32 @{{[0-9]+:[^\\]+}}\0A"
// CHECK: %[[A:.*]] = tilegpu.alloc_shared {mbarriers, tf32} : <3 x[64, 32] x f32
// CHECK: %[[B:.*]] = tilegpu.alloc_shared {tf32} : <3 x[64, 32] x f32
// CHECK: scf.for
// CHECK:   tilegpu.tma_wait %[[A]]
// CHECK:   tilegpu.dot_shared %[[A]][%{{.*}}], %[[B]][%{{.*}}], %{{.*}} {precision = 1 : i32, transposeB}

// LLVM-LABEL: llvm.func @mm_tf32
// LLVM:         mbarrier.try_wait
// LLVM-NOT:     fence.proxy.async.shared::cta
// LLVM-NOT:     vector<4xi32>, !llvm.ptr<3>
// LLVM:         wgmma.fence.sync.aligned
// LLVM:         wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
module {
  func.func @mm_tf32(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                     %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %c128 = arith.constant 128 : i64
    %k64 = arith.extsi %k : i32 to i64
    %da = tile.make_tensor_descriptor %a, [%c128, %k64], [%k64, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x32xf32>>
    %db = tile.make_tensor_descriptor %b, [%c128, %k64], [%k64, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x32xf32>>
    %dc = tile.make_tensor_descriptor %c, [%c128, %c128], [%c128, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %zero) -> (tensor<64x64xf32>) : i32 {
      %ta = tile.descriptor_load %da[%c0, %i] : !tile.tensordesc<tensor<64x32xf32>> -> tensor<64x32xf32>
      %tb = tile.descriptor_load %db[%c0, %i] : !tile.tensordesc<tensor<64x32xf32>> -> tensor<64x32xf32>
      %bt = tile.trans %tb {order = array<i32: 1, 0>} : tensor<64x32xf32> -> tensor<32x64xf32>
      %d = tile.dot %ta, %bt, %x, tf32 : tensor<64x32xf32> * tensor<32x64xf32> -> tensor<64x64xf32>
      scf.yield %d : tensor<64x64xf32>
    }
    tile.descriptor_store %dc[%c0, %c0], %acc : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    return
  }
}
