// REQUIRES: ptxas-tool, nvlink-tool
// RUN: rm -rf %t && split-file %s %t
// RUN: tegula-opt %t/first.mlir --tegula-gpu-pipeline=num-warps=4 | tegulac - --chip=sm_80 -o %t/first.ptx
// RUN: tegula-opt %t/second.mlir --tegula-gpu-pipeline=num-warps=4 | tegulac - --chip=sm_80 -o %t/second.ptx
// RUN: %ptxas -arch=sm_80 -c %t/first.ptx -o %t/first.o
// RUN: %ptxas -arch=sm_80 -c %t/second.ptx -o %t/second.o
// RUN: %nvlink -arch=sm_80 %t/first.o %t/second.o -o %t/linked.cubin
// RUN: FileCheck %s < %t/first.ptx

// Two kernels that stop with a report, compiled apart as relocatable code
// and linked into one image (as an AOT user of tegulac might): each module's
// report globals are named after its kernel, so nvlink finds no duplicate.
// CHECK: //   site 0: first.cpp:3: device assertion failed: x must be positive
// CHECK: .visible .global .align 8 .u64 tegula_error_report_first;
// CHECK: .visible .global .align 4 .u32 tegula_error_claim_first;

//--- first.mlir
func.func @first(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xs = tile.splat %x : tensor<64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %v = tile.load %p : tensor<64x!tile.ptr<f32>>
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %pos = arith.cmpf ogt, %v, %zero : tensor<64xf32>
  tile.assert %pos, "x must be positive" : tensor<64xi1> loc("first.cpp":3:3)
  return
}

//--- second.mlir
func.func @second(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xs = tile.splat %x : tensor<64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %v = tile.load %p : tensor<64x!tile.ptr<f32>>
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %pos = arith.cmpf olt, %v, %zero : tensor<64xf32>
  tile.assert %pos, "x must be negative" : tensor<64xi1> loc("second.cpp":3:3)
  return
}
