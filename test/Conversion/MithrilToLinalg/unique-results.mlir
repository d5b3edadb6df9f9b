// RUN: mithril-opt %s --pass-pipeline='builtin.module(func.func(mithril-unique-results))' | FileCheck %s

// A value returned twice fills two caller buffers: the second use returns a
// copy into a fresh tensor; a value returned once stays as it is.
// CHECK-LABEL: func.func @twice
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x4xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%arg0 : tensor<?x4xf32>) outs(%[[E]] : tensor<?x4xf32>)
// CHECK: return %arg0, %[[C]], %arg1
func.func @twice(%x: tensor<?x4xf32>, %y: tensor<2xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<2xf32>) {
  return %x, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @once
// CHECK-NOT: linalg.copy
// CHECK: return %arg0, %arg1
func.func @once(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %x, %y : tensor<4xf32>, tensor<4xf32>
}
