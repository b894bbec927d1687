// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a "-pipeline-dot-operands=warp-specialize=true ping-pong=true" | FileCheck %s
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a "-pipeline-dot-operands=warp-specialize=true ping-pong=true" -allocate-shared-memory | FileCheck %s --check-prefix=ALLOC
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a "-pipeline-dot-operands=warp-specialize=true ping-pong=true" -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=4 -canonicalize -accelerate-dot=chip=sm_90a "-pipeline-dot-operands=warp-specialize=true ping-pong=true" -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=BARRIERS
// RUN: tegula-opt %s -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a "-pipeline-dot-operands=warp-specialize=true ping-pong=true" | FileCheck %s --check-prefix=EIGHT

// ping-pong (with warp-specialize, 4 warps): two programs per CTA
// (tilegpu.programs_per_cta = 2), each on its own consumer warpgroup. The
// programs' loops take turns on the tensor cores (order_wait before the loop
// with turn 2j + slot, order_arrive once it is issued, order_retire when the
// program has no loop left - an idle one at once) and share one ring: the
// producer (the first thread of producer warp 0) fills it turn by turn - turn
// t is program t % 2's (t / 2)-th loop if it has one - numbering the K
// iterations in turn order, as each program does from the loops both ran
// before its own (j + min(j + slot, the other's loops)).
// CHECK: tilegpu.programs_per_cta = 2 : i32
// CHECK: %[[A:.*]] = tilegpu.alloc_shared {mbarriers, released} : <3 x[64, 64] x bf16
// CHECK: %[[B:.*]] = tilegpu.alloc_shared : <3 x[64, 128] x bf16
// CHECK: tilegpu.order_init
// CHECK: scf.if %{{.*}} {
// CHECK:   tilegpu.set_max_registers {count = 40 : i32}
// CHECK:   %[[SLOT:.*]] = tilegpu.program_slot
// CHECK:   %[[LEADER:.*]] = tilegpu.is_warp_leader
// CHECK:   arith.cmpi slt, %[[SLOT]], %c1_i32
// CHECK:   scf.if
// CHECK:     %[[PID:.*]] = tile.program_id x
// CHECK:     %[[BASE:.*]] = arith.andi %[[PID]], %c-2_i32
// CHECK:     %[[TURNS:.*]] = arith.muli %c2_i32, %{{.*}} : i32
// CHECK:     scf.for %[[T:.*]] = %{{.*}} to %[[TURNS]]
// CHECK:       %[[OF:.*]] = arith.remsi %[[T]], %c2
// CHECK:       scf.if
// CHECK:         arith.addi %[[BASE]], %[[OF]]
// CHECK:         arith.minsi
// CHECK:         scf.for
// CHECK:           tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {released}
// CHECK:           tilegpu.tma_load %[[A]][
// CHECK:           tilegpu.tma_load %[[B]][{{.*}} signals %[[A]]
// CHECK: } else {
// CHECK:   tilegpu.set_max_registers {count = 232 : i32, increase}
// CHECK:   scf.if
// CHECK:     %[[OTHER:.*]] = arith.xori %{{.*}}, %c1_i32
// CHECK:     tilegpu.program_slot
// CHECK:     arith.minsi
// CHECK:     %[[FIRST:.*]] = arith.muli
// CHECK:     %[[SLOT2:.*]] = tilegpu.program_slot
// CHECK:     %[[TURN:.*]] = arith.addi %{{.*}}, %[[SLOT2]] : i32
// CHECK:     tilegpu.order_wait %[[TURN]]
// CHECK:     scf.for
// CHECK:       arith.addi %[[FIRST]], %{{.*}}
// CHECK:       tilegpu.tma_wait %[[A]][%{{.*}}], %{{.*}} {noBarrier}
// CHECK:       tilegpu.dot_shared %[[A]]
// CHECK:     tilegpu.order_arrive
// CHECK-NOT: tilegpu.tma_release
// CHECK:     tilegpu.wgmma_wait %{{.*}} {pending = 0 : i32}
// CHECK:     scf.if
// CHECK:       tilegpu.tma_arrive %[[A]][
// CHECK:     tile.descriptor_store
// CHECK:   }
// CHECK:   tilegpu.order_retire
// CHECK: } {tilegpu.warp_specialized}

// The ring and the order's pair of mbarriers live to the kernel's end (a
// program may still use them while the other is done). The consumers'
// buffers are packed into an arena of their own (here 32 KiB: the C block),
// which has a copy per program.
// ALLOC: tilegpu.shared_bytes = 139328
// ALLOC: tilegpu.alloc_shared {mbarriers, released, tilegpu.shared_offset = 114688 : i32} : <3 x[64, 64] x bf16
// ALLOC: tilegpu.alloc_shared {tilegpu.shared_offset = 65536 : i32} : <3 x[64, 128] x bf16
// ALLOC: tilegpu.order_init {tilegpu.shared_offset = 139312 : i32}
// ALLOC: tilegpu.convert_layout %{{.*}} {tilegpu.shared_offset = 0 : i32, tilegpu.shared_slot_stride = 32768 : i32}
// ALLOC: tile.descriptor_store {{.*}}{tilegpu.shared_offset = 0 : i32, tilegpu.shared_slot_stride = 32768 : i32, tilegpu.tma, tilegpu.tma_swizzle = 128 : i32}

// Lowered: 384 threads; program_id = 2 * ctaid.x + slot, num_programs a
// hidden last argument; each program's barrier is bar.sync 1 + slot.
// LLVM: llvm.func @mm({{.*}}, %{{.*}}: i32) attributes {{.*}}nvvm.maxntid = array<i32: 384, 1, 1>
// LLVM: "bar.sync $0, 128;", "r,~{memory}"
// A stage's copies of A (64 x 64) and B (64 x 128) complete on A's mbarrier,
// announced there once (8192 + 16384 bytes); a stage is released by each of
// the program's 4 warps (its lanes meet, lane 0 arrives).
// BARRIERS-DAG: "@$1 mbarrier.init.shared::cta.b64 [$0], 4;"
// BARRIERS-DAG: "@$1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], 24576;
// BARRIERS-DAG: "bar.warp.sync -1;\0A@$0 mbarrier.arrive.shared::cta.b64 _, [$1];"

// At 8 warps ping-pong never applies (two programs of 8 warps would leave
// too few registers; PingPongCompile checks a kernel warp specialised with
// one program per CTA instead).
// EIGHT-NOT: programs_per_cta
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
    %da = tile.make_tensor_descriptor %a, [%c256, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x64xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c256], [%c256, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x128xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c256, %c256], [%c256, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<64x128xf32>>
    %zero = arith.constant dense<0.0> : tensor<64x128xf32>
    %acc = scf.for %i = %c0 to %k step %c64 iter_args(%x = %zero) -> (tensor<64x128xf32>) : i32 {
      %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<64x64xbf16>> -> tensor<64x64xbf16>
      %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<64x128xbf16>> -> tensor<64x128xbf16>
      %d = tile.dot %ta, %tb, %x, ieee : tensor<64x64xbf16> * tensor<64x128xbf16> -> tensor<64x128xf32>
      scf.yield %d : tensor<64x128xf32>
    }
    tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<64x128xf32>>, tensor<64x128xf32>
    return
  }
}
