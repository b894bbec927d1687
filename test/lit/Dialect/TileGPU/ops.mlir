// RUN: tegula-opt %s | tegula-opt | FileCheck %s
// RUN: tegula-opt %s -mlir-print-op-generic | tegula-opt | FileCheck %s

// Layout encodings on tile tensors, and convert_layout, round-trip.

// CHECK-DAG: #[[B1:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-DAG: #[[B2:blocked[0-9]*]] = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[S:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[B2]]}>
#b1 = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#s = #tilegpu.slice<{dim = 1, parent = #b2}>
#b3 = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// CHECK-LABEL: func.func @layouts(
// CHECK:         tile.make_range {{.*}} : tensor<512xi32, #[[B1]]>
// CHECK:         tilegpu.convert_layout %{{.*}} : tensor<512xf32, #[[B1]]> -> tensor<512xf32, #{{blocked[0-9]*}}>
// CHECK:         tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<64xf32, #[[S]]> -> tensor<64x1xf32, #[[B2]]>
// CHECK:         tile.reduce
// CHECK:         -> tensor<64xf32, #[[S]]>
func.func @layouts(%x: tensor<512xf32, #b1>, %y: tensor<64xf32, #s>, %t: tensor<64x64xf32, #b2>) -> (tensor<512xf32, #b3>, tensor<64x1xf32, #b2>, tensor<64xf32, #s>) {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32, #b1>
  %c = tilegpu.convert_layout %x : tensor<512xf32, #b1> -> tensor<512xf32, #b3>
  %e = tile.expand_dims %y {axis = 1 : i32} : tensor<64xf32, #s> -> tensor<64x1xf32, #b2>
  %sum = tile.reduce(%t) {axis = 1 : i32} : (tensor<64x64xf32, #b2>) -> tensor<64xf32, #s> {
  ^bb0(%a: f32, %b: f32):
    %add = arith.addf %a, %b : f32
    tile.reduce.return %add : f32
  }
  return %c, %e, %sum : tensor<512xf32, #b3>, tensor<64x1xf32, #b2>, tensor<64xf32, #s>
}

// A ring filled from registers (overlap-chained-dots' staged wgmma operand).
// CHECK-LABEL: func.func @store_shared(
// CHECK:         %[[R:.*]] = tilegpu.alloc_shared : <1 x[64, 64] x bf16, contiguousDim = 1, swizzle = [1, 2, 4]>
// CHECK:         tilegpu.store_shared %{{.*}}, %[[R]][%{{.*}}] {fenceAsyncProxy} : tensor<64x64xbf16, #[[B2]]>, <1 x[64, 64] x bf16, contiguousDim = 1, swizzle = [1, 2, 4]>
func.func @store_shared(%q: tensor<64x64xbf16, #b2>, %s: i32) {
  %r = tilegpu.alloc_shared : !tilegpu.shared<1 x[64, 64] x bf16, contiguousDim = 1, swizzle = [1, 2, 4]>
  tilegpu.store_shared %q, %r[%s] {fenceAsyncProxy} : tensor<64x64xbf16, #b2>, !tilegpu.shared<1 x[64, 64] x bf16, contiguousDim = 1, swizzle = [1, 2, 4]>
  return
}

// Turns on the tensor cores: with a turn (a ping-pong GEMM's loops) and
// without one (the warpgroup's next, warpgroup-turns).
// CHECK-LABEL: func.func @turns(
// CHECK:         tilegpu.order_init
// CHECK-NEXT:    tilegpu.order_wait %{{.*}}
// CHECK-NEXT:    tilegpu.order_wait{{$}}
// CHECK-NEXT:    tilegpu.order_arrive
// CHECK-NEXT:    tilegpu.order_retire
func.func @turns(%turn: i32) {
  tilegpu.order_init
  tilegpu.order_wait %turn
  tilegpu.order_wait
  tilegpu.order_arrive
  tilegpu.order_retire
  return
}

// TMA rings that share one mbarrier a stage: A's copy announces both tiles'
// bytes, B's signals A's mbarrier and announces none.
// CHECK-LABEL: func.func @shared_stage_barrier(
// CHECK:         tilegpu.tma_load %[[A:.*]][%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] {expectBytes = 8192 : i64}
// CHECK:         tilegpu.tma_load %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] signals %[[A]] {expectBytes = 0 : i64}
// CHECK:         tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {noBarrier}
// CHECK:         tilegpu.tma_arrive %[[A]][%{{.*}}]
// CHECK:         tilegpu.tma_store_wait
func.func @shared_stage_barrier(%map: !llvm.ptr, %s: i32, %i: i32) {
  %a = tilegpu.alloc_shared {mbarriers, released} : !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>
  %b = tilegpu.alloc_shared : !tilegpu.shared<3 x[32, 64] x bf16, contiguousDim = 1>
  tilegpu.tma_load %a[%s], %map[%i, %i] {expectBytes = 8192 : i64} : !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>, !llvm.ptr
  tilegpu.tma_load %b[%s], %map[%i, %i] signals %a {expectBytes = 0 : i64} : !tilegpu.shared<3 x[32, 64] x bf16, contiguousDim = 1>, !llvm.ptr, !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>
  tilegpu.tma_wait %a[%s], %i {noBarrier} : !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>
  tilegpu.tma_arrive %a[%s] : !tilegpu.shared<3 x[64, 32] x bf16, contiguousDim = 1>
  tilegpu.tma_store_wait
  return
}
