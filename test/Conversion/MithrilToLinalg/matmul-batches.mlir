// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg | FileCheck %s

// A matrix applied to every matrix of a batch (a Linear on a sequence) is
// one product of the batch's stacked rows: collapses, free on tensors, around
// a linalg.matmul the CPU schedule tiles as any other, whose zero init has
// the product's own shape (a fill the schedule fuses into its tiles).
// CHECK-LABEL: func.func @SequenceLinear(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8x16xf32>
// CHECK-SAME: %[[W:[^:]+]]: tensor<16x12xf32>
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<4x8x16xf32> into tensor<32x16xf32>
// CHECK: %[[INIT:.+]] = linalg.fill {{.*}} -> tensor<32x12xf32>
// CHECK: %[[P:.+]] = linalg.matmul ins(%[[ROWS]], %[[W]] : tensor<32x16xf32>, tensor<16x12xf32>) outs(%[[INIT]] : tensor<32x12xf32>)
// CHECK: %[[Y:.+]] = tensor.expand_shape %[[P]] {{\[}}[0, 1], [2]] output_shape [4, 8, 12]
// CHECK: return %[[Y]]
mithril.model @SequenceLinear(data %x: tensor<4x8x16xf32>, param %w: tensor<16x12xf32>) -> (y: tensor<4x8x12xf32>) {
  %y = mithril.matmul %x, %w : (tensor<4x8x16xf32>, tensor<16x12xf32>) -> tensor<4x8x12xf32>
  mithril.output %y : tensor<4x8x12xf32>
}

// -----

// Unit batch axes of the right matrix go with it: still one product.
// CHECK-LABEL: func.func @UnitBatch(
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : tensor<2x3x5x16xf32> into tensor<30x16xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : tensor<1x1x16x7xf32> into tensor<16x7xf32>
// CHECK: linalg.matmul ins({{.*}} : tensor<30x16xf32>, tensor<16x7xf32>)
// CHECK: tensor.expand_shape {{.*}} output_shape [2, 3, 5, 7]
mithril.model @UnitBatch(data %x: tensor<2x3x5x16xf32>, param %w: tensor<1x1x16x7xf32>) -> (y: tensor<2x3x5x7xf32>) {
  %y = mithril.matmul %x, %w : (tensor<2x3x5x16xf32>, tensor<1x1x16x7xf32>) -> tensor<2x3x5x7xf32>
  mithril.output %y : tensor<2x3x5x7xf32>
}

// -----

// Equal batches beyond one axis (attention's batch and heads) are one
// linalg.batch_matmul over the merged batch axes.
// CHECK-LABEL: func.func @Heads(
// CHECK: %[[Q:.+]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : tensor<2x3x5x16xf32> into tensor<6x5x16xf32>
// CHECK: %[[K:.+]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : tensor<2x3x16x7xf32> into tensor<6x16x7xf32>
// CHECK: %[[INIT:.+]] = linalg.fill {{.*}} -> tensor<6x5x7xf32>
// CHECK: %[[P:.+]] = linalg.batch_matmul ins(%[[Q]], %[[K]] : {{.*}}) outs(%[[INIT]] :
// CHECK: tensor.expand_shape %[[P]] {{\[}}[0, 1], [2], [3]] output_shape [2, 3, 5, 7]
mithril.model @Heads(data %q: tensor<2x3x5x16xf32>, data %k: tensor<2x3x16x7xf32>) -> (y: tensor<2x3x5x7xf32>) {
  %y = mithril.matmul %q, %k : (tensor<2x3x5x16xf32>, tensor<2x3x16x7xf32>) -> tensor<2x3x5x7xf32>
  mithril.output %y : tensor<2x3x5x7xf32>
}

// -----

// Batches that broadcast keep the general contraction, whose maps read the
// unit axis at 0.
// CHECK-DAG: #[[LHS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-LABEL: func.func @Broadcast(
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
mithril.model @Broadcast(data %q: tensor<2x1x5x16xf32>, data %k: tensor<2x3x16x7xf32>) -> (y: tensor<2x3x5x7xf32>) {
  %y = mithril.matmul %q, %k : (tensor<2x1x5x16xf32>, tensor<2x3x16x7xf32>) -> tensor<2x3x5x7xf32>
  mithril.output %y : tensor<2x3x5x7xf32>
}

// -----

// An embedding table's gradient: zeros, then each lookup's row added to the
// (clamped) row it looked up, lookup after lookup.
// CHECK-LABEL: func.func @EmbeddingGrad(
// CHECK-SAME: %[[I:[^:]+]]: tensor<3x5xi64>
// CHECK-SAME: %[[G:[^:]+]]: tensor<3x5x4xf32>
// CHECK-DAG: %[[IDX:.+]] = tensor.collapse_shape %[[I]] {{\[}}[0, 1]] : tensor<3x5xi64> into tensor<15xi64>
// CHECK-DAG: %[[ROWS:.+]] = tensor.collapse_shape %[[G]] {{\[}}[0, 1], [2]] : tensor<3x5x4xf32> into tensor<15x4xf32>
// CHECK: %[[ZERO:.+]] = linalg.fill
// CHECK: scf.for %[[N:.+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T:.+]] = %[[ZERO]]) -> (tensor<7x4xf32>)
// CHECK: %[[V:.+]] = tensor.extract %[[IDX]][%[[N]]]
// CHECK: arith.minsi
// CHECK: %[[ROW:.+]] = arith.maxsi
// CHECK: scf.for %[[D:.+]] = %{{.*}} iter_args(%[[A:.+]] = %[[T]])
// CHECK-DAG: %[[GV:.+]] = tensor.extract %[[ROWS]][%[[N]], %[[D]]]
// CHECK-DAG: %[[TV:.+]] = tensor.extract %[[A]][%[[ROW]], %[[D]]]
// CHECK: %[[S:.+]] = arith.addf %[[TV]], %[[GV]]
// CHECK: tensor.insert %[[S]] into %[[A]][%[[ROW]], %[[D]]]
// CHECK-NOT: linalg.generic
mithril.model @EmbeddingGrad(data %i: tensor<3x5xi64>, data %g: tensor<3x5x4xf32>) -> (y: tensor<7x4xf32>) {
  %y = mithril.embedding_grad %i, %g {num_embeddings = 7 : i64} : (tensor<3x5xi64>, tensor<3x5x4xf32>) -> tensor<7x4xf32>
  mithril.output %y : tensor<7x4xf32>
}
