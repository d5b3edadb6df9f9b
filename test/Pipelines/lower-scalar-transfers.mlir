// RUN: mithril-opt %s --mithril-lower-scalar-transfers | FileCheck %s

// A 0-d read of a buffer with a non-unit innermost stride (a phase of a
// strided convolution) becomes a load and a broadcast: neither
// convert-vector-to-scf nor the LLVM lowering takes it.
// CHECK-LABEL: func.func @strided_scalar_read
// CHECK: %[[V:.*]] = memref.load %arg0[%{{.*}}, %{{.*}}] : memref<1x1xf64, strided<[2, 3]>>
// CHECK: vector.broadcast %[[V]] : f64 to vector<f64>
// CHECK-NOT: vector.transfer_read
func.func @strided_scalar_read(%m: memref<1x1xf64, strided<[2, 3]>>) -> vector<f64> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f64
  %v = vector.transfer_read %m[%c0, %c0], %pad : memref<1x1xf64, strided<[2, 3]>>, vector<f64>
  return %v : vector<f64>
}

// A one-element write becomes an extract and a store (upstream's patterns).
// CHECK-LABEL: func.func @scalar_write
// CHECK: %[[E:.*]] = vector.extract %arg1[] : f64 from vector<f64>
// CHECK: memref.store %[[E]], %arg0[%{{.*}}]
func.func @scalar_write(%m: memref<4xf64, strided<[3]>>, %v: vector<f64>) {
  %c0 = arith.constant 0 : index
  vector.transfer_write %v, %m[%c0] : vector<f64>, memref<4xf64, strided<[3]>>
  return
}
