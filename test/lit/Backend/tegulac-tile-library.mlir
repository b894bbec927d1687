// REQUIRES: ptxas
// RUN: tegulac %s --chip=sm_90a --num-warps=2 | FileCheck %s --check-prefix=PTX
// RUN: tegulac %s --chip=sm_80 --cubin --num-warps=4 -o %t.cubin | FileCheck %s --check-prefix=REPORT

// tegulac compiles a library of tile-dialect kernels (what Kernel::ir()
// prints) through the whole GPU pipeline, and reports each kernel's resources.

// PTX: .visible .entry scale(
// PTX: .maxntid 64, 1, 1
// PTX: .visible .entry row_max(
// REPORT: kernel registers shared (B) barriers spills (B)
// REPORT-DAG: {{^}}scale{{ +[0-9]+ +[0-9]+ +[0-9]+ +}}0
// REPORT-DAG: {{^}}row_max{{ +[0-9]+ +[0-9]+ +[0-9]+ +}}0
func.func @scale(%x: !tile.ptr<f32>, %s: f32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = tile.splat %x : tensor<256x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<256x!tile.ptr<f32>>, tensor<256xi32>
  %v = tile.load %p : tensor<256x!tile.ptr<f32>>
  %ss = tile.splat %s : tensor<256xf32>
  %w = arith.mulf %v, %ss : tensor<256xf32>
  tile.store %p, %w : tensor<256x!tile.ptr<f32>>
  return
}

func.func @row_max(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  %m = tile.reduce(%v) {axis = 0 : i32} : (tensor<512xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %t = arith.maximumf %a, %b : f32
    tile.reduce.return %t : f32
  }
  tile.store %out, %m : !tile.ptr<f32>
  return
}
