// RUN: tegula-opt %s -split-input-file -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands | FileCheck %s
// RUN: tegula-opt %s -split-input-file -use-tma -lower-tensor-descriptors -convert-tile-to-tilegpu=num-warps=8 -canonicalize -accelerate-dot=chip=sm_90a -pipeline-dot-operands=warp-specialize=true | FileCheck %s

// tl::loop_options{.warp_specialize}: a loop's `tile.warp_specialize` asks
// for the producer warpgroup, or refuses it, whatever the pass option (the
// launch's) says - on the K loop itself, or on a tile loop around it.

// CHECK: module attributes {{.*}}tilegpu.producer_warps = 4 : i32
// CHECK: func.func @asks
// CHECK: tilegpu.is_producer_warp
// CHECK: } {tilegpu.warp_specialized}
module {
  func.func @asks(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                  %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c256 = arith.constant 256 : i64
    %k64 = arith.extsi %k : i32 to i64
    %pid = tile.program_id x
    %row = arith.muli %pid, %c64 : i32
    %da = tile.make_tensor_descriptor %a, [%c256, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<128x64xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c256], [%c256, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x256xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c256, %c256], [%c256, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<128x256xf32>>
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %acc = scf.for %i = %c0 to %k step %c64 iter_args(%x = %zero) -> (tensor<128x256xf32>) : i32 {
      %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<128x64xbf16>> -> tensor<128x64xbf16>
      %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<64x256xbf16>> -> tensor<64x256xbf16>
      %d = tile.dot %ta, %tb, %x, ieee : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %d : tensor<128x256xf32>
    } {tile.warp_specialize = true}
    tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<128x256xf32>>, tensor<128x256xf32>
    return
  }
}

// -----

// Refused: TMA rings the consumers fill themselves (no producer).
// CHECK: // -----
// CHECK-NOT: producer_warps
// CHECK: func.func @refuses
// CHECK-NOT: is_producer_warp
// CHECK: tilegpu.tma_load
// CHECK-NOT: is_producer_warp
// CHECK: // -----
module {
  func.func @refuses(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                     %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c256 = arith.constant 256 : i64
    %k64 = arith.extsi %k : i32 to i64
    %pid = tile.program_id x
    %row = arith.muli %pid, %c64 : i32
    %da = tile.make_tensor_descriptor %a, [%c256, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<128x64xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c256], [%c256, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x256xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c256, %c256], [%c256, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<128x256xf32>>
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %acc = scf.for %i = %c0 to %k step %c64 iter_args(%x = %zero) -> (tensor<128x256xf32>) : i32 {
      %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<128x64xbf16>> -> tensor<128x64xbf16>
      %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<64x256xbf16>> -> tensor<64x256xbf16>
      %d = tile.dot %ta, %tb, %x, ieee : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %d : tensor<128x256xf32>
    } {tile.warp_specialize = false}
    tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<128x256xf32>>, tensor<128x256xf32>
    return
  }
}

// -----

// Asked on the tile loop of a persistent kernel: the K loop inside it.
// CHECK: module attributes {{.*}}tilegpu.producer_warps = 4 : i32
// CHECK: func.func @persistent
// CHECK: tilegpu.is_producer_warp
// CHECK: } {tilegpu.warp_specialized}
module {
  func.func @persistent(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                        %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32},
                        %tiles: i32) attributes {tile.kernel} {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c256 = arith.constant 256 : i64
    %k64 = arith.extsi %k : i32 to i64
    %pid = tile.program_id x
    %programs = tile.num_programs x
    %da = tile.make_tensor_descriptor %a, [%c256, %k64], [%k64, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<128x64xbf16>>
    %db = tile.make_tensor_descriptor %b, [%k64, %c256], [%c256, %c1] : !tile.ptr<bf16> -> !tile.tensordesc<tensor<64x256xbf16>>
    %dc = tile.make_tensor_descriptor %c, [%c256, %c256], [%c256, %c1] : !tile.ptr<f32> -> !tile.tensordesc<tensor<128x256xf32>>
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    scf.for %t = %pid to %tiles step %programs : i32 {
      %row = arith.muli %t, %c64 : i32
      %acc = scf.for %i = %c0 to %k step %c64 iter_args(%x = %zero) -> (tensor<128x256xf32>) : i32 {
        %ta = tile.descriptor_load %da[%row, %i] : !tile.tensordesc<tensor<128x64xbf16>> -> tensor<128x64xbf16>
        %tb = tile.descriptor_load %db[%i, %c0] : !tile.tensordesc<tensor<64x256xbf16>> -> tensor<64x256xbf16>
        %d = tile.dot %ta, %tb, %x, ieee : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        scf.yield %d : tensor<128x256xf32>
      }
      tile.descriptor_store %dc[%row, %c0], %acc : !tile.tensordesc<tensor<128x256xf32>>, tensor<128x256xf32>
    } {tile.warp_specialize = true}
    return
  }
}
