// RUN: tegula-opt %s -split-input-file --carry-packed-pairs | FileCheck %s

// A loop carries both halves of a paired conversion (as lower-tilegpu-to-llvm
// leaves a bf16 tile carried round a loop): the loop header takes the
// vector, and so does the exit, which took the header's halves.
// CHECK-LABEL: llvm.func @loop(
// CHECK:         %[[T0:.*]] = llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK:         llvm.br ^bb1(%{{.*}}, %[[T0]] : i32, vector<2xbf16>)
// CHECK:       ^bb1(%{{.*}}: i32, %[[V:.*]]: vector<2xbf16>):
// CHECK-DAG:     %[[LO:.*]] = llvm.extractelement %[[V]][%{{.*}} : i32] : vector<2xbf16>
// CHECK-DAG:     %[[HI:.*]] = llvm.extractelement %[[V]][%{{.*}} : i32] : vector<2xbf16>
// CHECK:         %[[T1:.*]] = llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK:         llvm.cond_br %{{.*}}, ^bb1(%{{.*}}, %[[T1]] : i32, vector<2xbf16>), ^bb2(%[[V]] : vector<2xbf16>)
// CHECK:       ^bb2(%[[E:.*]]: vector<2xbf16>):
// CHECK:         llvm.extractelement %[[E]]
llvm.func @loop(%n: i32, %a: f32, %b: f32) -> bf16 {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %poison = llvm.mlir.poison : vector<2xf32>
  %v0 = llvm.insertelement %a, %poison[%c0 : i32] : vector<2xf32>
  %v1 = llvm.insertelement %b, %v0[%c1 : i32] : vector<2xf32>
  %t0 = llvm.fptrunc %v1 : vector<2xf32> to vector<2xbf16>
  %lo0 = llvm.extractelement %t0[%c0 : i32] : vector<2xbf16>
  %hi0 = llvm.extractelement %t0[%c1 : i32] : vector<2xbf16>
  llvm.br ^loop(%c0, %lo0, %hi0 : i32, bf16, bf16)
^loop(%i: i32, %lo: bf16, %hi: bf16):
  %x = llvm.fpext %lo : bf16 to f32
  %y = llvm.fpext %hi : bf16 to f32
  %sum = llvm.fadd %x, %y : f32
  %w0 = llvm.insertelement %sum, %poison[%c0 : i32] : vector<2xf32>
  %w1 = llvm.insertelement %x, %w0[%c1 : i32] : vector<2xf32>
  %t1 = llvm.fptrunc %w1 : vector<2xf32> to vector<2xbf16>
  %lo1 = llvm.extractelement %t1[%c0 : i32] : vector<2xbf16>
  %hi1 = llvm.extractelement %t1[%c1 : i32] : vector<2xbf16>
  %next = llvm.add %i, %c1 : i32
  %more = llvm.icmp "slt" %next, %n : i32
  llvm.cond_br %more, ^loop(%next, %lo1, %hi1 : i32, bf16, bf16), ^exit(%lo, %hi : bf16, bf16)
^exit(%u: bf16, %v: bf16):
  %r = llvm.fadd %u, %v : bf16
  llvm.return %r : bf16
}

// -----

// The halves may arrive in either order of arguments.
// CHECK-LABEL: llvm.func @swapped(
// CHECK:       ^bb1(%[[V:.*]]: vector<2xf16>):
// CHECK-DAG:     %[[C0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG:     %[[C1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG:     %[[LO:.*]] = llvm.extractelement %[[V]][%[[C0]] : i32]
// CHECK-DAG:     %[[HI:.*]] = llvm.extractelement %[[V]][%[[C1]] : i32]
// CHECK:         llvm.fsub %[[HI]], %[[LO]] : f16
llvm.func @swapped(%v: vector<2xf16>) -> f16 {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %lo = llvm.extractelement %v[%c0 : i32] : vector<2xf16>
  %hi = llvm.extractelement %v[%c1 : i32] : vector<2xf16>
  llvm.br ^next(%hi, %lo : f16, f16)
^next(%p: f16, %q: f16):
  %r = llvm.fsub %p, %q : f16
  llvm.return %r : f16
}

// -----

// Left alone: an edge that passes a value from elsewhere, and an edge whose
// halves come from two vectors.
// CHECK-LABEL: llvm.func @unpaired(
// CHECK:       ^bb1(%{{.*}}: bf16, %{{.*}}: bf16):
// CHECK:       ^bb2(%{{.*}}: bf16, %{{.*}}: bf16):
// CHECK-NOT:   vector<2xbf16>)
llvm.func @unpaired(%c: i1, %v: vector<2xbf16>, %w: vector<2xbf16>, %s: bf16) -> bf16 {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %lo = llvm.extractelement %v[%c0 : i32] : vector<2xbf16>
  %hi = llvm.extractelement %v[%c1 : i32] : vector<2xbf16>
  %hw = llvm.extractelement %w[%c1 : i32] : vector<2xbf16>
  llvm.cond_br %c, ^scalar(%lo, %hi : bf16, bf16), ^scalar(%lo, %s : bf16, bf16)
^scalar(%a: bf16, %b: bf16):
  llvm.br ^mixed(%lo, %hw : bf16, bf16)
^mixed(%x: bf16, %y: bf16):
  %r = llvm.fadd %x, %y : bf16
  llvm.return %r : bf16
}
