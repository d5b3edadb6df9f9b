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

// A one-element write becomes an extract and a store.
// CHECK-LABEL: func.func @scalar_write
// CHECK: %[[E:.*]] = vector.extract %arg1[] : f64 from vector<f64>
// CHECK: memref.store %[[E]], %arg0[%{{.*}}]
func.func @scalar_write(%m: memref<4xf64, strided<[3]>>, %v: vector<f64>) {
  %c0 = arith.constant 0 : index
  vector.transfer_write %v, %m[%c0] : vector<f64>, memref<4xf64, strided<[3]>>
  return
}

// An element of an in-bounds read becomes a load of that element where it
// is extracted, its position added to the index of the dimension it reads.
// CHECK-LABEL: func.func @extract_of_read
// CHECK-SAME:      (%[[M:.*]]: memref<4x2xf64>, %[[I:.*]]: index)
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[ROW:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK: %[[E:.*]] = memref.load %[[M]][%[[ROW]], %{{.*}}] : memref<4x2xf64>
// CHECK: return %[[E]]
func.func @extract_of_read(%m: memref<4x2xf64>, %i: index) -> f64 {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f64
  %v = vector.transfer_read %m[%i, %c0], %pad {in_bounds = [true, true]}
      : memref<4x2xf64>, vector<2x1xf64>
  %e = vector.extract %v[1, 0] : f64 from vector<2x1xf64>
  return %e : f64
}

// Not when the buffer may change (here is freed) between the read and the
// extract: the load would read it after.
// CHECK-LABEL: func.func @extract_after_free
// CHECK: %[[V:.*]] = vector.transfer_read
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: vector.extract %[[V]][1, 0]
// CHECK-NOT: memref.load
func.func @extract_after_free(%m: memref<4x2xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f64
  %v = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]}
      : memref<4x2xf64>, vector<2x1xf64>
  memref.dealloc %m : memref<4x2xf64>
  %e = vector.extract %v[1, 0] : f64 from vector<2x1xf64>
  return %e : f64
}

// Nor inside a loop that writes memory.
// CHECK-LABEL: func.func @extract_in_writing_loop
// CHECK: vector.transfer_read
// CHECK: scf.for
// CHECK-NOT: memref.load
// CHECK: vector.extract
func.func @extract_in_writing_loop(%m: memref<4x2xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f64
  %v = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]}
      : memref<4x2xf64>, vector<2x1xf64>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %pad, %m[%c0, %c0] : memref<4x2xf64>
    %e = vector.extract %v[0, 0] : f64 from vector<2x1xf64>
    memref.store %e, %m[%c1, %c0] : memref<4x2xf64>
  }
  return
}
