// RUN: tegula-opt %s -split-input-file -use-tma | FileCheck %s
// RUN: tegula-opt %s -split-input-file -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM

// A descriptor over kernel arguments (extents widened from i32) gets a
// hidden tensor-map argument, recorded in tilegpu.tensor_maps (base argument
// 0, bf16 = dtype 6, rank 2: extents args 2 and 3, strides arg 3 and the
// constant 1, box 32 x 64, swizzled: only loaded through, its 128-byte rows
// land in a 128-byte swizzled tile), the store's descriptor likewise over
// argument 1 (only stored through: its rows are staged in such a tile), each
// record ending with its descriptor's file:line (@length:text, for the launch's
// errors); the load and the store are marked for TMA with their swizzle.
// CHECK: module attributes {tilegpu.tensor_maps = "0 6 2 2 1 3 1 3 1 -1 1 32 64 128 @{{[0-9]+:[^\\]+}}\0A1 6 2 2 1 3 1 3 1 -1 1 32 64 128 @{{[0-9]+:[^\\]+}}\0A"}
// CHECK-LABEL: func.func @copy
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>})
// CHECK: tile.make_tensor_descriptor {{.*}} {tilegpu.tensor_map = 4 : i32}
// CHECK: tile.descriptor_load {{.*}} {tilegpu.tma, tilegpu.tma_swizzle = 128 : i32}
// CHECK: tile.make_tensor_descriptor {{.*}} {tilegpu.tensor_map = 5 : i32}
// CHECK: tile.descriptor_store {{.*}} {tilegpu.tma, tilegpu.tma_swizzle = 128 : i32}

// The lowering: the map is a grid-constant parameter; one thread initialises
// the mbarrier behind the 4 KiB block, expects its bytes and issues the copy
// (coordinates innermost first); everyone waits on phase 0 (the constant
// that is also the column coordinate here), then reads its elements of the
// swizzled tile in 8-byte vectors.
// LLVM-LABEL: llvm.func @copy
// LLVM-SAME: %[[MAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// LLVM: fence.proxy.async.shared::cta;
// LLVM: nvvm.barrier0
// LLVM: "@$1 mbarrier.init.shared::cta.b64 [$0], 1;
// LLVM: nvvm.barrier0
// LLVM: llvm.inline_asm has_side_effects "@$1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], 4096;", "l,b"
// LLVM-NEXT: llvm.inline_asm has_side_effects "@$3 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$4, $5}], [$2];", "l,l,l,b,r,r" %{{.*}}, %[[MAP]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// LLVM-NOT: cp.async.bulk.tensor
// LLVM: mbarrier.try_wait.parity.shared::cta.b64 %tegula_done, [$0], $1;{{.*}} "l,r" %{{.*}}, %[[ZERO:.*]] :
// LLVM: llvm.load {{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xi32>
// LLVM: mbarrier.inval.shared::cta.b64
// The store: the block's owners write it to the swizzled tile in vectors
// vectors, fence, barrier; thread 0 sends it out and waits until the buffer
// has been read.
// LLVM: st.shared.v2.b32
// LLVM: fence.proxy.async.shared::cta;
// LLVM: nvvm.barrier0
// LLVM: "@$2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$3, $4}], [$1];"
// LLVM: "@$0 cp.async.bulk.commit_group;\0A@$0 cp.async.bulk.wait_group.read 0;"
module {
  func.func @copy(%x: !tile.ptr<bf16>, %out: !tile.ptr<bf16>, %m: i32, %n: i32) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %m64 = arith.extsi %m : i32 to i64
    %n64 = arith.extsi %n : i32 to i64
    %d = tile.make_tensor_descriptor %x, [%m64, %n64], [%n64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<32x64xbf16>>
    %pid = tile.program_id x
    %v = tile.descriptor_load %d[%pid, %c0] : !tile.tensordesc<tensor<32x64xbf16>> -> tensor<32x64xbf16>
    %e = tile.make_tensor_descriptor %out, [%m64, %n64], [%n64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<32x64xbf16>>
    tile.descriptor_store %e[%pid, %c0], %v : !tile.tensordesc<tensor<32x64xbf16>>, tensor<32x64xbf16>
    return
  }
}

// -----

// A base computed in the kernel, or a stride the host cannot know, stays
// on the masked path: no hidden argument, no marks.
// CHECK-NOT: tilegpu.tensor_maps
// CHECK-LABEL: func.func @computed
// CHECK-NOT: !llvm.ptr
// CHECK-NOT: tilegpu.tma
module {
  func.func @computed(%x: !tile.ptr<f32>, %m: i64, %s: i64) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c8 = arith.constant 8 : i64
    %shifted = tile.addptr %x, %c8 : !tile.ptr<f32>, i64
    %d = tile.make_tensor_descriptor %shifted, [%m, %m], [%m, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<16x16xf32>>
    %v = tile.descriptor_load %d[%c0, %c0] : !tile.tensordesc<tensor<16x16xf32>> -> tensor<16x16xf32>
    %twice = arith.muli %s, %s : i64
    %e = tile.make_tensor_descriptor %x, [%m, %m], [%twice, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<16x16xf32>>
    %w = tile.descriptor_load %e[%c0, %c0] : !tile.tensordesc<tensor<16x16xf32>> -> tensor<16x16xf32>
    %sum = arith.addf %v, %w : tensor<16x16xf32>
    tile.descriptor_store %e[%c0, %c0], %sum : !tile.tensordesc<tensor<16x16xf32>>, tensor<16x16xf32>
    return
  }
}

// -----

// A stride that is an argument times a constant (heads x head size, the row
// of a multi-head buffer) is something the host can compute: the record
// says argument 2 times 64 (and the extent argument 1 times 1).
// Swizzled, its f32 rows land a 32-column box at a time (box 16 x 32).
// CHECK: tilegpu.tensor_maps = "0 7 2 1 1 -1 4096 2 64 -1 1 16 32 128 @{{[0-9]+:[^\\]+}}\0A"
// CHECK-LABEL: func.func @heads
// CHECK: tile.descriptor_load {{.*}} {tilegpu.tma, tilegpu.tma_swizzle = 128 : i32}
module {
  func.func @heads(%x: !tile.ptr<f32>, %rows: i32, %h: i32) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c4096 = arith.constant 4096 : i64
    %rows64 = arith.extsi %rows : i32 to i64
    %width = arith.muli %h, %c64 : i32
    %width64 = arith.extsi %width : i32 to i64
    %d = tile.make_tensor_descriptor %x, [%rows64, %c4096], [%width64, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<16x64xf32>>
    %v = tile.descriptor_load %d[%c0, %c0] : !tile.tensordesc<tensor<16x64xf32>> -> tensor<16x64xf32>
    return
  }
}
