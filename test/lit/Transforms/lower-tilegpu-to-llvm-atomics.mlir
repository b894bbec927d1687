// RUN: tegula-opt %s -split-input-file --allocate-shared-memory --lower-tilegpu-to-llvm | FileCheck %s

// A scalar atomic is thread 0's. Its release covers the program's earlier
// stores (every thread's: a CTA barrier before it), its acquire the
// program's later loads (a barrier after it: the old value's broadcast has
// two, an unused old value gets one); a relaxed one needs none.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @publish(
  // CHECK:         llvm.store {{.*}} : f32, !llvm.ptr<1>
  // CHECK-NEXT:    nvvm.barrier0
  // CHECK:         atom.release.gpu.global.add.u32
  // CHECK-NOT:     nvvm.barrier0
  // CHECK:         atom.acquire.gpu.global.add.u32
  // CHECK-NEXT:    nvvm.barrier0
  // CHECK-NEXT:    nvvm.barrier0
  // CHECK-NOT:     nvvm.barrier0
  // CHECK:         atom.acq_rel.gpu.global.add.u32
  // CHECK-NEXT:    nvvm.barrier0
  // CHECK-NEXT:    st.shared.b32
  // CHECK-NEXT:    nvvm.barrier0
  // CHECK:         atom.relaxed.gpu.global.add.u32
  // CHECK-NOT:     nvvm.barrier0
  // CHECK:         llvm.return
  func.func @publish(%data: !tile.ptr<f32>, %flag: !tile.ptr<i32>, %out: !tile.ptr<i32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32, #b>
    %ds = tile.splat %data : tensor<128x!tile.ptr<f32>, #b>
    %p = tile.addptr %ds, %r : tensor<128x!tile.ptr<f32>, #b>, tensor<128xi32, #b>
    %v = arith.constant dense<1.0> : tensor<128xf32, #b>
    tile.store %p, %v : tensor<128x!tile.ptr<f32>, #b>
    %one = arith.constant 1 : i32
    %a = tile.atomic_rmw add, %flag, %one sem = release : !tile.ptr<i32>
    %b = tile.atomic_rmw add, %flag, %one sem = acquire : !tile.ptr<i32>
    %c = tile.atomic_rmw add, %flag, %one : !tile.ptr<i32>
    tile.store %out, %c : !tile.ptr<i32>
    %d = tile.atomic_rmw add, %flag, %one sem = relaxed : !tile.ptr<i32>
    return
  }
}

// -----

// A used old value of a tile atomic whose elements several threads hold (32
// elements over 128 threads): the owner runs the atomic, stores its old value
// in the element's slot, and after a barrier every copy loads it from there.
#d = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @copies(
  // CHECK:         atom.acq_rel.gpu.global.add.u32
  // CHECK:         nvvm.barrier0
  // CHECK:         st.shared.b32
  // CHECK:         nvvm.barrier0
  // CHECK-NEXT:    llvm.load {{.*}} : !llvm.ptr<3> -> i32
  // CHECK:         llvm.return
  func.func @copies(%counters: !tile.ptr<i32>, %out: !tile.ptr<i32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #d>
    %cs = tile.splat %counters : tensor<32x!tile.ptr<i32>, #d>
    %p = tile.addptr %cs, %r : tensor<32x!tile.ptr<i32>, #d>, tensor<32xi32, #d>
    %one = arith.constant dense<1> : tensor<32xi32, #d>
    %old = tile.atomic_rmw add, %p, %one : tensor<32x!tile.ptr<i32>, #d>
    %os = tile.splat %out : tensor<32x!tile.ptr<i32>, #d>
    %q = tile.addptr %os, %r : tensor<32x!tile.ptr<i32>, #d>, tensor<32xi32, #d>
    tile.store %q, %old : tensor<32x!tile.ptr<i32>, #d>
    return
  }
}
