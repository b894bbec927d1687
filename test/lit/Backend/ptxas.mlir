// REQUIRES: ptxas
// RUN: tegulac %s --chip=sm_80 --cubin -o %t.cubin | FileCheck %s
// RUN: tegulac %s --chip=sm_90a --cubin -o %t.cubin | FileCheck %s

// ptxas accepts the PTX and tegulac prints the resource report.
// (FileCheck treats any run of spaces as one.)
// CHECK: kernel registers shared (B) barriers spills (B)
// CHECK: scale {{[0-9]+}} 0 0 0

module {
  llvm.func @scale(%x: !llvm.ptr<1>, %s: f32) attributes {nvvm.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %p = llvm.getelementptr %x[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %p : !llvm.ptr<1> -> f32
    %r = llvm.fmul %v, %s : f32
    llvm.store %r, %p : f32, !llvm.ptr<1>
    llvm.return
  }
}
