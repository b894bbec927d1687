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
// before the load; nothing after the loop needs another.
// CHECK-LABEL: func.func @across_iterations(
// CHECK:         scf.for
// CHECK-NEXT:      tilegpu.barrier
// CHECK-NEXT:      tile.load
// CHECK-NEXT:      tilegpu.convert_layout
// CHECK-NEXT:      tile.store
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
// CHECK-NEXT:    tile.store
// CHECK-NEXT:    tile.atomic_rmw add
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

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A scalar read-modify-write: every thread loads, the owner stores - after
// a barrier, or it may overwrite what the others have yet to read. Not for
// a tile in an injective layout through one pointer (an in-place update:
// each element one thread's), nor for stores into other parts of the
// buffer (taken not to overlap), nor for two stores through one pointer
// (one owner an element).
// CHECK-LABEL: func.func @write_after(
// CHECK:         tile.load %{{.*}} : !tile.ptr<f32>
// CHECK-NEXT:    arith.addf
// CHECK-NEXT:    tilegpu.barrier
// CHECK-NEXT:    tile.store %{{.*}} : !tile.ptr<f32>
// CHECK-NEXT:    tile.store %{{.*}} : !tile.ptr<f32>
// CHECK-NOT:     tilegpu.barrier
// CHECK:         return
func.func @write_after(%x: !tile.ptr<f32>, %s: !tile.ptr<f32>, %off: tensor<512xi32, #a>, %offB: tensor<512xi32, #b>,
                       %v: tensor<512xf32, #a>, %w: tensor<512xf32, #b>) {
  %one = arith.constant 1.0 : f32
  %c = tile.load %s : !tile.ptr<f32>
  %n = arith.addf %c, %one : f32
  tile.store %s, %n : !tile.ptr<f32>
  tile.store %s, %c : !tile.ptr<f32>
  %xa0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #a>
  %xa = tile.addptr %xa0, %off : tensor<512x!tile.ptr<f32>, #a>, tensor<512xi32, #a>
  %xb0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #b>
  %xb = tile.addptr %xb0, %offB : tensor<512x!tile.ptr<f32>, #b>, tensor<512xi32, #b>
  %same = tile.load %xa : tensor<512x!tile.ptr<f32>, #a>
  tile.store %xa, %same : tensor<512x!tile.ptr<f32>, #a>
  tile.store %xb, %w : tensor<512x!tile.ptr<f32>, #b>
  return
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// One pointer tile, but made in the loop (advanced each iteration): the
// store of one iteration and the load of the next reach different
// addresses through it, possibly other threads' - a barrier before the
// load. Through a pointer made before the loop, one thread does both.
// CHECK-LABEL: func.func @moving_pointer(
// CHECK:         scf.for
// CHECK-NEXT:      tilegpu.barrier
// CHECK-NEXT:      tile.load
// CHECK-NEXT:      tile.store
// CHECK:         scf.for
// CHECK-NEXT:      tile.load
// CHECK-NEXT:      tile.store
// CHECK-NOT:     tilegpu.barrier
// CHECK:         return
func.func @moving_pointer(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: i32, %off: tensor<512xi32, #a>,
                          %step: tensor<512xi32, #a>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %xa0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #a>
  %xa = tile.addptr %xa0, %off : tensor<512x!tile.ptr<f32>, #a>, tensor<512xi32, #a>
  %end = scf.for %i = %c0 to %n step %c1 iter_args(%p = %xa) -> (tensor<512x!tile.ptr<f32>, #a>) : i32 {
    %v = tile.load %p : tensor<512x!tile.ptr<f32>, #a>
    tile.store %p, %v : tensor<512x!tile.ptr<f32>, #a>
    %next = tile.addptr %p, %step : tensor<512x!tile.ptr<f32>, #a>, tensor<512xi32, #a>
    scf.yield %next : tensor<512x!tile.ptr<f32>, #a>
  }
  %ya0 = tile.splat %y : tensor<512x!tile.ptr<f32>, #a>
  %ya = tile.addptr %ya0, %off : tensor<512x!tile.ptr<f32>, #a>, tensor<512xi32, #a>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %v = tile.load %ya : tensor<512x!tile.ptr<f32>, #a>
    tile.store %ya, %v : tensor<512x!tile.ptr<f32>, #a>
  }
  return
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// The arms of an if do not see each other's stores (only one runs); after
// the if, the accesses of either are pending. The producer side of a warp-specialised kernel is not
// walked (its threads do not meet the consumers' barrier).
// CHECK-LABEL: func.func @arms(
// CHECK:         scf.if
// CHECK-NEXT:      tile.store
// CHECK-NEXT:    } else {
// CHECK-NEXT:      tile.load
// CHECK-NEXT:    }
// CHECK-NEXT:    tilegpu.barrier
// CHECK-NEXT:    tile.load
// CHECK-NEXT:    tile.store
// CHECK-NEXT:    tilegpu.is_producer_warp
// CHECK-NEXT:    scf.if
// CHECK-NEXT:      tile.store
// CHECK-NEXT:      tile.load
// CHECK-NEXT:    } else {
// CHECK-NEXT:      tilegpu.barrier
// CHECK-NEXT:      tile.load
func.func @arms(%x: !tile.ptr<f32>, %c: i1, %off: tensor<512xi32, #a>, %offB: tensor<512xi32, #b>,
                %v: tensor<512xf32, #a>) {
  %xa0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #a>
  %xa = tile.addptr %xa0, %off : tensor<512x!tile.ptr<f32>, #a>, tensor<512xi32, #a>
  %xb0 = tile.splat %x : tensor<512x!tile.ptr<f32>, #b>
  %xb = tile.addptr %xb0, %offB : tensor<512x!tile.ptr<f32>, #b>, tensor<512xi32, #b>
  scf.if %c {
    tile.store %xa, %v : tensor<512x!tile.ptr<f32>, #a>
  } else {
    %w = tile.load %xb : tensor<512x!tile.ptr<f32>, #b>
  }
  %r = tile.load %xb : tensor<512x!tile.ptr<f32>, #b>
  tile.store %xa, %v : tensor<512x!tile.ptr<f32>, #a>
  %producer = tilegpu.is_producer_warp
  scf.if %producer {
    tile.store %xa, %v : tensor<512x!tile.ptr<f32>, #a>
    %u = tile.load %xb : tensor<512x!tile.ptr<f32>, #b>
  } else {
    %u = tile.load %xb : tensor<512x!tile.ptr<f32>, #b>
  }
  return
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>

// TMA (descriptor accesses use-tma marked). A TMA store writes the tensor
// at some moment until the leader waits for its writes: a later load of the
// buffer - even through the same descriptor, and after a barrier - waits
// for them (tma_store_wait {writes}) and a barrier; one of another buffer
// does not. A TMA load sees the threads' ordinary stores only after they
// fence the async proxy: the barrier before it fences first.
// CHECK-LABEL: func.func @tma_store_then_load(
// CHECK:         tile.descriptor_store %[[D:[0-9]+]]
// CHECK-NEXT:    tilegpu.barrier
// CHECK-NOT:     tilegpu.
// CHECK:         tile.load %
// CHECK-NEXT:    tilegpu.tma_store_wait {writes}
// CHECK-NEXT:    tilegpu.barrier{{$}}
// CHECK-NEXT:    tile.descriptor_load %[[D]]
// CHECK-NOT:     tilegpu.barrier
// CHECK:         tile.store
// CHECK-NEXT:    tilegpu.barrier {fenceAsyncProxy}
// CHECK-NEXT:    tile.descriptor_load %[[D]]
// CHECK:         return
func.func @tma_store_then_load(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %off: tensor<32x32xi32, #a>,
                               %v: tensor<32x32xf32, #a>) -> (tensor<32x32xf32, #a>, tensor<32x32xf32, #a>, tensor<32x32xf32, #a>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i64
  %c32 = arith.constant 32 : i64
  %d = tile.make_tensor_descriptor %x, [%c32, %c32], [%c32, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<32x32xf32>>
  tile.descriptor_store %d[%c0, %c0], %v {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>>, tensor<32x32xf32, #a>
  tilegpu.barrier
  %y0 = tile.splat %y : tensor<32x32x!tile.ptr<f32>, #a>
  %ya = tile.addptr %y0, %off : tensor<32x32x!tile.ptr<f32>, #a>, tensor<32x32xi32, #a>
  %other = tile.load %ya : tensor<32x32x!tile.ptr<f32>, #a>
  %back = tile.descriptor_load %d[%c0, %c0] {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>> -> tensor<32x32xf32, #a>
  %x0 = tile.splat %x : tensor<32x32x!tile.ptr<f32>, #a>
  %xa = tile.addptr %x0, %off : tensor<32x32x!tile.ptr<f32>, #a>, tensor<32x32xi32, #a>
  tile.store %xa, %v : tensor<32x32x!tile.ptr<f32>, #a>
  %again = tile.descriptor_load %d[%c0, %c0] {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>> -> tensor<32x32xf32, #a>
  return %other, %back, %again : tensor<32x32xf32, #a>, tensor<32x32xf32, #a>, tensor<32x32xf32, #a>
}

// -----

#a = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #tilegpu.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>

// A barrier orders the threads, not the async proxy: after the barrier a
// read-back in another layout needs, the threads' stores still need their
// fence before a TMA load of the buffer; and a TMA store still pending
// then (the barrier does not order its writes) is waited for before its
// own buffer's load. In a loop the wait comes once per iteration.
// CHECK-LABEL: func.func @barriers_and_the_async_proxy(
// CHECK:         tile.descriptor_store %[[DY:[0-9]+]]
// CHECK:         tile.store
// CHECK:         tilegpu.barrier{{$}}
// CHECK-NEXT:    tile.load {{.*}}#blocked1>
// CHECK-NEXT:    tilegpu.barrier {fenceAsyncProxy}
// CHECK-NEXT:    tile.descriptor_load %[[DX:[0-9]+]]
// CHECK-NEXT:    tilegpu.tma_store_wait {writes}
// CHECK-NEXT:    tilegpu.barrier{{$}}
// CHECK-NEXT:    tile.descriptor_load %[[DY]]
// CHECK:         scf.for
// CHECK:           tile.descriptor_store %[[DY]]
// CHECK-NEXT:      tilegpu.tma_store_wait {writes}
// CHECK-NEXT:      tilegpu.barrier{{$}}
// CHECK-NEXT:      tile.descriptor_load %[[DY]]
// CHECK-NOT:       tilegpu.tma_store_wait
// CHECK:           scf.yield
func.func @barriers_and_the_async_proxy(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %offA: tensor<32x32xi32, #a>,
                                        %offB: tensor<32x32xi32, #b>, %v: tensor<32x32xf32, #a>, %n: i32)
    -> (tensor<32x32xf32, #b>, tensor<32x32xf32, #a>, tensor<32x32xf32, #a>, tensor<32x32xf32, #a>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1 : i64
  %c32 = arith.constant 32 : i64
  %dx = tile.make_tensor_descriptor %x, [%c32, %c32], [%c32, %one] : !tile.ptr<f32> -> !tile.tensordesc<tensor<32x32xf32>>
  %dy = tile.make_tensor_descriptor %y, [%c32, %c32], [%c32, %one] : !tile.ptr<f32> -> !tile.tensordesc<tensor<32x32xf32>>
  tile.descriptor_store %dy[%c0, %c0], %v {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>>, tensor<32x32xf32, #a>
  %xa0 = tile.splat %x : tensor<32x32x!tile.ptr<f32>, #a>
  %xa = tile.addptr %xa0, %offA : tensor<32x32x!tile.ptr<f32>, #a>, tensor<32x32xi32, #a>
  tile.store %xa, %v : tensor<32x32x!tile.ptr<f32>, #a>
  %xb0 = tile.splat %x : tensor<32x32x!tile.ptr<f32>, #b>
  %xb = tile.addptr %xb0, %offB : tensor<32x32x!tile.ptr<f32>, #b>, tensor<32x32xi32, #b>
  %back = tile.load %xb : tensor<32x32x!tile.ptr<f32>, #b>
  %tx = tile.descriptor_load %dx[%c0, %c0] {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>> -> tensor<32x32xf32, #a>
  %ty = tile.descriptor_load %dy[%c0, %c0] {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>> -> tensor<32x32xf32, #a>
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v) -> (tensor<32x32xf32, #a>) : i32 {
    tile.descriptor_store %dy[%c0, %c0], %acc {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>>, tensor<32x32xf32, #a>
    %r = tile.descriptor_load %dy[%c0, %c0] {tilegpu.tma} : !tile.tensordesc<tensor<32x32xf32>> -> tensor<32x32xf32, #a>
    scf.yield %r : tensor<32x32xf32, #a>
  }
  return %back, %tx, %ty, %last : tensor<32x32xf32, #b>, tensor<32x32xf32, #a>, tensor<32x32xf32, #a>, tensor<32x32xf32, #a>
}
