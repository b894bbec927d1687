// RUN: tegula-opt %s -split-input-file -propagate-mma-layout | FileCheck %s
// RUN: tegula-opt %s -split-input-file -propagate-mma-layout -remove-layout-conversions -canonicalize | FileCheck %s --check-prefix=CLEAN

// Attention's inner step: S = dot(Q, K) scaled, a row max, P = exp(S - max)
// as bf16 into dot(P, V). The math runs on the accumulator where it lies
// (mma; the row max in its slice), and P enters the second dot as its
// dot_operand - the same registers with warps along M only, so nothing is
// left to move. The row max also leaves through the return, converted back.
#bl = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#sl = #tilegpu.slice<{dim = 1, parent = #bl}>
#mma = #tilegpu.mma<{warpsPerCTA = [4, 1]}>
#dotA = #tilegpu.dot_operand<{opIdx = 0, parent = #mma, elementBits = 16}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CHECK-LABEL: func.func @attention_step(
// CHECK:         %[[S:.*]] = tile.dot {{.*}} -> tensor<64x32xf32, #mma>
// CHECK-NOT:     tilegpu.convert_layout %[[S]]
// CHECK:         arith.mulf %[[S]], {{.*}} : tensor<64x32xf32, #mma>
// CHECK:         %[[MAX:.*]] = tile.reduce({{.*}}) {axis = 1 : i32} : (tensor<64x32xf32, #mma>) -> tensor<64xf32, #[[SLICE:slice[0-9]*]]>
// CHECK:         %[[BACK:.*]] = tilegpu.convert_layout %[[MAX]] : tensor<64xf32, #[[SLICE]]> -> tensor<64xf32, #slice>
// CHECK:         tile.expand_dims %[[MAX]] {axis = 1 : i32} : tensor<64xf32, #[[SLICE]]> -> tensor<64x1xf32, #mma>
// CHECK:         math.exp {{.*}} : tensor<64x32xf32, #mma>
// CHECK:         %[[P:.*]] = arith.truncf {{.*}} : tensor<64x32xf32, #mma> to tensor<64x32xbf16, #mma>
// CHECK:         %[[PA:.*]] = tilegpu.convert_layout %[[P]] : tensor<64x32xbf16, #mma> -> tensor<64x32xbf16, #dot_op>
// CHECK:         tile.dot %[[PA]], {{.*}} -> tensor<64x32xf32, #mma>
// CHECK:         return {{.*}}, %[[BACK]]
// After clean-up only two conversions remain: the returned row max, and P
// into its dot_operand layout (the same linear layout: no data moves).
// CLEAN-LABEL: func.func @attention_step(
// CLEAN:         tilegpu.convert_layout {{.*}} -> tensor<64xf32, #slice>
// CLEAN:         tilegpu.convert_layout {{.*}} : tensor<64x32xbf16, #mma> -> tensor<64x32xbf16, #dot_op>
// CLEAN-NOT:     tilegpu.convert_layout
func.func @attention_step(%q: tensor<64x32xbf16, #dotA>, %k: tensor<32x32xbf16, #bl>,
                          %v: tensor<32x32xbf16, #bl>, %scale: f32)
    -> (tensor<64x32xf32, #mma>, tensor<64xf32, #sl>) {
  %zero = arith.constant dense<0.0> : tensor<64x32xf32, #mma>
  %s = tile.dot %q, %k, %zero, ieee : tensor<64x32xbf16, #dotA> * tensor<32x32xbf16, #bl> -> tensor<64x32xf32, #mma>
  %sb = tilegpu.convert_layout %s : tensor<64x32xf32, #mma> -> tensor<64x32xf32, #bl>
  %sc = tile.splat %scale : tensor<64x32xf32, #bl>
  %x = arith.mulf %sb, %sc : tensor<64x32xf32, #bl>
  %mx = tile.reduce(%x) {axis = 1 : i32} : (tensor<64x32xf32, #bl>) -> tensor<64xf32, #sl> {
  ^bb0(%l: f32, %r: f32):
    %m = arith.maximumf %l, %r : f32
    tile.reduce.return %m : f32
  }
  %e = tile.expand_dims %mx {axis = 1 : i32} : tensor<64xf32, #sl> -> tensor<64x1xf32, #bl>
  %bc = tile.broadcast %e : tensor<64x1xf32, #bl> -> tensor<64x32xf32, #bl>
  %d = arith.subf %x, %bc : tensor<64x32xf32, #bl>
  %p = math.exp %d : tensor<64x32xf32, #bl>
  %p16 = arith.truncf %p : tensor<64x32xf32, #bl> to tensor<64x32xbf16, #bl>
  %o = tile.dot %p16, %v, %zero, ieee : tensor<64x32xbf16, #bl> * tensor<32x32xbf16, #bl> -> tensor<64x32xf32, #mma>
  return %o, %mx : tensor<64x32xf32, #mma>, tensor<64xf32, #sl>
}
}

// -----

// A GEMM epilogue: the bias add and the cast run on the accumulator; the
// bias row is converted in (a row, not the broadcast tile), and the result
// leaves for the store converted back once.
#bl = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#sl0 = #tilegpu.slice<{dim = 0, parent = #bl}>
#mma = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
module attributes {tilegpu.num_warps = 4 : i32} {
// CLEAN-LABEL: func.func @bias_epilogue(
// CLEAN:         %[[ROW:.*]] = tilegpu.convert_layout %{{.*}} : tensor<64xf32, #slice> -> tensor<64xf32, #[[MS:slice[0-9]*]]>
// CLEAN:         tile.expand_dims %[[ROW]] {axis = 0 : i32} : tensor<64xf32, #[[MS]]> -> tensor<1x64xf32, #mma>
// CLEAN:         arith.addf {{.*}} : tensor<64x64xf32, #mma>
// CLEAN:         %[[OUT:.*]] = arith.truncf {{.*}} : tensor<64x64xf32, #mma> to tensor<64x64xbf16, #mma>
// CLEAN:         tilegpu.convert_layout %[[OUT]] : tensor<64x64xbf16, #mma> -> tensor<64x64xbf16, #blocked>
// CLEAN-NOT:     tilegpu.convert_layout
func.func @bias_epilogue(%x: tensor<64x32xbf16, #bl>, %y: tensor<32x64xbf16, #bl>,
                         %bias: tensor<64xf32, #sl0>) -> tensor<64x64xbf16, #bl> {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #mma>
  %acc = tile.dot %x, %y, %zero, ieee : tensor<64x32xbf16, #bl> * tensor<32x64xbf16, #bl> -> tensor<64x64xf32, #mma>
  %a = tilegpu.convert_layout %acc : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bl>
  %e = tile.expand_dims %bias {axis = 0 : i32} : tensor<64xf32, #sl0> -> tensor<1x64xf32, #bl>
  %b = tile.broadcast %e : tensor<1x64xf32, #bl> -> tensor<64x64xf32, #bl>
  %s = arith.addf %a, %b : tensor<64x64xf32, #bl>
  %t = arith.truncf %s : tensor<64x64xf32, #bl> to tensor<64x64xbf16, #bl>
  return %t : tensor<64x64xbf16, #bl>
}
}
