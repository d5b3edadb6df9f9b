// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg=index-errors=true | FileCheck %s
// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg | FileCheck %s --check-prefix=CLAMP

// Gathers by data clamp every index into range; with index-errors the code
// also finds the smallest and largest index in one pass and reports the
// first one out of range, with a message naming the op and the terminal.
// CHECK-DAG: memref.global "private" constant @__mithril_index_message_0 : memref<{{[0-9]+}}xi8> = dense<
// CHECK-DAG: func.func private @mithrilIndexError(i64, i64, i64)
// CHECK-LABEL: func.func @embed
// CHECK: %[[RANGE:.*]]:2 = linalg.generic
// CHECK:   arith.minsi
// CHECK:   arith.maxsi
// CHECK: %[[BAD:.*]] = arith.ori
// CHECK: scf.if %[[BAD]] {
// CHECK:   memref.get_global @__mithril_index_message_0
// CHECK:   func.call @mithrilIndexError(
// CHECK: linalg.generic
// CHECK:   arith.minsi
// CHECK:   arith.maxsi
// CHECK:   tensor.extract
// CLAMP-NOT: mithrilIndexError
// CLAMP-LABEL: func.func @embed
// CLAMP: linalg.generic
// CLAMP:   arith.minsi
// CLAMP:   arith.maxsi
// CLAMP:   tensor.extract
mithril.model @embed(data %ids: tensor<4xi64>, param %table: tensor<5x3xf32>) -> (y: tensor<4x3xf32>) {
  %0 = mithril.embedding %ids, %table : (tensor<4xi64>, tensor<5x3xf32>) -> tensor<4x3xf32>
  mithril.output %0 : tensor<4x3xf32>
}
