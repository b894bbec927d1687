// RUN: tegula-opt %s | tegula-opt | FileCheck %s
// RUN: tegula-opt %s -mlir-print-op-generic | tegula-opt | FileCheck %s

// The tensor-core encodings round-trip: the mma accumulator, the dot
// operands of that mma, and a slice of the accumulator (a row reduction's
// result, as attention's softmax needs).

// CHECK-DAG: #[[MMA:mma[0-9]*]] = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
// CHECK-DAG: #[[A:dot_op[0-9]*]] = #tilegpu.dot_operand<{opIdx = 0, parent = #[[MMA]], elementBits = 16}>
// CHECK-DAG: #[[B:dot_op[0-9]*]] = #tilegpu.dot_operand<{opIdx = 1, parent = #[[MMA]], elementBits = 16}>
// CHECK-DAG: #[[ROWS:slice[0-9]*]] = #tilegpu.slice<{dim = 1, parent = #[[MMA]]}>
#mma = #tilegpu.mma<{warpsPerCTA = [2, 2]}>
#a = #tilegpu.dot_operand<{opIdx = 0, parent = #mma, elementBits = 16}>
#b = #tilegpu.dot_operand<{opIdx = 1, parent = #mma, elementBits = 16}>
#rows = #tilegpu.slice<{dim = 1, parent = #mma}>
#blocked = #tilegpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>

// CHECK-LABEL: func.func @operands(
// CHECK:         tilegpu.convert_layout %{{.*}} : tensor<64x32xbf16, #{{blocked[0-9]*}}> -> tensor<64x32xbf16, #[[A]]>
// CHECK:         tile.reduce
// CHECK:         -> tensor<64xf32, #[[ROWS]]>
func.func @operands(%x: tensor<64x32xbf16, #blocked>, %acc: tensor<64x64xf32, #mma>, %y: tensor<32x64xbf16, #b>)
    -> (tensor<64x32xbf16, #a>, tensor<64xf32, #rows>) {
  %a = tilegpu.convert_layout %x : tensor<64x32xbf16, #blocked> -> tensor<64x32xbf16, #a>
  %m = tile.reduce(%acc) {axis = 1 : i32} : (tensor<64x64xf32, #mma>) -> tensor<64xf32, #rows> {
  ^bb0(%p: f32, %q: f32):
    %mx = arith.maximumf %p, %q : f32
    tile.reduce.return %mx : f32
  }
  return %a, %m : tensor<64x32xbf16, #a>, tensor<64xf32, #rows>
}
