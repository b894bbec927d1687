// RUN: tegula-opt %s --convert-tile-to-tilegpu=num-warps=4 --canonicalize --accelerate-dot --remove-layout-conversions --cse --coalesce --pipeline-dot-operands=num-stages=3 | FileCheck %s

// Attention's chained dots at tf32 (GPT-2's f32 attention): the loop-
// invariant A (q) is read into its fragments once; the second dot's A, an
// accumulator computed in the loop whose registers are not tf32's A
// fragments, moves into them by a conversion of its own (accelerate-dot),
// so each dot takes A from registers and B alone from a cp.async ring
// (dot_shared_b), 16-bit or not.
// CHECK-LABEL: func.func @chained_tf32
// CHECK:     %[[Q:.*]] = tilegpu.convert_layout %{{.*}} -> tensor<32x32xf32, #dot_op>
// CHECK:     %[[K:.*]] = tilegpu.alloc_shared : <3 x[32, 32] x f32
// CHECK:     %[[V:.*]] = tilegpu.alloc_shared : <3 x[32, 32] x f32
// CHECK:     scf.for
// CHECK-NOT:   tile.load
// CHECK:       %[[S:.*]] = tilegpu.dot_shared_b %[[Q]], %[[K]][%{{.*}}], %{{.*}} {precision = 1 : i32, transposeB}
// CHECK:       tilegpu.convert_layout %[[S]] : tensor<32x32xf32, #mma> -> tensor<32x32xf32, #dot_op>
// CHECK:       tilegpu.dot_shared_b %{{.*}}, %[[V]][%{{.*}}], %{{.*}} {precision = 1 : i32}
// A block two dots read in different orders (q in the backward's dkdv, k in
// dq): 32-bit fragments are read one ld.shared an element from any
// placement, so one ring in the first use's swizzle serves both.
// CHECK-LABEL: func.func @shared_tf32
// CHECK:     %[[X:.*]] = tilegpu.alloc_shared : <3 x[32, 32] x f32
// CHECK-NOT: tilegpu.alloc_shared
// CHECK:     scf.for
// CHECK-NOT:   tile.load
// CHECK:       tilegpu.dot_shared_b %{{.*}}, %[[X]][%[[STAGE:.*]]], %{{.*}} {precision = 1 : i32, transposeB}
// CHECK:       tilegpu.dot_shared_b %{{.*}}, %[[X]][%[[STAGE]]], %{{.*}} {precision = 1 : i32}
module {
  func.func @chained_tf32(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "q"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "kv"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "o"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "T"}) attributes {tile.kernel} {
    %cst = arith.constant dense<64> : tensor<32x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<32x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
    %c32_i32 = arith.constant 32 : i32
    %0 = tile.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %2 = tile.expand_dims %0 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %3 = arith.muli %2, %cst_0 : tensor<32x1xi32>
    %4 = tile.splat %arg0 : tensor<32x1x!tile.ptr<f32>>
    %5 = tile.addptr %4, %3 : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
    %6 = tile.broadcast %5 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x32x!tile.ptr<f32>>
    %7 = tile.broadcast %1 : tensor<1x32xi32> -> tensor<32x32xi32>
    %8 = tile.addptr %6, %7 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
    %9 = tile.load %8 : tensor<32x32x!tile.ptr<f32>>
    %10 = scf.for %arg4 = %c0_i32 to %arg3 step %c32_i32 iter_args(%arg5 = %cst_1) -> (tensor<32x32xf32>)  : i32 {
      %15 = tile.splat %arg4 : tensor<32xi32>
      %16 = arith.addi %15, %0 : tensor<32xi32>
      %17 = tile.expand_dims %16 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %18 = arith.muli %17, %cst : tensor<32x1xi32>
      %19 = tile.splat %arg1 : tensor<32x1x!tile.ptr<f32>>
      %20 = tile.addptr %19, %18 : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
      %21 = tile.broadcast %20 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x32x!tile.ptr<f32>>
      %22 = tile.addptr %21, %7 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
      %23 = tile.load %22 : tensor<32x32x!tile.ptr<f32>>
      %24 = tile.trans %23 {order = array<i32: 1, 0>} : tensor<32x32xf32> -> tensor<32x32xf32>
      %25 = tile.dot %9, %24, %cst_1, tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
      %26 = tile.addptr %20, %cst_0 : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
      %27 = tile.broadcast %26 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x32x!tile.ptr<f32>>
      %28 = tile.addptr %27, %7 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
      %29 = tile.load %28 : tensor<32x32x!tile.ptr<f32>>
      %30 = math.exp2 %25 : tensor<32x32xf32>
      %31 = tile.dot %30, %29, %arg5, tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
      scf.yield %31 : tensor<32x32xf32>
    }
    %11 = tile.splat %arg2 : tensor<32x1x!tile.ptr<f32>>
    %12 = tile.addptr %11, %3 : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
    %13 = tile.broadcast %12 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x32x!tile.ptr<f32>>
    %14 = tile.addptr %13, %7 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
    tile.store %14, %10 : tensor<32x32x!tile.ptr<f32>>
    return
  }
  func.func @shared_tf32(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "q"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "kv"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "o"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "T"}) attributes {tile.kernel} {
    %cst = arith.constant dense<32> : tensor<32x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
    %c32_i32 = arith.constant 32 : i32
    %0 = tile.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %2 = tile.expand_dims %0 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %3 = arith.muli %2, %cst : tensor<32x1xi32>
    %4 = tile.splat %arg0 : tensor<32x1x!tile.ptr<f32>>
    %5 = tile.addptr %4, %3 : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
    %6 = tile.broadcast %5 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x32x!tile.ptr<f32>>
    %7 = tile.broadcast %1 : tensor<1x32xi32> -> tensor<32x32xi32>
    %8 = tile.addptr %6, %7 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
    %9 = tile.load %8 : tensor<32x32x!tile.ptr<f32>>
    %10 = scf.for %arg4 = %c0_i32 to %arg3 step %c32_i32 iter_args(%arg5 = %cst_0) -> (tensor<32x32xf32>)  : i32 {
      %15 = tile.splat %arg4 : tensor<32xi32>
      %16 = arith.addi %15, %0 : tensor<32xi32>
      %17 = tile.expand_dims %16 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %18 = arith.muli %17, %cst : tensor<32x1xi32>
      %19 = tile.splat %arg1 : tensor<32x1x!tile.ptr<f32>>
      %20 = tile.addptr %19, %18 : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
      %21 = tile.broadcast %20 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x32x!tile.ptr<f32>>
      %22 = tile.addptr %21, %7 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
      %23 = tile.load %22 : tensor<32x32x!tile.ptr<f32>>
      %24 = tile.trans %23 {order = array<i32: 1, 0>} : tensor<32x32xf32> -> tensor<32x32xf32>
      %25 = tile.dot %9, %24, %cst_0, tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
      %26 = math.exp2 %25 : tensor<32x32xf32>
      %27 = tile.dot %26, %23, %arg5, tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
      scf.yield %27 : tensor<32x32xf32>
    }
    %11 = tile.splat %arg2 : tensor<32x1x!tile.ptr<f32>>
    %12 = tile.addptr %11, %3 : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
    %13 = tile.broadcast %12 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x32x!tile.ptr<f32>>
    %14 = tile.addptr %13, %7 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
    tile.store %14, %10 : tensor<32x32x!tile.ptr<f32>>
    return
  }
}
