// RUN: tegula-opt %s -split-input-file -order-global-accesses | FileCheck %s

#a = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #tilegpu.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>

// A block stored in one layout and loaded back in another (through other
// pointers into the same argument): other threads own the loaded elements,
// so a barrier orders their stores first. The load of another argument
// needs none; nor does the store and load through one pointer tile in one
// layout (each element one thread's).
// CHECK-LABEL: func.func @read_back(
// CHECK:         tile.store %[[PA:[0-9]+]],
// CHECK-NOT:     tilegpu.barrier
// CHECK:         tile.load %[[PA]] :
// CHECK-NOT:     tilegpu.barrier
// CHECK:         tile.load {{.*}}#blocked1>
// CHECK:         tilegpu.barrier
// CHECK-NEXT:    tile.load {{.*}}#blocked1>
// CHECK-NOT:     tilegpu.barrier
// CHECK:         return
func.func @read_back(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %offA: tensor<32x32xi32, #a>, %offB: tensor<32x32xi32, #b>,
                     %v: tensor<32x32xf32, #a>) -> (tensor<32x32xf32, #a>, tensor<32x32xf32, #b>, tensor<32x32xf32, #b>) {
  %xa0 = tile.splat %x : tensor<32x32x!tile.ptr<f32>, #a>
  %xa = tile.addptr %xa0, %offA : tensor<32x32x!tile.ptr<f32>, #a>, tensor<32x32xi32, #a>
  tile.store %xa, %v : tensor<32x32x!tile.ptr<f32>, #a>
  %same = tile.load %xa : tensor<32x32x!tile.ptr<f32>, #a>
  %yb0 = tile.splat %y : tensor<32x32x!tile.ptr<f32>, #b>
  %yb = tile.addptr %yb0, %offB : tensor<32x32x!tile.ptr<f32>, #b>, tensor<32x32xi32, #b>
  %other = tile.load %yb : tensor<32x32x!tile.ptr<f32>, #b>
  %xb0 = tile.splat %x : tensor<32x32x!tile.ptr<f32>, #b>
  %xb = tile.addptr %xb0, %offB : tensor<32x32x!tile.ptr<f32>, #b>, tensor<32x32xi32, #b>
  %back = tile.load %xb : tensor<32x32x!tile.ptr<f32>, #b>
  return %same, %other, %back : tensor<32x32xf32, #a>, tensor<32x32xf32, #b>, tensor<32x32xf32, #b>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// In a loop: the store at the end of an iteration and the load at the start
// of the next (a pointer the loop advances from the argument) get a barrier
// before the load; a store after the loop's own barrier needs no second.
// CHECK-LABEL: func.func @across_iterations(
// CHECK:         scf.for
// CHECK-NEXT:      tilegpu.barrier
// CHECK-NEXT:      tile.load
// CHECK:           tile.store
// CHECK:         }
// CHECK-NOT:     tilegpu.barrier
// CHECK:         return
func.func @across_iterations(%x: !tile.ptr<f32>, %n: i32, %off: tensor<512xi32, #a>, %offB: tensor<512xi32, #b>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %xa0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #a>
  %xa = tile.addptr %xa0, %off : tensor<512x!tile.ptr<f32>, #a>, tensor<512xi32, #a>
  %xb0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #b>
  %xb = tile.addptr %xb0, %offB : tensor<512x!tile.ptr<f32>, #b>, tensor<512xi32, #b>
  %end = scf.for %i = %c0 to %n step %c1 iter_args(%p = %xb) -> (tensor<512x!tile.ptr<f32>, #b>) : i32 {
    %v = tile.load %p : tensor<512x!tile.ptr<f32>, #b>
    %w = tilegpu.convert_layout %v : tensor<512xf32, #b> -> tensor<512xf32, #a>
    tile.store %xa, %w : tensor<512x!tile.ptr<f32>, #a>
    %next = tile.addptr %p, %offB : tensor<512x!tile.ptr<f32>, #b>, tensor<512xi32, #b>
    scf.yield %next : tensor<512x!tile.ptr<f32>, #b>
  }
  return
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A scalar acq_rel atomic between them orders the program already (its
// lowering's barriers: a stream-K partial block, its arrival, the others'
// blocks read back); a relaxed one whose old value is unused does not.
// CHECK-LABEL: func.func @after_atomics(
// CHECK:         tile.atomic_rmw add
// CHECK-NEXT:    tile.load
// CHECK:         tile.atomic_rmw add
// CHECK-NEXT:    tilegpu.barrier
// CHECK-NEXT:    tile.load
func.func @after_atomics(%x: !tile.ptr<f32>, %flag: !tile.ptr<i32>, %off: tensor<512xi32, #a>,
                         %offB: tensor<512xi32, #b>, %v: tensor<512xf32, #a>) -> (tensor<512xf32, #b>, tensor<512xf32, #b>) {
  %one = arith.constant 1 : i32
  %xa0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #a>
  %xa = tile.addptr %xa0, %off : tensor<512x!tile.ptr<f32>, #a>, tensor<512xi32, #a>
  %xb0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #b>
  %xb = tile.addptr %xb0, %offB : tensor<512x!tile.ptr<f32>, #b>, tensor<512xi32, #b>
  tile.store %xa, %v : tensor<512x!tile.ptr<f32>, #a>
  %old = tile.atomic_rmw add, %flag, %one : !tile.ptr<i32>
  %r1 = tile.load %xb : tensor<512x!tile.ptr<f32>, #b>
  tile.store %xa, %v : tensor<512x!tile.ptr<f32>, #a>
  %old2 = tile.atomic_rmw add, %flag, %one sem = relaxed : !tile.ptr<i32>
  %r2 = tile.load %xb : tensor<512x!tile.ptr<f32>, #b>
  return %r1, %r2 : tensor<512xf32, #b>, tensor<512xf32, #b>
}

// -----

#s = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A scalar (stored by one thread, loaded by all) and a tile whose layout
// holds copies of its elements (32 elements over 128 threads: an owner
// stores, every copy loads) need the barrier even through one pointer.
// CHECK-LABEL: func.func @one_owner(
// CHECK:         tile.store
// CHECK-NEXT:    tilegpu.barrier
// CHECK-NEXT:    tile.load
// CHECK:         tile.store
// CHECK-NEXT:    tilegpu.barrier
// CHECK-NEXT:    tile.load
func.func @one_owner(%x: !tile.ptr<f32>, %v: f32, %off: tensor<32xi32, #s>, %t: tensor<32xf32, #s>) -> (f32, tensor<32xf32, #s>) {
  tile.store %x, %v : !tile.ptr<f32>
  %a = tile.load %x : !tile.ptr<f32>
  %p0 = tile.splat %x : tensor<32x!tile.ptr<f32>, #s>
  %p = tile.addptr %p0, %off : tensor<32x!tile.ptr<f32>, #s>, tensor<32xi32, #s>
  tile.store %p, %t : tensor<32x!tile.ptr<f32>, #s>
  %b = tile.load %p : tensor<32x!tile.ptr<f32>, #s>
  return %a, %b : f32, tensor<32xf32, #s>
}
