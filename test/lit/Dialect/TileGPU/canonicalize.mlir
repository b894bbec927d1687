// RUN: tegula-opt %s -canonicalize -split-input-file | FileCheck %s

#a = #tilegpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#c = #tilegpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A conversion to the same layout folds away.
// CHECK-LABEL: func.func @identity(
// CHECK-SAME:    %[[X:.*]]: tensor<512xf32
// CHECK-NEXT:    return %[[X]]
func.func @identity(%x: tensor<512xf32, #a>) -> tensor<512xf32, #a> {
  %0 = tilegpu.convert_layout %x : tensor<512xf32, #a> -> tensor<512xf32, #a>
  return %0 : tensor<512xf32, #a>
}

// A chain of conversions becomes one.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    %[[X:.*]]: tensor<512xf32
// CHECK-NEXT:    %[[C:.*]] = tilegpu.convert_layout %[[X]]
// CHECK-NEXT:    return %[[C]]
func.func @chain(%x: tensor<512xf32, #a>) -> tensor<512xf32, #c> {
  %0 = tilegpu.convert_layout %x : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %1 = tilegpu.convert_layout %0 : tensor<512xf32, #b> -> tensor<512xf32, #c>
  return %1 : tensor<512xf32, #c>
}

// A chain back to the start disappears.
// CHECK-LABEL: func.func @round_trip(
// CHECK-SAME:    %[[X:.*]]: tensor<512xf32
// CHECK-NEXT:    return %[[X]]
func.func @round_trip(%x: tensor<512xf32, #a>) -> tensor<512xf32, #a> {
  %0 = tilegpu.convert_layout %x : tensor<512xf32, #a> -> tensor<512xf32, #b>
  %1 = tilegpu.convert_layout %0 : tensor<512xf32, #b> -> tensor<512xf32, #a>
  return %1 : tensor<512xf32, #a>
}
