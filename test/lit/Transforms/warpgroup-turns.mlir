// The attention kernel of overlap-chained-dots.mlir (64 x 64 blocks, d 64, 4
// warps), warp specialised with ping-pong: two programs, each on its own
// consumer warpgroup. After the rotation each burst of wgmma issues - the
// prologue's S, the loop's next S with this P V, the epilogue's last P V -
// waits for the warpgroup's turn and ends it, so one program's softmax runs
// while the other's dots compute. The turn mbarriers are initialised before
// the warp split; every program retires at the end of the consumers.
// RUN: tegula-opt %S/overlap-chained-dots.mlir -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse "-pipeline-dot-operands=warp-specialize=true ping-pong=true" -overlap-chained-dots -warpgroup-turns | FileCheck %s
// CHECK:      tilegpu.order_init
// CHECK-NEXT: scf.if %{{.*}} {
// Prologue.
// CHECK:      tilegpu.tma_wait %[[K:.*]][%{{.*}}], %{{.*}} {noBarrier}
// CHECK-NEXT: tilegpu.order_wait{{$}}
// CHECK-NEXT: %[[S0:.*]] = tilegpu.dot_shared_b
// CHECK-NEXT: tilegpu.order_arrive
// CHECK-NEXT: tilegpu.wgmma_wait %[[S0]] {pending = 0 : i32}
// The rotated loop: one burst of two dots (V's ring wait between them).
// CHECK:      scf.for
// CHECK:        tilegpu.tma_wait %[[K]][%{{.*}}], %{{.*}} {noBarrier}
// CHECK-NEXT:   tilegpu.order_wait{{$}}
// CHECK-NEXT:   %[[S:.*]] = tilegpu.dot_shared_b
// CHECK-NEXT:   tilegpu.tma_wait %[[V:.*]][%{{.*}}], %{{.*}} {noBarrier}
// CHECK-NEXT:   tilegpu.dot_shared_b
// CHECK-NEXT:   tilegpu.order_arrive
// CHECK-NEXT:   tilegpu.wgmma_wait %[[S]] {pending = 1 : i32}
// CHECK-NOT:    tilegpu.order_
// CHECK:        scf.yield
// Epilogue.
// CHECK:      tilegpu.tma_wait %[[V]][%{{.*}}], %{{.*}} {noBarrier}
// CHECK-NEXT: tilegpu.order_wait{{$}}
// CHECK-NEXT: %[[OL:.*]] = tilegpu.dot_shared_b
// CHECK-NEXT: tilegpu.order_arrive
// CHECK-NEXT: tilegpu.wgmma_wait %[[OL]] {pending = 0 : i32}
// CHECK:      tilegpu.order_retire
// CHECK-NEXT: } {tilegpu.warp_specialized}

// Lowered: a turn ends with every thread's arrival and the warpgroup's own
// named barrier (3 + its index), so that no warp waits for its next turn
// while its warpgroup's phase is still open.
// RUN: tegula-opt %S/overlap-chained-dots.mlir -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse "-pipeline-dot-operands=warp-specialize=true ping-pong=true" -overlap-chained-dots -warpgroup-turns -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM
// LLVM-COUNT-3: mbarrier.arrive.shared::cta.b64 _, [$0];\0Abar.sync $1, 128;
// LLVM-NOT:     bar.sync $1, 128;

// One consumer warpgroup (4 warps, no ping-pong): nothing to alternate with.
// RUN: tegula-opt %S/overlap-chained-dots.mlir -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -pipeline-dot-operands=warp-specialize=true -overlap-chained-dots -warpgroup-turns=explain=true 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: remark: warpgroup-turns: the warpgroups do not take turns: not two consumer warpgroups
// ONE-NOT: tilegpu.order_

// A matrix product: at 8 warps its loop has one dot (the warpgroups' bursts would be
// back to back anyway); with ping-pong at 4 its programs already take turns
// loop by loop.
// RUN: tegula-opt %S/pipeline-dot-operands-warp-specialize.mlir -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands=warp-specialize=true -warpgroup-turns=explain=true 2>&1 | FileCheck %s --check-prefix=GEMM
// GEMM: remark: warpgroup-turns: the warpgroups do not take turns: no loop of two wgmma dots
// GEMM-NOT: tilegpu.order_
// RUN: tegula-opt %S/pipeline-dot-operands-ping-pong.mlir -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a "-pipeline-dot-operands=warp-specialize=true ping-pong=true" -warpgroup-turns=explain=true 2>&1 | FileCheck %s --check-prefix=PP
// PP: remark: warpgroup-turns: the warpgroups do not take turns: their loops take turns already (a ping-pong GEMM)
// PP-NOT: tilegpu.order_wait{{$}}

// Without a producer warpgroup the ring waits hold barriers: no turns.
// RUN: tegula-opt %S/overlap-chained-dots.mlir -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a -propagate-mma-layout -remove-layout-conversions -cse -pipeline-dot-operands -overlap-chained-dots -warpgroup-turns=explain=true 2>&1 | FileCheck %s --check-prefix=PLAIN
// PLAIN: remark: warpgroup-turns: the warpgroups do not take turns: not warp specialised
// PLAIN-NOT: tilegpu.order_
