// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | FileCheck %s
// RUN: tegula-opt %s --tegula-gpu-pipeline=num-warps=4 | tegulac - --chip=sm_80 | FileCheck %s --check-prefix=PTX

// tile.print becomes vprintf calls: one per element, by the element's owner
// (here 64 elements over 128 threads: half the threads hold copies and stay
// quiet), and a scalar by thread 0. tile.assert stops where it fails with a
// report (no vprintf): the first thread to claim the module's report writes
// its program and element and the site (its text, with the source line, in
// the module's tegula.error_sites) into the runtime's record, fences
// system-wide and traps; the others wait for that trap.

// CHECK-DAG: llvm.mlir.global internal constant @tegula_printf_{{[0-9]+}}("[show] pid (%d, %d, %d) idx (%d) v = %g\0A\00")
// CHECK-DAG: llvm.mlir.global internal constant @tegula_printf_{{[0-9]+}}("[show] pid (%d, %d, %d) n = %d\0A\00")
// CHECK-DAG: tegula.error_sites = ["kernel.cpp:12: device assertion failed: x must be positive"]
// CHECK-DAG: llvm.mlir.global external @tegula_error_report_show(0 : i64) {addr_space = 1 : i32, alignment = 8 : i64, tegula.error_word = 0 : i32} : i64
// CHECK-DAG: llvm.mlir.global external @tegula_error_claim_show(0 : i32) {addr_space = 1 : i32, alignment = 4 : i64, tegula.error_word = 1 : i32} : i32
// CHECK-NOT: device assertion failed: x must be positive (pid
// CHECK-DAG: llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32
// CHECK-LABEL: llvm.func @show(
// CHECK:         llvm.alloca
// CHECK:         llvm.cond_br
// CHECK:         llvm.call @vprintf
// PTX:      // Error report sites (a kernel that stops writes 1 + the site into the record tegula_error_report_<kernel> points at):
// PTX-NEXT: //   site 0: kernel.cpp:12: device assertion failed: x must be positive
// PTX: .extern .func  (.param .b32 func_retval0) vprintf
// PTX: .visible .global .align 8 .u64 tegula_error_report_show;
// PTX: .visible .global .align 4 .u32 tegula_error_claim_show;
// PTX: call.uni (retval0),{{ *}}vprintf
// PTX: atom.relaxed.sys.global.cas.b32 {{.*}}[tegula_error_claim_show], 0, 1;
// PTX: ld.global.b64 {{.*}}[tegula_error_report_show];
// PTX: st.volatile.b32
// PTX: fence.sc.sys;
// PTX-NEXT: st.volatile.b32 [%rd{{[0-9]+}}], 1;
// PTX-NEXT: fence.sc.sys;
// PTX-COUNT-4: nanosleep.u32 1000000;
// PTX: trap;
func.func @show(%x: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xs = tile.splat %x : tensor<64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %v = tile.load %p : tensor<64x!tile.ptr<f32>>
  tile.print "v = " %v : tensor<64xf32>
  tile.print "n = " %n : i32
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %pos = arith.cmpf ogt, %v, %zero : tensor<64xf32>
  tile.assert %pos, "x must be positive" : tensor<64xi1> loc("kernel.cpp":12:3)
  return
}
