// RUN: tegula-opt %s -split-input-file --lower-tilegpu-to-llvm | FileCheck %s

// tile.elementwise_inline_asm: one llvm.inline_asm per register the thread
// holds (pack 1), the op's purity as the asm's side effects.
#b = #tilegpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @swap(
  // CHECK-COUNT-2: llvm.inline_asm "prmt.b32 $0, $1, 0, 0x0123;", "=r,r" {{.*}} : (i32) -> i32
  // CHECK:         llvm.inline_asm has_side_effects "brev.b32 $0, $1;", "=r,r"
  // CHECK:         llvm.inline_asm has_side_effects "brev.b32 $0, $1;", "=r,r"
  func.func @swap(%x: tensor<256xi32, #b>) -> (tensor<256xi32, #b>, tensor<256xi32, #b>) {
    %s = tile.elementwise_inline_asm "prmt.b32 $0, $1, 0, 0x0123;", "=r,r" pure = true pack = 1 (%x : tensor<256xi32, #b>) -> tensor<256xi32, #b>
    %r = tile.elementwise_inline_asm "brev.b32 $0, $1;", "=r,r" pure = false pack = 1 (%x : tensor<256xi32, #b>) -> tensor<256xi32, #b>
    return %s, %r : tensor<256xi32, #b>, tensor<256xi32, #b>
  }
}

// -----

// pack 4: four i8 registers in one i32, the first lowest, and back.
#b8 = #tilegpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @bytes(
  // CHECK:         llvm.zext {{.*}} : i8 to i32
  // CHECK:         llvm.shl
  // CHECK:         llvm.or
  // CHECK:         llvm.inline_asm "and.b32 $0, $1, 0x1F1F1F1F;", "=r,r" {{.*}} : (i32) -> i32
  // CHECK:         llvm.lshr
  // CHECK:         llvm.trunc {{.*}} : i32 to i8
  // CHECK:         llvm.inline_asm "and.b32 $0, $1, 0x1F1F1F1F;", "=r,r"
  // CHECK-NOT:     llvm.inline_asm
  // CHECK:         llvm.return
  func.func @bytes(%x: tensor<1024xi8, #b8>) -> tensor<1024xi8, #b8> {
    %y = tile.elementwise_inline_asm "and.b32 $0, $1, 0x1F1F1F1F;", "=r,r" pure = true pack = 4 (%x : tensor<1024xi8, #b8>) -> tensor<1024xi8, #b8>
    return %y : tensor<1024xi8, #b8>
  }
}

// -----

// Several outputs come back in a struct; a 16-bit float travels as its bits.
#b = #tilegpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {tilegpu.num_warps = 4 : i32} {
  // CHECK-LABEL: llvm.func @two(
  // CHECK:         llvm.bitcast {{.*}} : f16 to i16
  // CHECK:         llvm.inline_asm "{{.*}}", "=f,=h,f,h" {{.*}} : (f32, i16) -> !llvm.struct<(f32, i16)>
  // CHECK:         llvm.extractvalue {{.*}}[0]
  // CHECK:         llvm.extractvalue {{.*}}[1]
  // CHECK:         llvm.bitcast {{.*}} : i16 to f16
  func.func @two(%x: tensor<128xf32, #b>, %h: tensor<128xf16, #b>) -> (tensor<128xf32, #b>, tensor<128xf16, #b>) {
    %a, %c = tile.elementwise_inline_asm "mov.f32 $0, $2; mov.b16 $1, $3;", "=f,=h,f,h" pure = true pack = 1 (%x, %h : tensor<128xf32, #b>, tensor<128xf16, #b>) -> tensor<128xf32, #b>, tensor<128xf16, #b>
    return %a, %c : tensor<128xf32, #b>, tensor<128xf16, #b>
  }
}
