// RUN: tegula-opt %s -split-input-file --define-arith-edge-cases | FileCheck %s

// A runtime divisor: 0 gives -1 (x % 0 gives x), -1 gives 0 - x (% gives 0);
// the division itself sees 1 instead of either.
// CHECK-LABEL: func.func @division(
// CHECK:         %[[ZERO:.*]] = arith.constant dense<0> : tensor<128xi32>
// CHECK:         %[[IS0:.*]] = arith.cmpi eq, %[[Y:.*]], %[[ZERO]]
// CHECK:         %[[ONES:.*]] = arith.constant dense<-1> : tensor<128xi32>
// CHECK:         %[[ISM1:.*]] = arith.cmpi eq, %[[Y]], %[[ONES]]
// CHECK:         %[[BAD:.*]] = arith.ori %[[IS0]], %[[ISM1]]
// CHECK:         %[[ONE:.*]] = arith.constant dense<1> : tensor<128xi32>
// CHECK:         %[[SAFE:.*]] = arith.select %[[BAD]], %[[ONE]], %[[Y]]
// CHECK:         %[[Q:.*]] = arith.divsi %[[X:.*]], %[[SAFE]]
// CHECK:         %[[NEG:.*]] = arith.subi %{{.*}}, %[[X]]
// CHECK:         %[[R1:.*]] = arith.select %[[ISM1]], %[[NEG]], %[[Q]]
// CHECK:         arith.select %[[IS0]], %{{.*}}, %[[R1]]
// CHECK:         arith.remui
// CHECK-NOT:     arith.divsi
// CHECK:         return
func.func @division(%x: tensor<128xi32>, %y: tensor<128xi32>) -> (tensor<128xi32>, tensor<128xi32>) {
  %q = arith.divsi %x, %y : tensor<128xi32>
  %r = arith.remui %x, %y : tensor<128xi32>
  return %q, %r : tensor<128xi32>, tensor<128xi32>
}

// -----

// Constant divisors: a nonzero one other than -1 needs nothing; 0 and -1
// become the answer; scalars as tiles.
// CHECK-LABEL: func.func @constant_divisors(
// CHECK:         %[[Q:.*]] = arith.divsi %[[X:.*]], %{{.*}} : i32
// CHECK-NOT:     arith.divsi
// CHECK-NOT:     arith.remsi
// CHECK:         %[[M1:.*]] = arith.constant -1 : i32
// CHECK:         %[[NEG:.*]] = arith.subi %{{.*}}, %[[X]]
// CHECK:         return %[[Q]], %[[M1]], %[[X]], %[[NEG]]
func.func @constant_divisors(%x: i32) -> (i32, i32, i32, i32) {
  %c7 = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %cm1 = arith.constant -1 : i32
  %q = arith.divsi %x, %c7 : i32
  %by0 = arith.divsi %x, %c0 : i32
  %rem0 = arith.remsi %x, %c0 : i32
  %bym1 = arith.divsi %x, %cm1 : i32
  return %q, %by0, %rem0, %bym1 : i32, i32, i32, i32
}

// -----

// Shifts: a runtime count of the width or more gives 0 (the sign for shrsi);
// a constant in range is left alone, one out of range is the answer.
// CHECK-LABEL: func.func @shifts(
// CHECK:         %[[W:.*]] = arith.constant dense<32> : tensor<64xi32>
// CHECK:         %[[WIDE:.*]] = arith.cmpi uge, %[[N:.*]], %[[W]]
// CHECK:         %[[SAFE:.*]] = arith.select %[[WIDE]], %{{.*}}, %[[N]]
// CHECK:         %[[S:.*]] = arith.shli %{{.*}}, %[[SAFE]]
// CHECK:         arith.select %[[WIDE]], %{{.*}}, %[[S]]
// CHECK:         %[[C31:.*]] = arith.constant dense<31> : tensor<64xi32>
// CHECK:         %[[SIGN:.*]] = arith.shrsi %{{.*}}, %[[C31]] : tensor<64xi32>
// CHECK:         arith.shrui %{{.*}}, %{{.*}} : tensor<64xi32>
// CHECK:         return
func.func @shifts(%x: tensor<64xi32>, %n: tensor<64xi32>) -> (tensor<64xi32>, tensor<64xi32>, tensor<64xi32>) {
  %s = arith.shli %x, %n : tensor<64xi32>
  %c40 = arith.constant dense<40> : tensor<64xi32>
  %c3 = arith.constant dense<3> : tensor<64xi32>
  %wide = arith.shrsi %x, %c40 : tensor<64xi32>
  %fine = arith.shrui %x, %c3 : tensor<64xi32>
  return %s, %wide, %fine : tensor<64xi32>, tensor<64xi32>, tensor<64xi32>
}

// -----

// Float to integer saturates and maps NaN to 0; the conversion sees 0 for
// any input out of range.
// CHECK-LABEL: func.func @float_to_int(
// CHECK:         %[[HI:.*]] = arith.constant dense<1.280000e+02> : tensor<32xf32>
// CHECK:         %[[TOOHIGH:.*]] = arith.cmpf oge, %[[X:.*]], %[[HI]]
// CHECK:         %[[LO:.*]] = arith.constant dense<-1.280000e+02> : tensor<32xf32>
// CHECK:         %[[TOOLOW:.*]] = arith.cmpf olt, %[[X]], %[[LO]]
// CHECK:         %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK:         %[[SAFE:.*]] = arith.select %{{.*}}, %{{.*}}, %[[X]]
// CHECK:         %[[C:.*]] = arith.fptosi %[[SAFE]] : tensor<32xf32> to tensor<32xi8>
// CHECK:         %[[MAX:.*]] = arith.constant dense<127> : tensor<32xi8>
// CHECK:         %[[R:.*]] = arith.select %[[TOOHIGH]], %[[MAX]], %[[C]]
// CHECK:         %[[MIN:.*]] = arith.constant dense<-128> : tensor<32xi8>
// CHECK:         arith.select %[[TOOLOW]], %[[MIN]], %[[R]]
func.func @float_to_int(%x: tensor<32xf32>) -> tensor<32xi8> {
  %i = arith.fptosi %x : tensor<32xf32> to tensor<32xi8>
  return %i : tensor<32xi8>
}
