// REQUIRES: ptxas, nvdisasm
// RUN: tegulac %s --chip=sm_80 --sass 2>%t.report | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// RUN: tegulac %s --chip=sm_90a --sass -o %t.sass
// RUN: FileCheck %s --check-prefix=HOPPER < %t.sass

// --sass prints the machine code ptxas made (nvdisasm), the resource report
// on stderr: one load, the multiply, one store.
// CHECK: .target sm_80
// CHECK-LABEL: scale:
// CHECK: LDG.E [[V:R[0-9]+]], {{.*}}{{\[}}[[P:R[0-9]+]].64]
// CHECK: FMUL [[R:R[0-9]+]], [[V]],
// CHECK: STG.E {{.*}}{{\[}}[[P]].64], [[R]]
// CHECK: EXIT
// REPORT: kernel registers shared (B) barriers spills (B)
// REPORT: scale {{[0-9]+}} 0 0 0
// HOPPER: .target sm_90a
// HOPPER: FMUL

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
