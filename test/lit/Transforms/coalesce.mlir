// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --coalesce | FileCheck %s
// RUN: tegula-opt %s -split-input-file --convert-tile-to-tilegpu=num-warps=4 --coalesce --remove-layout-conversions --cse | FileCheck %s --check-prefix=CLEAN

// A tile whose addresses run along dim 0 (x[r + 64 c], a transposed
// operand): the default row-major layout would give each thread single
// elements 256 bytes apart. coalesce moves the load to a layout whose
// fastest dimension is dim 0 (order [0, 1]), 4 f32 a thread, and converts
// the result back for its users.
// CHECK-DAG: #[[COLS:.*]] = #tilegpu.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]}>
// CHECK-LABEL: func.func @column_major
// CHECK: %[[V:.*]] = tile.load %{{.*}} {tilegpu.vector_dim = 0 : i32, tilegpu.vector_width = 4 : i32} : tensor<64x64x!tile.ptr<f32>, #[[COLS]]>
// CHECK: tilegpu.convert_layout %[[V]] : tensor<64x64xf32, #[[COLS]]> -> tensor<64x64xf32, #
// After the cleanup the pointers are computed in the new layout directly.
// CLEAN-LABEL: func.func @column_major
// CLEAN: tile.addptr {{.*}} : tensor<64x64x!tile.ptr<f32>, #[[C:.*]]>, tensor<64x64xi32, #[[C]]>
// CLEAN-NEXT: tile.load
func.func @column_major(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %c64 = arith.constant dense<64> : tensor<1x64xi32>
  %colOff = arith.muli %cols, %c64 : tensor<1x64xi32>
  %rb = tile.broadcast %rows : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %colOff : tensor<1x64xi32> -> tensor<64x64xi32>
  %off = arith.addi %rb, %cb : tensor<64x64xi32>
  %px = tile.splat %x : tensor<64x64x!tile.ptr<f32>>
  %p = tile.addptr %px, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  %v = tile.load %p : tensor<64x64x!tile.ptr<f32>>
  // Stored row-major: this store keeps the default layout (vectors along dim 1).
  %c64r = arith.constant dense<64> : tensor<64x1xi32>
  %rowOff = arith.muli %rows, %c64r : tensor<64x1xi32>
  %rb2 = tile.broadcast %rowOff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb2 = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %off2 = arith.addi %rb2, %cb2 : tensor<64x64xi32>
  %py = tile.splat %y : tensor<64x64x!tile.ptr<f32>>
  %q = tile.addptr %py, %off2 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %q, %v : tensor<64x64x!tile.ptr<f32>>
  return
}
