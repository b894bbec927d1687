// RUN: tegula-opt %s -split-input-file -propagate-mma-layout | FileCheck %s
// RUN: tegula-opt %s -split-input-file -propagate-mma-layout -remove-layout-conversions -canonicalize | FileCheck %s --check-prefix=CLEAN

// A stream-K tile's partial block and fixup: the f32 accumulator is stored
// from its own layout (its addresses and mask recomputed there), the loop
// adding the other programs' partial blocks carries the sum in the mma
// layout and loads them there, and the f32 result is stored from it too -
// no shared-memory conversion is left. The bf16 copy keeps its conversion
// before the store (4-byte pairs would half-fill each sector).
#bl = #tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#sl0 = #tilegpu.slice<{dim = 0, parent = #bl}>
#sl1 = #tilegpu.slice<{dim = 1, parent = #bl}>
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @fixup(
// CHECK:         %[[ACC:.*]] = tile.dot {{.*}} -> tensor<64x32xf32, #mma>
// CHECK:         tile.store %{{.*}}, %[[ACC]] : tensor<64x32x!tile.ptr<f32>, #mma>
// CHECK:         %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[ITER:.*]] = %[[ACC]]) -> (tensor<64x32xf32, #mma>)
// CHECK:           %[[PART:.*]] = tilegpu.convert_layout %{{.*}} : tensor<64x32xf32, #blocked> -> tensor<64x32xf32, #mma>
// CHECK:           %[[NEXT:.*]] = arith.addf %[[ITER]], %[[PART]] : tensor<64x32xf32, #mma>
// CHECK:           scf.yield %[[NEXT]] : tensor<64x32xf32, #mma>
// CHECK:         tile.store %{{.*}}, %[[SUM]], %{{.*}} : tensor<64x32x!tile.ptr<f32>, #mma>
// CHECK:         %[[HALF:.*]] = arith.truncf %[[SUM]] : tensor<64x32xf32, #mma> to tensor<64x32xbf16, #mma>
// CHECK:         %[[OUT:.*]] = tilegpu.convert_layout %[[HALF]] : tensor<64x32xbf16, #mma> -> tensor<64x32xbf16, #blocked>
// CHECK:         tile.store %{{.*}}, %[[OUT]] : tensor<64x32x!tile.ptr<bf16>, #blocked>
// CLEAN-LABEL: func.func @fixup(
// CLEAN:         scf.for
// CLEAN:           tile.load {{.*}} : tensor<64x32x!tile.ptr<f32>, #mma>
// CLEAN-NOT:       tilegpu.convert_layout
// CLEAN:         scf.yield
// CLEAN:         tilegpu.convert_layout {{.*}} : tensor<64x32xbf16, #mma> -> tensor<64x32xbf16, #blocked>
// CLEAN-NOT:     tilegpu.convert_layout
func.func @fixup(%x: tensor<64x16xbf16, #bl>, %y: tensor<16x32xbf16, #bl>, %ws: !tile.ptr<f32>,
                 %out: !tile.ptr<f32>, %c: !tile.ptr<bf16>, %n: i32, %last: i1) {
  %zero = arith.constant dense<0.0> : tensor<64x32xf32, #mma>
  %acc = tile.dot %x, %y, %zero, ieee : tensor<64x16xbf16, #bl> * tensor<16x32xbf16, #bl> -> tensor<64x32xf32, #mma>
  %a = tilegpu.convert_layout %acc : tensor<64x32xf32, #mma> -> tensor<64x32xf32, #bl>
  // offsets: row * 32 + column
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #sl1>
  %re = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #sl1> -> tensor<64x1xi32, #bl>
  %c32 = arith.constant dense<32> : tensor<64x1xi32, #bl>
  %rs = arith.muli %re, %c32 : tensor<64x1xi32, #bl>
  %rb = tile.broadcast %rs : tensor<64x1xi32, #bl> -> tensor<64x32xi32, #bl>
  %col = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #sl0>
  %ce = tile.expand_dims %col {axis = 0 : i32} : tensor<32xi32, #sl0> -> tensor<1x32xi32, #bl>
  %cb = tile.broadcast %ce : tensor<1x32xi32, #bl> -> tensor<64x32xi32, #bl>
  %offs = arith.addi %rb, %cb : tensor<64x32xi32, #bl>
  %wsb = tile.splat %ws : tensor<64x32x!tile.ptr<f32>, #bl>
  %wp = tile.addptr %wsb, %offs : tensor<64x32x!tile.ptr<f32>, #bl>, tensor<64x32xi32, #bl>
  tile.store %wp, %a : tensor<64x32x!tile.ptr<f32>, #bl>
  %mask = tile.splat %last : tensor<64x32xi1, #bl>
  %fill = arith.constant dense<0.0> : tensor<64x32xf32, #bl>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2048 = arith.constant 2048 : i32
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%run = %a) -> (tensor<64x32xf32, #bl>) : i32 {
    %at = arith.muli %i, %c2048 : i32
    %base = tile.addptr %ws, %at : !tile.ptr<f32>, i32
    %bs = tile.splat %base : tensor<64x32x!tile.ptr<f32>, #bl>
    %pp = tile.addptr %bs, %offs : tensor<64x32x!tile.ptr<f32>, #bl>, tensor<64x32xi32, #bl>
    %part = tile.load %pp, %mask, %fill : tensor<64x32x!tile.ptr<f32>, #bl>
    %next = arith.addf %run, %part : tensor<64x32xf32, #bl>
    scf.yield %next : tensor<64x32xf32, #bl>
  }
  %ob = tile.splat %out : tensor<64x32x!tile.ptr<f32>, #bl>
  %op = tile.addptr %ob, %offs : tensor<64x32x!tile.ptr<f32>, #bl>, tensor<64x32xi32, #bl>
  tile.store %op, %sum, %mask : tensor<64x32x!tile.ptr<f32>, #bl>
  %half = arith.truncf %sum : tensor<64x32xf32, #bl> to tensor<64x32xbf16, #bl>
  %cb16 = tile.splat %c : tensor<64x32x!tile.ptr<bf16>, #bl>
  %cp = tile.addptr %cb16, %offs : tensor<64x32x!tile.ptr<bf16>, #bl>, tensor<64x32xi32, #bl>
  tile.store %cp, %half : tensor<64x32x!tile.ptr<bf16>, #bl>
  return
}
}
