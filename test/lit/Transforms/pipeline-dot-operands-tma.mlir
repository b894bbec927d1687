// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands | FileCheck %s

// On sm_90a a dot's operands loaded through TMA descriptors become rings
// filled by TMA: one mbarrier per stage (tma_init), which A's and B's copies
// share - A's announces both tiles' bytes (4096 + 4096), B's signals A's
// mbarrier and announces none - so each iteration waits once for its
// stage's phase ((i / 3) % 2) before wgmma reads it, and refills the stage
// two iterations behind (one wgmma group stays in flight). Every copy is
// guarded by its iteration existing (none past the loop's end: no box wholly
// outside the tensor), so after the loop the mbarriers are invalidated
// without a drain. Each ring gets its own tensor map: A's 64 x 32 bf16
// boxes with rows of 64 bytes (64-byte swizzle), B's 32 x 64 with 128-byte
// rows (128-byte swizzle).
// CHECK: tilegpu.tensor_maps = "{{.*}}\0A0 6 2 -1 128 3 1 3 1 -1 1 64 32 64 @{{[0-9]+:[^\\]+}}\0A1 6 2 3 1 -1 128 -1 128 -1 1 32 64 128 @{{[0-9]+:[^\\]+}}\0A"
// CHECK: %[[A:.*]] = tilegpu.alloc_shared {mbarriers} : <3 x[64, 32] x bf16
// CHECK: tilegpu.tma_init %[[A]]
// CHECK: %[[B:.*]] = tilegpu.alloc_shared : <3 x[32, 64] x bf16
// CHECK-NOT: tilegpu.tma_init
// CHECK: %[[R0:.*]] = arith.cmpi ult, %[[I0:.*]], %[[K:arg3]] : i32
// CHECK: %[[L0:.*]] = arith.cmpi slt, %c0_i32, %[[K]] : i32
// CHECK: %[[P0:.*]] = arith.andi %[[R0]], %[[L0]] : i1
// CHECK: scf.if %[[P0]] {
// CHECK:   tilegpu.tma_load %[[A]][%{{.*}}], %[[MAPA:arg[0-9]+]][%{{.*}}, %[[I0]]] {expectBytes = 8192 : i64}
// CHECK: scf.if
// CHECK:   tilegpu.tma_load %[[B]][%{{.*}}], %[[MAPB:arg[0-9]+]][{{.*}}] signals %[[A]] {expectBytes = 0 : i64}
// CHECK: scf.for
// CHECK:   tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} :
// CHECK:   tilegpu.dot_shared %[[A]][%{{.*}}], %[[B]][%{{.*}}]
// CHECK:   tilegpu.wgmma_wait %{{.*}} {pending = 1 : i32}
// CHECK:   %[[P:.*]] = arith.cmpi ult, %[[AHEAD:.*]], %[[K]] : i32
// CHECK:   scf.if %[[P]] {
// CHECK:     tilegpu.tma_load %[[A]][%{{.*}}], %[[MAPA]][%{{.*}}, %[[AHEAD]]] {expectBytes = 8192 : i64}
// CHECK:   scf.if
// CHECK:     tilegpu.tma_load %[[B]][%{{.*}}], %[[MAPB]][{{.*}}] signals %[[A]]
// CHECK:   scf.yield
// CHECK-NOT: tma_wait
// CHECK: tilegpu.tma_release %[[A]]
// CHECK-NOT: tilegpu.tma_release
// CHECK: tilegpu.wgmma_wait %{{.*}} {pending = 0 : i32}
module {
  func.func @mm(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %c128 = arith.constant 128 : i64
    %k64 = arith.extsi %k : i32 to i64
    %da = tile.make_tensor_descriptor %a, [%c128, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x32xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c128], [%c128, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<32x64xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c128, %c128], [%c128, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x64xf32>>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %zero) -> (tensor<64x64xf32>) : i32 {
      %ta = tile.descriptor_load %da[%c0, %i] : !tile.tensordesc<tensor<64x32xbf16>> -> tensor<64x32xbf16>
      %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<32x64xbf16>> -> tensor<32x64xbf16>
      %d = tile.dot %ta, %tb, %x, ieee : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
      scf.yield %d : tensor<64x64xf32>
    }
    tile.descriptor_store %dc[%c0, %c0], %acc : !tile.tensordesc<tensor<64x64xf32>>, tensor<64x64xf32>
    return
  }
}
