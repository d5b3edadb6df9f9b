// RUN: mithril-opt %s -mithril-autodiff -mithril-optimizer="algorithm=sgd momentum=0.9" | FileCheck %s --check-prefix=SGD
// RUN: mithril-opt %s -mithril-autodiff -mithril-optimizer="algorithm=adam" | FileCheck %s --check-prefix=ADAM
// RUN: not mithril-opt %s -mithril-optimizer="algorithm=sgd" 2>&1 | FileCheck %s --check-prefix=NOGRAD

mithril.model @Fit(data %x: tensor<4x2xf32>, param %w: tensor<2xf32>) -> (loss: tensor<f32>) {
  %0 = mithril.multiply %x, %w : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %1 = mithril.mean %0 : (tensor<4x2xf32>) -> tensor<f32>
  mithril.output %1 : tensor<f32>
}

// The gradient output becomes the updated parameter; the learning rate and
// the optimizer's state are terminals.
// SGD-LABEL: mithril.model @Fit(
// SGD-SAME: data "grad:loss" %{{[a-z0-9]+}}: tensor<f32>, data %optimizer.lr: tensor<f32>, data "state:w.velocity" %{{[a-z0-9]+}}: tensor<2xf32>)
// SGD-SAME: -> (loss: tensor<f32>, "new:state:w.velocity": tensor<2xf32>, "new:w": tensor<2xf32>)
// SGD-NOT: grad:w

// ADAM-LABEL: mithril.model @Fit(
// ADAM-SAME: data %optimizer.lr: tensor<f32>, data %optimizer.step: tensor<f32>, data "state:w.m" %{{[a-z0-9]+}}: tensor<2xf32>, data "state:w.v" %{{[a-z0-9]+}}: tensor<2xf32>)
// ADAM-SAME: -> (loss: tensor<f32>, "new:state:w.m": tensor<2xf32>, "new:state:w.v": tensor<2xf32>, "new:w": tensor<2xf32>)
// ADAM: sqrt

// NOGRAD: the model has no gradient outputs; run mithril-autodiff first

// Loss scaling (float16 training): the gradient divided by the scale the loss
// was seeded with; the update taken only if every gradient is finite (a sum of
// g * 0 is NaN otherwise), which the output optimizer.finite reports.
// RUN: mithril-opt %s -split-input-file -mithril-autodiff="entry=Fit" -mithril-optimizer="entry=Fit algorithm=sgd loss-scaling=true" | FileCheck %s --check-prefix=SCALED
// SCALED-LABEL: mithril.model @Fit(
// SCALED-SAME: data %optimizer.lr: tensor<f32>, data %optimizer.loss_scale: tensor<f32>)
// SCALED-SAME: -> (loss: tensor<f32>, "new:w": tensor<2xf32>, optimizer.finite: tensor<i1>)
// SCALED: %[[G:.+]] = divide %{{.+}}, %optimizer.loss_scale
// SCALED: %[[Z:.+]] = multiply %[[G]], %{{.+}}
// SCALED: %[[S:.+]] = sum %[[Z]]
// SCALED: %[[FINITE:.+]] = equal %[[S]], %[[S]]
// SCALED: %[[STEP:.+]] = multiply %[[G]], %optimizer.lr
// SCALED: %[[NEW:.+]] = subtract %w, %[[STEP]]
// SCALED: %[[KEPT:.+]] = where %[[FINITE]], %[[NEW]], %w
// SCALED: output %{{.+}}, %[[KEPT]], %[[FINITE]]

// bfloat16 parameters: the update is computed in float32 (0.999 is 1 in
// bfloat16) and rounded once; terminals keep their type.
// RUN: mithril-opt %s -split-input-file -mithril-autodiff="entry=Half" -mithril-optimizer="entry=Half algorithm=adam" | FileCheck %s --check-prefix=BF16
// BF16-LABEL: mithril.model @Half(
// BF16-SAME: data %optimizer.lr: tensor<bf16>, data %optimizer.step: tensor<bf16>
// BF16-SAME: "new:w": tensor<2xbf16>
// BF16-DAG: constant dense<9.990000e-01> : tensor<f32>
// BF16-DAG: cast %w {element_type = f32} : (tensor<2xbf16>) -> tensor<2xf32>
// BF16: %[[NEW:.*]] = cast %{{.*}} {element_type = bf16} : (tensor<2xf32>) -> tensor<2xbf16>
mithril.model @Half(data %x: tensor<4x2xbf16>, param %w: tensor<2xbf16>) -> (loss: tensor<bf16>) {
  %0 = mithril.multiply %x, %w : (tensor<4x2xbf16>, tensor<2xbf16>) -> tensor<4x2xbf16>
  %1 = mithril.mean %0 : (tensor<4x2xbf16>) -> tensor<bf16>
  mithril.output %1 : tensor<bf16>
}
