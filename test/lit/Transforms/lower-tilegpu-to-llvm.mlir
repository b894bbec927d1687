// RUN: tegula-opt %s -split-input-file --lower-tilegpu-to-llvm | FileCheck %s

// A 256-element tile over 4 warps x 32 lanes: 2 registers per thread.
// Registers hold elements tid and tid + 128; masked accesses are predicated
// PTX with the `other` value moved in first.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @scale(
  // CHECK-SAME:    %[[X:.*]]: !llvm.ptr<1>, %[[N:.*]]: i32)
  // CHECK-SAME:    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}
  // CHECK-DAG:     nvvm.read.ptx.sreg.tid.x : i32
  // CHECK-DAG:     nvvm.read.ptx.sreg.ctaid.x : i32
  // CHECK-COUNT-2: llvm.getelementptr %[[X]]
  // CHECK-COUNT-2: llvm.inline_asm has_side_effects "mov.b32 $0, $3;\0A\09@$2 ld.global.b32 $0, [ $1 + 0 ];", "=r,l,b,r"
  // CHECK-COUNT-2: llvm.fmul {{.*}} : f32
  // CHECK-COUNT-2: llvm.inline_asm has_side_effects "@$2 st.global.b32 [ $0 + 0 ], $1;", "l,r,b"
  // CHECK-NOT:     tile.
  func.func @scale(%x: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
    %pid = tile.program_id x
    %c256 = arith.constant 256 : i32
    %base = arith.muli %pid, %c256 : i32
    %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32, #b>
    %bs = tile.splat %base : tensor<256xi32, #b>
    %offs = arith.addi %bs, %r : tensor<256xi32, #b>
    %ns = tile.splat %n : tensor<256xi32, #b>
    %m = arith.cmpi slt, %offs, %ns : tensor<256xi32, #b>
    %xs = tile.splat %x : tensor<256x!tile.ptr<f32>, #b>
    %p = tile.addptr %xs, %offs : tensor<256x!tile.ptr<f32>, #b>, tensor<256xi32, #b>
    %zero = arith.constant dense<0.0> : tensor<256xf32, #b>
    %v = tile.load %p, %m, %zero : tensor<256x!tile.ptr<f32>, #b>
    %two = arith.constant dense<2.0> : tensor<256xf32, #b>
    %s = arith.mulf %v, %two : tensor<256xf32, #b>
    tile.store %p, %s, %m : tensor<256x!tile.ptr<f32>, #b>
    return
  }
}

// -----

// 32 elements over 128 threads: warps 1..3 hold copies of warp 0's data and
// must not store them: the store is predicated on warp bits being zero.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @small(
  // CHECK:         %[[WBITS:.*]] = llvm.shl %{{.*}}, %{{.*}} : i32
  // CHECK:         %[[ANY:.*]] = llvm.or %{{.*}}, %[[WBITS]] : i32
  // CHECK:         %[[OWNS:.*]] = llvm.icmp "eq" %[[ANY]]
  // CHECK-NEXT:    llvm.inline_asm has_side_effects "@$2 st.global.b32 [ $0 + 0 ], $1;", "l,r,b" %{{.*}}, %{{.*}}, %[[OWNS]]
  func.func @small(%x: !tile.ptr<i32>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #b>
    %xs = tile.splat %x : tensor<32x!tile.ptr<i32>, #b>
    %p = tile.addptr %xs, %r : tensor<32x!tile.ptr<i32>, #b>, tensor<32xi32, #b>
    tile.store %p, %r : tensor<32x!tile.ptr<i32>, #b>
    return
  }
}


// -----

// A reduction across warps keeps its partials at the offset
// allocate-shared-memory gave it, in the module's one shared global of
// tilegpu.shared_bytes: a barrier before the writes (earlier users of those
// bytes are done), one before the reads, none after (the next user begins
// with its own).
#r = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
#rs = #tilegpu.slice<{dim = 1, parent = #r}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 80 : i32} {
  // CHECK: llvm.mlir.global internal @tegula_scratch() {addr_space = 3 : i32, alignment = 1024 : i64{{.*}}} : !llvm.array<80 x i8>
  // CHECK-LABEL: llvm.func @at_offset(
  // CHECK:         %[[BASE:.*]] = llvm.mlir.addressof @tegula_scratch : !llvm.ptr<3>
  // CHECK:         %[[BUF:.*]] = llvm.getelementptr %[[BASE]][16] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // CHECK:         nvvm.barrier0
  // CHECK:         llvm.getelementptr %[[BUF]]
  // CHECK:         st.shared.b32
  // CHECK:         nvvm.barrier0
  // CHECK:         llvm.load
  // CHECK-NOT:     nvvm.barrier0
  // CHECK:         llvm.return
  func.func @at_offset(%a: tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    %s = tile.reduce(%a) {axis = 1 : i32, tilegpu.shared_offset = 16 : i32} : (tensor<4x512xf32, #r>) -> tensor<4xf32, #rs> {
    ^bb0(%x: f32, %y: f32):
      %sum = arith.addf %x, %y : f32
      tile.reduce.return %sum : f32
    }
    return %s : tensor<4xf32, #rs>
  }
}

// -----

// Column sums of a tile whose rows run over lanes and warps (8 columns a
// thread, 8 lanes and 4 warps along the rows - an accumulator's column sums):
// the partials go through shared memory anyway, so the 8 lanes along the
// axis split each thread's 8 columns between them instead of each summing
// all 8 (reduce-scatter): 4 + 2 + 1 shuffles, not 8 x 3, and each lane
// writes the one column it ends with.
#c = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#cs = #tilegpu.slice<{dim = 0, parent = #c}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 512 : i32} {
  // CHECK-LABEL: llvm.func @column_sums(
  // CHECK-COUNT-7: nvvm.shfl.sync bfly
  // CHECK-NOT:     nvvm.shfl.sync
  // CHECK:         nvvm.barrier0
  // CHECK:         st.shared.b32
  // CHECK-NOT:     st.shared
  // CHECK:         nvvm.barrier0
  // CHECK-COUNT-32: llvm.load
  // CHECK:         llvm.return
  func.func @column_sums(%a: tensor<32x32xf32, #c>) -> tensor<32xf32, #cs> {
    %s = tile.reduce(%a) {axis = 0 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<32x32xf32, #c>) -> tensor<32xf32, #cs> {
    ^bb0(%x: f32, %y: f32):
      %sum = arith.addf %x, %y : f32
      tile.reduce.return %sum : f32
    }
    return %s : tensor<32xf32, #cs>
  }
}

// -----

// f32 -> bf16 two registers at a time where the result leaves its block (into
// the loop, round it): one vector fptrunc a pair, which carry-packed-pairs
// then carries whole. The conversion before the store stays in its block and
// stays scalar (instruction selection pairs it next to its pack).
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @carried(
  // CHECK:         llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
  // CHECK:         llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xf16>
  // CHECK:         llvm.br ^bb1(
  // CHECK:         llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
  // CHECK:         llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xf16>
  // CHECK-COUNT-2: llvm.fptrunc %{{.*}} : f32 to bf16
  // CHECK-NOT:     llvm.fptrunc
  func.func @carried(%x: !tile.ptr<bf16>, %n: i32) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32, #b>
    %f = arith.sitofp %r : tensor<256xi32, #b> to tensor<256xf32, #b>
    %init = arith.truncf %f : tensor<256xf32, #b> to tensor<256xbf16, #b>
    %init16 = arith.truncf %f : tensor<256xf32, #b> to tensor<256xf16, #b>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %res:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init, %h = %init16) -> (tensor<256xbf16, #b>, tensor<256xf16, #b>) : i32 {
      %w = arith.extf %acc : tensor<256xbf16, #b> to tensor<256xf32, #b>
      %w2 = arith.addf %w, %f : tensor<256xf32, #b>
      %t = arith.truncf %w2 : tensor<256xf32, #b> to tensor<256xbf16, #b>
      %t16 = arith.truncf %w2 : tensor<256xf32, #b> to tensor<256xf16, #b>
      scf.yield %t, %t16 : tensor<256xbf16, #b>, tensor<256xf16, #b>
    }
    %out = arith.extf %res#0 : tensor<256xbf16, #b> to tensor<256xf32, #b>
    %out16 = arith.extf %res#1 : tensor<256xf16, #b> to tensor<256xf32, #b>
    %o2 = arith.mulf %out, %out16 : tensor<256xf32, #b>
    %last = arith.truncf %o2 : tensor<256xf32, #b> to tensor<256xbf16, #b>
    %xs = tile.splat %x : tensor<256x!tile.ptr<bf16>, #b>
    %p = tile.addptr %xs, %r : tensor<256x!tile.ptr<bf16>, #b>, tensor<256xi32, #b>
    tile.store %p, %last : tensor<256x!tile.ptr<bf16>, #b>
    return
  }
}

// -----

// f32 exp2 is ex2.approx.ftz (one MUFU.EX2; libdevice's exp2f is the same
// approximation keeping subnormal results, at three more instructions), for
// a tile's every register and for a scalar; f64 stays libdevice's.
#b = #tilegpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @exp2s(
  // CHECK-COUNT-2: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%{{.*}}) : (f32) -> f32
  // CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%{{.*}}) : (f32) -> f32
  // CHECK:         llvm.call @__nv_exp2(%{{.*}}) : (f64) -> f64
  // CHECK-NOT:     __nv_exp2f
  func.func @exp2s(%x: !tile.ptr<f32>, %s: f32, %d: f64, %y: !tile.ptr<f64>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32, #b>
    %f = arith.sitofp %r : tensor<256xi32, #b> to tensor<256xf32, #b>
    %e = math.exp2 %f : tensor<256xf32, #b>
    %xs = tile.splat %x : tensor<256x!tile.ptr<f32>, #b>
    %p = tile.addptr %xs, %r : tensor<256x!tile.ptr<f32>, #b>, tensor<256xi32, #b>
    tile.store %p, %e : tensor<256x!tile.ptr<f32>, #b>
    %es = math.exp2 %s : f32
    tile.store %x, %es : !tile.ptr<f32>
    %ed = math.exp2 %d : f64
    tile.store %y, %ed : !tile.ptr<f64>
    return
  }
}

// -----

// tl::tanh_approx (an afn math.tanh, f32) is llvm.tanh.f32 marked afn, which
// NVPTX selects as tanh.approx.f32, register by register; a plain tanh and
// f64 stay libdevice's.
#t = #tilegpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @tangents(
  // CHECK-COUNT-2: llvm.call_intrinsic "llvm.tanh.f32"(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
  // CHECK:         llvm.call @__nv_tanhf(%{{.*}}) : (f32) -> f32
  // CHECK:         llvm.call @__nv_tanh(%{{.*}}) : (f64) -> f64
  func.func @tangents(%x: !tile.ptr<f32>, %s: f32, %d: f64, %y: !tile.ptr<f64>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32, #t>
    %f = arith.sitofp %r : tensor<256xi32, #t> to tensor<256xf32, #t>
    %e = math.tanh %f fastmath<afn> : tensor<256xf32, #t>
    %xs = tile.splat %x : tensor<256x!tile.ptr<f32>, #t>
    %p = tile.addptr %xs, %r : tensor<256x!tile.ptr<f32>, #t>, tensor<256xi32, #t>
    tile.store %p, %e : tensor<256x!tile.ptr<f32>, #t>
    %es = math.tanh %s : f32
    tile.store %x, %es : !tile.ptr<f32>
    %ed = math.tanh %d fastmath<afn> : f64
    tile.store %y, %ed : !tile.ptr<f64>
    return
  }
}

// -----

// tl::fdiv (afn) is div.full.f32; tl::rcp (afn arcp) is rcp.approx.ftz.f32
// times the numerator, register by register; a plain f32 divf and f64 stay
// IEEE division.
#q = #tilegpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @quotients(
  // CHECK-COUNT-2: llvm.call_intrinsic "llvm.nvvm.div.full"(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
  // CHECK:         %[[R0:.*]] = llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%{{.*}}) : (f32) -> f32
  // CHECK:         llvm.fmul %{{.*}}, %[[R0]]
  // CHECK:         %[[R1:.*]] = llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%{{.*}}) : (f32) -> f32
  // CHECK:         llvm.fmul %{{.*}}, %[[R1]]
  // CHECK-COUNT-2: llvm.fdiv %{{.*}}, %{{.*}} : f32
  // CHECK:         llvm.fdiv %{{.*}}, %{{.*}} : f64
  // CHECK-NOT:     rcp.approx
  func.func @quotients(%x: !tile.ptr<f32>, %d: f64, %y: !tile.ptr<f64>) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32, #q>
    %f = arith.sitofp %r : tensor<256xi32, #q> to tensor<256xf32, #q>
    %one = arith.constant dense<1.0> : tensor<256xf32, #q>
    %a = arith.divf %f, %f fastmath<afn> : tensor<256xf32, #q>
    %b = arith.divf %one, %a fastmath<afn,arcp> : tensor<256xf32, #q>
    %c = arith.divf %b, %f : tensor<256xf32, #q>
    %xs = tile.splat %x : tensor<256x!tile.ptr<f32>, #q>
    %p = tile.addptr %xs, %r : tensor<256x!tile.ptr<f32>, #q>, tensor<256xi32, #q>
    tile.store %p, %c : tensor<256x!tile.ptr<f32>, #q>
    %dd = arith.divf %d, %d fastmath<afn,arcp> : f64
    tile.store %y, %dd : !tile.ptr<f64>
    return
  }
}

// -----

// A scan along 512 elements a row over 4 warps (ordered: 4 a thread, 32
// lanes, 4 warps): each thread scans its 4 registers, the lanes 5 rounds of
// indexed shuffles and one more for the lane before, the warps' totals go
// through shared memory between two barriers.
#s = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32, tilegpu.shared_bytes = 64 : i32} {
  // CHECK-LABEL: llvm.func @scan_rows(
  // CHECK-COUNT-6: nvvm.shfl.sync idx
  // CHECK:         nvvm.barrier0
  // CHECK:         st.shared.b32
  // CHECK:         nvvm.barrier0
  // CHECK:         llvm.load
  // CHECK:         llvm.return
  func.func @scan_rows(%a: tensor<4x512xf32, #s>) -> tensor<4x512xf32, #s> {
    %r = tile.scan(%a) {axis = 1 : i32, tilegpu.shared_offset = 0 : i32} : (tensor<4x512xf32, #s>) -> tensor<4x512xf32, #s> {
    ^bb0(%x: f32, %y: f32):
      %sum = arith.addf %x, %y : f32
      tile.reduce.return %sum : f32
    }
    return %r : tensor<4x512xf32, #s>
  }
}

// -----

// Cache hints become PTX qualifiers: a cache operator after the state space,
// an eviction priority as L1's qualifier and an L2 policy register made by
// createpolicy (PTX's .L2::evict_* qualifiers are for 256-bit accesses),
// volatile before it. Unmasked hinted accesses are asm statements too.
#b = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @cache_hints(
  // CHECK: ld.global.cg.v4.b32
  // CHECK: createpolicy.fractional.L2::evict_last.b64 %tegula_policy, 1.0;
  // CHECK-SAME: @$5 ld.global.L1::evict_last.L2::cache_hint.v4.b32 {$0, $1, $2, $3}, [ $4 + 0 ], %tegula_policy;
  // CHECK: ld.volatile.global.b32
  // CHECK: st.global.cs.v4.b32
  // CHECK: createpolicy.fractional.L2::evict_first.b64 %tegula_policy, 1.0;
  // CHECK-SAME: st.global.L1::evict_first.L2::cache_hint.v4.b32
  // CHECK: st.volatile.global.b32
  func.func @cache_hints(%x: !tile.ptr<f32>, %flag: !tile.ptr<i32>, %n: i32) attributes {tile.kernel} {
    %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32, #b>
    %ns = tile.splat %n : tensor<512xi32, #b>
    %m = arith.cmpi slt, %r, %ns : tensor<512xi32, #b>
    %xs = tile.splat %x : tensor<512x!tile.ptr<f32>, #b>
    %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>, #b>, tensor<512xi32, #b>
    %zero = arith.constant dense<0.0> : tensor<512xf32, #b>
    %a = tile.load %p, %m, %zero cache = cg {tilegpu.vector_width = 4 : i32, tilegpu.vector_dim = 0 : i32} : tensor<512x!tile.ptr<f32>, #b>
    %c = tile.load %p evict = evict_last {tilegpu.vector_width = 4 : i32, tilegpu.vector_dim = 0 : i32} : tensor<512x!tile.ptr<f32>, #b>
    %f = tile.load %flag volatile : !tile.ptr<i32>
    %s = arith.addf %a, %c : tensor<512xf32, #b>
    tile.store %p, %s, %m cache = cs {tilegpu.vector_width = 4 : i32, tilegpu.vector_dim = 0 : i32} : tensor<512x!tile.ptr<f32>, #b>
    tile.store %p, %s evict = evict_first {tilegpu.vector_width = 4 : i32, tilegpu.vector_dim = 0 : i32} : tensor<512x!tile.ptr<f32>, #b>
    tile.store %flag, %f volatile : !tile.ptr<i32>
    return
  }
}
