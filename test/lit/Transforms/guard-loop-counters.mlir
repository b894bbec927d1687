// RUN: tegula-opt %s -split-input-file -verify-diagnostics --guard-loop-counters | FileCheck %s

// A runtime bound: one compare before the loop (the bound within a step of
// INT32_MAX); under it the exact test, hidden from LLVM by a move, and a
// stop with a report: the site (the reason, at the loop's line) joins the
// module's tegula.error_sites; the thread that claims the report (its
// globals named after the kernel: modules linked together do not clash) writes its
// program id and the site into the runtime's record, fences system-wide and
// traps, the others wait for that trap (then trap). Nothing enters the loop.
// CHECK:       module attributes {tegula.error_sites = ["{{.*}}guard-loop-counters.mlir:{{[0-9]+}}: this loop's i32 counter would pass 2147483647 after its last iteration, wrap around and the loop go on; give the loop i64 bounds (x.to(tl::i64))"]}
// CHECK:         llvm.mlir.global external @tegula_error_report_runtime_bound(0 : i64) {addr_space = 1 : i32, alignment = 8 : i64, tegula.error_word = 0 : i32} : i64
// CHECK:         llvm.mlir.global external @tegula_error_claim_runtime_bound(0 : i32) {addr_space = 1 : i32, alignment = 4 : i64, tegula.error_word = 1 : i32} : i32
// CHECK-LABEL: func.func @runtime_bound(
// CHECK-SAME:    %[[UB:.*]]: i32
// CHECK:         %[[THRESHOLD:.*]] = arith.addi
// CHECK:         %[[NEAR:.*]] = arith.cmpi sgt, %[[UB]], %[[THRESHOLD]]
// CHECK:         scf.if %[[NEAR]] {
// CHECK:           arith.divui %{{.*}} : i32
// CHECK:           %[[HIDDEN:.*]] = llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r"
// CHECK:           %[[WRAPS:.*]] = arith.cmpi ne, %[[HIDDEN]]
// CHECK:           scf.if %[[WRAPS]] {
// CHECK:             %[[X:.*]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK:             %[[CLAIM:.*]] = llvm.mlir.addressof @tegula_error_claim_runtime_bound : !llvm.ptr<1>
// CHECK:             %[[CAS:.*]] = llvm.cmpxchg %[[CLAIM]], %{{.*}}, %{{.*}} monotonic monotonic {tegula.error_report}
// CHECK:             %[[WON:.*]] = llvm.extractvalue %[[CAS]][1]
// CHECK:             scf.if %[[WON]] {
// CHECK:               %[[SLOT:.*]] = llvm.mlir.addressof @tegula_error_report_runtime_bound : !llvm.ptr<1>
// CHECK:               %[[ADDRESS:.*]] = llvm.load %[[SLOT]] {tegula.error_report} : !llvm.ptr<1> -> i64
// CHECK:               llvm.icmp "ne" %[[ADDRESS]]
// CHECK:                 %[[RECORD:.*]] = llvm.inttoptr %[[ADDRESS]]
// CHECK:                 %[[AT:.*]] = llvm.getelementptr %[[RECORD]][4]
// CHECK:                 llvm.store volatile %[[X]], %[[AT]]
// CHECK:                 llvm.fence seq_cst
// CHECK:                 %[[SITE:.*]] = llvm.mlir.constant(1 : i32)
// CHECK:                 %[[AT0:.*]] = llvm.getelementptr %[[RECORD]][0]
// CHECK:                 llvm.store volatile %[[SITE]], %[[AT0]]
// CHECK-NEXT:            llvm.fence seq_cst
// CHECK:             } else {
// CHECK-COUNT-4:       nvvm.nanosleep
// CHECK:             }
// CHECK-NEXT:        llvm.intr.trap
// CHECK:         scf.for
// CHECK-NOT:       llvm.intr.trap
// CHECK:         return
func.func @runtime_bound(%ub: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %r = scf.for %i = %c0 to %ub step %c64 iter_args(%acc = %c0) -> (i32) : i32 {
    %n = arith.addi %acc, %i : i32
    scf.yield %n : i32
  }
  return %r : i32
}

// -----

// A constant bound and step that cannot wrap, whatever the lower bound:
// nothing, in i32 and in i64.
// CHECK-LABEL: func.func @safe_bounds(
// CHECK-NOT:     scf.if
// CHECK-NOT:     llvm.intr.trap
// CHECK:         return
func.func @safe_bounds(%lb: i32, %lb64: i64) -> i32 {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %ub = arith.constant 2147483584 : i32
  %r = scf.for %i = %lb to %ub step %c64 iter_args(%acc = %c0) -> (i32) : i32 {
    %n = arith.addi %acc, %i : i32
    scf.yield %n : i32
  }
  %s64 = arith.constant 3 : i64
  %ub64 = arith.constant 9223372036854775805 : i64
  scf.for %j = %lb64 to %ub64 step %s64 : i64 {
  }
  return %r : i32
}

// -----

// An i64 counter at a runtime bound is guarded the same way, at its own
// maximum.
// CHECK:       module attributes {tegula.error_sites = ["{{.*}}: this loop's i64 counter would pass 9223372036854775807 after its last iteration
// CHECK-LABEL: func.func @runtime_bound_i64(
// CHECK:         arith.constant 9223372036854775807 : i64
// CHECK:         scf.if
// CHECK:           arith.divui %{{.*}} : i64
// CHECK:           llvm.intr.trap
func.func @runtime_bound_i64(%ub: i64) {
  %c0 = arith.constant 0 : i64
  %c5 = arith.constant 5 : i64
  scf.for %j = %c0 to %ub step %c5 : i64 {
  }
  return
}

// -----

// Constant bounds that end short of INT32_MAX, though the bound is within
// a step of it (the last counter is 2147483576, the next 2147483640): nothing.
// CHECK-LABEL: func.func @constant_no_wrap(
// CHECK-NOT:     llvm.intr.trap
// CHECK:         return
func.func @constant_no_wrap() -> i32 {
  %lb = arith.constant 2147483000 : i32
  %ub = arith.constant 2147483640 : i32
  %c64 = arith.constant 64 : i32
  %r = scf.for %i = %lb to %ub step %c64 iter_args(%acc = %lb) -> (i32) : i32 {
    %n = arith.addi %acc, %i : i32
    scf.yield %n : i32
  }
  return %r : i32
}

// -----

// Constant bounds that always wrap: an error at the loop.
func.func @constant_wrap() -> i32 {
  %lb = arith.constant 2147482000 : i32
  %ub = arith.constant 2147483647 : i32
  %c1024 = arith.constant 1024 : i32
  // expected-error @+1 {{this loop's i32 counter passes 2147483647 after its last iteration (2147482000 to 2147483647 by 1024)}}
  %r = scf.for %i = %lb to %ub step %c1024 iter_args(%acc = %lb) -> (i32) : i32 {
    %n = arith.addi %acc, %i : i32
    scf.yield %n : i32
  }
  return %r : i32
}
