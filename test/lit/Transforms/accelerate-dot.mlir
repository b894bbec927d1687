// RUN: tegula-opt %s -split-input-file -accelerate-dot | FileCheck %s
// RUN: tegula-opt %s -split-input-file -accelerate-dot -allocate-shared-memory -lower-tilegpu-to-llvm | FileCheck %s --check-prefix=LLVM

// A bf16 dot with an f32 accumulator goes to tensor cores: the accumulator
// and result take an mma layout (4 warps on a 32x32 tile: 2 along M's
// 16-row blocks, 2 along N, the fewest operand elements per warp), the
// result goes back to the layout its users had. The 16-bit operands keep
// their layouts: the lowering stages them through swizzled shared memory
// and reads them with ldmatrix.
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-DAG: #[[MMA:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
// CHECK-LABEL: func.func @bf16
// CHECK-SAME: (%[[A:.*]]: tensor<32x32xbf16, #blocked>, %[[B:.*]]: tensor<32x32xbf16, #blocked>,
// CHECK:   %[[C2:.*]] = tilegpu.convert_layout %{{.*}} : tensor<32x32xf32, #blocked> -> tensor<32x32xf32, #[[MMA]]>
// CHECK:   %[[D:.*]] = tile.dot %[[A]], %[[B]], %[[C2]], ieee : tensor<32x32xbf16, #blocked> * tensor<32x32xbf16, #blocked> -> tensor<32x32xf32, #[[MMA]]>
// CHECK:   tilegpu.convert_layout %[[D]] : tensor<32x32xf32, #[[MMA]]> -> tensor<32x32xf32, #blocked>
// One thread's share of a 32x32x32 dot at 4 warps: one 16x8 tile per warp
// along each of N's 2 repeats, two k-steps: 4 mma.sync. The operands are
// stored as 8-byte vectors (4 bf16 a thread), then each k-slice reads its
// fragments (A: one ldmatrix.x4; B: one x4.trans covering both n-tiles,
// rows of B run along N) right before its two mma.sync.
// LLVM-LABEL: llvm.func @bf16
// LLVM-COUNT-2: st.shared.v2.b32
// LLVM: nvvm.barrier0
// LLVM: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// LLVM: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4
// LLVM-COUNT-2: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>
// LLVM: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// LLVM: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4
// LLVM-COUNT-2: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>
// LLVM-NOT: nvvm.mma.sync
  func.func @bf16(%a: tensor<32x32xbf16, #b>, %bb: tensor<32x32xbf16, #b>, %c: tensor<32x32xf32, #b>) -> tensor<32x32xf32, #b> {
    %d = tile.dot %a, %bb, %c, ieee : tensor<32x32xbf16, #b> * tensor<32x32xbf16, #b> -> tensor<32x32xf32, #b>
    return %d : tensor<32x32xf32, #b>
  }
}

// -----

// f32 operands stay on the FMA path (ieee is never tf32), as do shapes
// mma.sync does not tile (N = 4) and i8 dots whose K is not a multiple of 32.
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @stays
// CHECK-NOT: tilegpu.convert_layout
// CHECK-NOT: #tilegpu.mma
// CHECK: return
// LLVM-LABEL: llvm.func @stays
// LLVM-NOT: nvvm.mma.sync
// LLVM: llvm.return
  func.func @stays(%a: tensor<32x32xf32, #b>, %c: tensor<32x32xf32, #b>,
                   %h: tensor<32x16xf16, #b>, %n: tensor<16x4xf16, #b>, %c4: tensor<32x4xf32, #b>,
                   %i: tensor<32x16xi8, #b>, %i2: tensor<16x32xi8, #b>, %ci: tensor<32x32xi32, #b>) {
    %0 = tile.dot %a, %a, %c, ieee : tensor<32x32xf32, #b> * tensor<32x32xf32, #b> -> tensor<32x32xf32, #b>
    %1 = tile.dot %h, %n, %c4, ieee : tensor<32x16xf16, #b> * tensor<16x4xf16, #b> -> tensor<32x4xf32, #b>
    %2 = tile.dot %i, %i2, %ci, ieee : tensor<32x16xi8, #b> * tensor<16x32xi8, #b> -> tensor<32x32xi32, #b>
    return
  }
}

// -----

// A dot accumulating across a loop keeps its accumulator in the mma layout:
// the iter_arg takes it, converted once before the loop and once after,
// and the loop body converts only the operands.
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @loop
// CHECK:   %[[INIT:.*]] = tilegpu.convert_layout %{{.*}} : tensor<32x32xf32, #blocked> -> tensor<32x32xf32, #[[MMA:mma[0-9]*]]>
// CHECK:   %[[R:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (tensor<32x32xf32, #[[MMA]]>)
// CHECK-NOT:   tensor<32x32xf32, #blocked>
// CHECK:     %[[D:.*]] = tile.dot %{{.*}}, %{{.*}}, %[[ACC]], ieee
// CHECK:     scf.yield %[[D]] : tensor<32x32xf32, #[[MMA]]>
// CHECK:   tilegpu.convert_layout %[[R]] : tensor<32x32xf32, #[[MMA]]> -> tensor<32x32xf32, #blocked>
  func.func @loop(%a: tensor<32x32xbf16, #b>, %bb: tensor<32x32xbf16, #b>, %c: tensor<32x32xf32, #b>, %n: i32) -> tensor<32x32xf32, #b> {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (tensor<32x32xf32, #b>) : i32 {
      %d = tile.dot %a, %bb, %acc, ieee : tensor<32x32xbf16, #b> * tensor<32x32xbf16, #b> -> tensor<32x32xf32, #b>
      scf.yield %d : tensor<32x32xf32, #b>
    }
    return %r : tensor<32x32xf32, #b>
  }
}

// -----

// f32 operands at tf32 precision: m16n8k8. The operands keep their layouts
// and pass through shared memory like 16-bit ones: A's rows run along K, so
// ldmatrix reads them (two 16-bit halves per element, no .trans); B's run
// along N, so each element is one shared load. Each is rounded to tf32
// before the mma; tf32x3 issues three mma per instruction tile (lo*hi,
// hi*lo, hi*hi).
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @tf32
// CHECK-NOT: #dot_op
// CHECK: tile.dot {{.*}}, tf32 : tensor<32x16xf32, #blocked> * tensor<16x32xf32, #blocked> -> tensor<32x32xf32, #mma{{[0-9]*}}>
// CHECK: tile.dot {{.*}}, tf32x3 :
// LLVM-LABEL: llvm.func @tf32
// LLVM: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// LLVM: llvm.load {{.*}} : !llvm.ptr<3> -> i32
// LLVM-COUNT-4: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 8>
// LLVM-COUNT-12: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>
// LLVM-NOT: nvvm.mma.sync
  func.func @tf32(%a: tensor<32x16xf32, #b>, %bb: tensor<16x32xf32, #b>, %c: tensor<32x32xf32, #b>) {
    %0 = tile.dot %a, %bb, %c, tf32 : tensor<32x16xf32, #b> * tensor<16x32xf32, #b> -> tensor<32x32xf32, #b>
    %1 = tile.dot %a, %bb, %c, tf32x3 : tensor<32x16xf32, #b> * tensor<16x32xf32, #b> -> tensor<32x32xf32, #b>
    return
  }
}

// -----

// i8 x i8 -> i32: m16n8k32 (s8, wrapping), four operands to a register:
// A (rows along K) through ldmatrix, B (rows along N) byte by byte.
#b = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @int8
// CHECK: tile.dot {{.*}} : tensor<32x32xi8, #blocked> * tensor<32x32xi8, #blocked> -> tensor<32x32xi32, #mma{{[0-9]*}}>
// LLVM-LABEL: llvm.func @int8
// LLVM: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// LLVM: llvm.load {{.*}} : !llvm.ptr<3> -> i8
// LLVM-COUNT-2: nvvm.mma.sync {{.*}}intOverflowBehavior = #nvvm.mma_int_overflow<wrapped>{{.*}}multiplicandAPtxType = #nvvm.mma_type<s8>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 32>
// LLVM-NOT: nvvm.mma.sync
  func.func @int8(%a: tensor<32x32xi8, #b>, %bb: tensor<32x32xi8, #b>, %c: tensor<32x32xi32, #b>) -> tensor<32x32xi32, #b> {
    %d = tile.dot %a, %bb, %c, ieee : tensor<32x32xi8, #b> * tensor<32x32xi8, #b> -> tensor<32x32xi32, #b>
    return %d : tensor<32x32xi32, #b>
  }
}

// -----

// A dot chain (the second dot's A operand computed from the first dot's
// result, here through exp and a cast): both take warps along M only, where
// a lone 64x64 dot would split 2x2, so that the first accumulator is the
// second's A operand register for register. The first dot's A operand,
// loop-invariant, becomes fragments once before the loop.
#b = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-DAG: #[[M41:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [4, 1]}>
// CHECK-DAG: #[[QOP:dot_op[0-9]*]] = #tilegpu.dot_operand<{opIdx = 0, parent = #[[M41]], elementBits = 16}>
// CHECK-LABEL: func.func @chain
// CHECK:         %[[Q:.*]] = tilegpu.convert_layout %{{.*}} : tensor<64x64xbf16, #blocked> -> tensor<64x64xbf16, #[[QOP]]>
// CHECK:         scf.for
// CHECK:           tile.dot %[[Q]], {{.*}} -> tensor<64x64xf32, #[[M41]]>
// CHECK:           tile.dot {{.*}} -> tensor<64x64xf32, #[[M41]]>
// LLVM-LABEL: llvm.func @chain
// LLVM: nvvm.ldmatrix
// LLVM: llvm.br
// LLVM: nvvm.mma.sync
func.func @chain(%q: tensor<64x64xbf16, #b>, %k: tensor<64x64xbf16, #b>, %v: tensor<64x64xbf16, #b>, %n: i32) -> tensor<64x64xf32, #b> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #b>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32, #b>) : i32 {
    %s = tile.dot %q, %k, %zero, ieee : tensor<64x64xbf16, #b> * tensor<64x64xbf16, #b> -> tensor<64x64xf32, #b>
    %p = math.exp %s : tensor<64x64xf32, #b>
    %p16 = arith.truncf %p : tensor<64x64xf32, #b> to tensor<64x64xbf16, #b>
    %o = tile.dot %p16, %v, %acc, ieee : tensor<64x64xbf16, #b> * tensor<64x64xbf16, #b> -> tensor<64x64xf32, #b>
    scf.yield %o : tensor<64x64xf32, #b>
  }
  return %r : tensor<64x64xf32, #b>
}
}
