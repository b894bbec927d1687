// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands=warp-specialize=true | FileCheck %s
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands | FileCheck %s --check-prefix=PLAIN

// warp-specialize: A's ring gets a release mbarrier per stage, which B's
// ring shares with its data mbarrier (one wait and one release a stage for
// both: A's copy announces the stage's 16384 + 32768 bytes, B's signals A's
// mbarrier), the kernel a producer warpgroup (tilegpu.producer_warps = 4).
// It splits at the top: the producer (is_producer_warp) recomputes the
// loop's bounds and the copies' coordinates from scalars, gives registers up
// (8 + 4 warps: 40 / 232), and per iteration waits for the stage's release
// from its second use on ((i / 3 - 1) % 2) before filling it. The consumers
// only wait for each stage, run the dot, and release the previous
// iteration's stage once its wgmma group completed; no prologue, no drain
// loop.
// CHECK: tilegpu.producer_warps = 4 : i32
// CHECK: %[[A:.*]] = tilegpu.alloc_shared {mbarriers, released}
// CHECK: tilegpu.tma_init %[[A]]
// CHECK: %[[B:.*]] = tilegpu.alloc_shared :
// CHECK-NOT: tilegpu.tma_init
// CHECK: %[[P:.*]] = tilegpu.is_producer_warp
// CHECK: scf.if %[[P]] {
// CHECK:   tilegpu.set_max_registers {count = 40 : i32}
// CHECK:   scf.for
// CHECK:     scf.if
// CHECK:       tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {released} :
// CHECK:     tilegpu.tma_load %[[A]][{{.*}}] {expectBytes = 49152 : i64}
// CHECK:     tilegpu.tma_load %[[B]][{{.*}}] signals %[[A]] {expectBytes = 0 : i64}
// CHECK: } else {
// CHECK:   tilegpu.set_max_registers {count = 232 : i32, increase}
// CHECK-NOT: tilegpu.tma_load
// CHECK:   scf.for
// CHECK:     tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {noBarrier} :
// CHECK:     tilegpu.dot_shared %[[A]]
// CHECK:     tilegpu.wgmma_wait %{{.*}} {pending = 1 : i32}
// CHECK:     scf.if
// CHECK:       tilegpu.tma_arrive %[[A]][{{.*}}] :
// CHECK-NOT: tilegpu.tma_load
// CHECK:   tilegpu.tma_release %[[A]]
// CHECK-NOT: tilegpu.tma_release
// CHECK:   tilegpu.wgmma_wait %{{.*}} {pending = 0 : i32}
// CHECK: } {tilegpu.warp_specialized}
// PLAIN-NOT: tilegpu.producer_warps
// PLAIN-NOT: is_producer_warp
module {
  func.func @mm(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c256 = arith.constant 256 : i64
    %k64 = arith.extsi %k : i32 to i64
    %pid = tile.program_id x
    %row = arith.muli %pid, %c64 : i32
    %da = tile.make_tensor_descriptor %a, [%c256, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<128x64xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c256], [%c256, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x256xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c256, %c256], [%c256, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<128x256xf32>>
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %acc = scf.for %i = %c0 to %k step %c64 iter_args(%x = %zero) -> (tensor<128x256xf32>) : i32 {
      %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<128x64xbf16>> -> tensor<128x64xbf16>
      %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<64x256xbf16>> -> tensor<64x256xbf16>
      %d = tile.dot %ta, %tb, %x, ieee : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %d : tensor<128x256xf32>
    }
    tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<128x256xf32>>, tensor<128x256xf32>
    return
  }
}
