// RUN: tegulac %s --chip=sm_80 | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: tegulac %s --chip=sm_90a | FileCheck %s --check-prefixes=CHECK,SM90

// The back end alone, on hand-written per-thread code: NVVM special
// registers, 128-bit vector global accesses, and libdevice math (linked,
// inlined and gone from the PTX).

// CHECK:       .version 8.0
// SM80:        .target sm_80
// SM90:        .target sm_90a
// CHECK-LABEL: .visible .entry vector_add(
// CHECK:         mov.u32 {{.*}}%tid.x
// CHECK:         mov.u32 {{.*}}%ctaid.x
// CHECK:         ld.global.v4.b32
// CHECK:         ld.global.v4.b32
// CHECK:         add.rn.f32
// CHECK:         st.global.v4.b32
// CHECK-LABEL: .visible .entry exp_kernel(
// CHECK-NOT:     __nv_expf
// CHECK:         ex2.approx
// CHECK:         st.global.b32
module {
  llvm.func @vector_add(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %bid = nvvm.read.ptx.sreg.ctaid.x : i32
    %c512 = llvm.mlir.constant(512 : i32) : i32
    %c4 = llvm.mlir.constant(4 : i32) : i32
    %base = llvm.mul %bid, %c512 : i32
    %t4 = llvm.mul %tid, %c4 : i32
    %i = llvm.add %base, %t4 : i32
    %px = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %py = llvm.getelementptr %y[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %po = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %vx = llvm.load %px {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
    %vy = llvm.load %py {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
    %s = llvm.fadd %vx, %vy : vector<4xf32>
    llvm.store %s, %po {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @__nv_expf(f32) -> f32
  llvm.func @exp_kernel(%x: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %p = llvm.getelementptr %x[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %p : !llvm.ptr<1> -> f32
    %e = llvm.call @__nv_expf(%v) : (f32) -> f32
    llvm.store %e, %p : f32, !llvm.ptr<1>
    llvm.return
  }
}
