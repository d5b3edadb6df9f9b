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

// An update `new:w` of an argument `w` gets an empty tensor of its own (not
// the one its gradient is computed in), through the loop that computes it;
// another result keeps the shared one.
// CHECK-LABEL: func.func @update
// CHECK: %[[OWN:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[SHARED:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[GRAD:.*]] = linalg.generic {{.*}} outs(%[[SHARED]] : tensor<8xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[OWN]])
// CHECK: %[[OTHER:.*]] = linalg.generic {{.*}} outs(%[[SHARED]] : tensor<8xf32>)
// CHECK: return
#id = affine_map<(d0) -> (d0)>
func.func @update(%w: tensor<8xf32> {mithril.name = "w"}, %x: tensor<8xf32> {mithril.name = "x"})
    -> (tensor<8xf32> {mithril.name = "new:w"}, tensor<8xf32> {mithril.name = "y"}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %empty = tensor.empty() : tensor<8xf32>
  %grad = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %new = scf.for %i = %c0 to %c8 step %c4 iter_args(%acc = %empty) -> (tensor<8xf32>) {
    %ws = tensor.extract_slice %w[%i] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %gs = tensor.extract_slice %grad[%i] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %us = arith.subf %ws, %gs : tensor<4xf32>
    %ins = tensor.insert_slice %us into %acc[%i] [4] [1] : tensor<4xf32> into tensor<8xf32>
    scf.yield %ins : tensor<8xf32>
  }
  %other = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  return %new, %other : tensor<8xf32>, tensor<8xf32>
}
