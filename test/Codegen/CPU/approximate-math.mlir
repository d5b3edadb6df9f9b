// float32 exp and tanh become vector polynomials (no libm call per element);
// float64 and the functions not listed stay math ops for libm.
// RUN: mithril-opt %s --mithril-approximate-math="functions=exp,tanh" | FileCheck %s

// CHECK-LABEL: func.func @f32
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK: math.log %{{.+}} : vector<16xf32>
func.func @f32(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %e = math.exp %x : vector<16xf32>
  %t = math.tanh %x : vector<16xf32>
  %l = math.log %x : vector<16xf32>
  return %e, %t, %l : vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// CHECK-LABEL: func.func @f64
// CHECK: math.exp %{{.+}} : vector<8xf64>
// CHECK: math.tanh %{{.+}} : vector<8xf64>
func.func @f64(%x: vector<8xf64>) -> (vector<8xf64>, vector<8xf64>) {
  %e = math.exp %x : vector<8xf64>
  %t = math.tanh %x : vector<8xf64>
  return %e, %t : vector<8xf64>, vector<8xf64>
}

// log1p's expansion computes log(1 + x): that log is approximated with it
// (else the backend called logf once per lane), while the model's own log
// stays a math op when `functions` does not name it.
// RUN: mithril-opt %s --mithril-approximate-math="functions=log1p" | FileCheck %s --check-prefix=LOG1P
// LOG1P-LABEL: func.func @log1p(
// LOG1P-NOT: math.log1p
// LOG1P: math.log %arg1 : vector<16xf32>
// LOG1P-NOT: math.log
// LOG1P: return
func.func @log1p(%x: vector<16xf32>, %y: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>) {
  %p = math.log1p %x : vector<16xf32>
  %l = math.log %y : vector<16xf32>
  return %p, %l : vector<16xf32>, vector<16xf32>
}

// The model's own log, when listed: subnormal inputs are scaled by 2^24 into
// the normal range and 24 ln 2 taken off after, around the polynomial.
// RUN: mithril-opt %s --mithril-approximate-math="functions=log" | FileCheck %s --check-prefix=LOG
// LOG-LABEL: func.func @log(
// LOG: %[[ABS:.+]] = math.absf %arg0 : vector<16xf32>
// LOG: %[[TINY:.+]] = arith.cmpf olt, %[[ABS]], %{{.+}} : vector<16xf32>
// LOG: %[[UP:.+]] = arith.mulf %arg0, %{{.+}} : vector<16xf32>
// LOG: arith.select %[[TINY]], %[[UP]], %arg0 : vector<16xi1>, vector<16xf32>
// LOG-NOT: math.log
// LOG: math.fma
// LOG: arith.subf
// LOG: arith.select %[[TINY]]
// LOG: math.log %{{.+}} : vector<8xf64>
func.func @log(%x: vector<16xf32>, %y: vector<8xf64>) -> (vector<16xf32>, vector<8xf64>) {
  %l = math.log %x : vector<16xf32>
  %d = math.log %y : vector<8xf64>
  return %l, %d : vector<16xf32>, vector<8xf64>
}

// float32 erf: two polynomials without a division, x P(x^2) below |x| = 1
// and Q(|x| - 2.46) beyond, |x| clamped to 3.92 (erf rounds to 1 there), the
// sign of x copied back (erf(-0) is -0).
// RUN: mithril-opt %s --mithril-approximate-math="functions=erf" | FileCheck %s --check-prefix=ERF
// ERF-LABEL: func.func @erf(
// ERF-SAME: %[[X:[^:]+]]: vector<16xf32>
// ERF: %[[CLAMP:.+]] = arith.constant dense<3.920000e+00> : vector<16xf32>
// ERF: %[[ABS:.+]] = math.absf %[[X]]
// ERF: %[[A:.+]] = arith.minimumf %[[ABS]], %[[CLAMP]]
// ERF: %[[SQ:.+]] = arith.mulf %[[A]], %[[A]]
// ERF: math.fma %{{.+}}, %[[SQ]]
// ERF: %[[CENTER:.+]] = arith.constant dense<2.460000e+00> : vector<16xf32>
// ERF: %[[T:.+]] = arith.subf %[[A]], %[[CENTER]]
// ERF: math.fma %{{.+}}, %[[T]]
// ERF: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : vector<16xf32>
// ERF: %[[NEAR:.+]] = arith.cmpf olt, %[[A]], %[[ONE]]
// ERF: %[[M:.+]] = arith.select %[[NEAR]]
// ERF: %[[R:.+]] = math.copysign %[[M]], %[[X]]
// ERF-NOT: arith.divf
// ERF: return %[[R]], %{{.+}} : vector<16xf32>, vector<8xf64>
// ERF-NOT: math.erf {{.*}}f32
func.func @erf(%x: vector<16xf32>, %y: vector<8xf64>) -> (vector<16xf32>, vector<8xf64>) {
  %e = math.erf %x : vector<16xf32>
  %d = math.erf %y : vector<8xf64>
  return %e, %d : vector<16xf32>, vector<8xf64>
}
