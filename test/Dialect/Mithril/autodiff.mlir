// RUN: mithril-opt %s -mithril-autodiff -canonicalize -cse | FileCheck %s

// Gradients are mithril ops appended to the model: seeds come in as
// grad:<output>, gradients leave as grad:<input>; data inputs get none.
// CHECK-LABEL: mithril.model @Linear(
// CHECK-SAME: data "grad:output" %[[SEED:[^:]+]]: tensor<4x3xf32>)
// CHECK-SAME: -> (output: tensor<4x3xf32>, "grad:weight": tensor<3x2xf32>, "grad:bias": tensor<3xf32>)
// CHECK-DAG: %[[DB:.+]] = sum %[[SEED]] {axes = array<i64: 0>, keepdim = true}
// CHECK-DAG: %[[XT:.+]] = transpose %input {permutation = array<i64: 1, 0>}
// CHECK-DAG: %[[DWT:.+]] = matmul %[[XT]], %[[SEED]]
// CHECK-DAG: %[[DW:.+]] = transpose %[[DWT]] {permutation = array<i64: 1, 0>}
// CHECK: output %{{.+}}, %[[DW]], %{{.+}}
mithril.model @Linear(data %input: tensor<4x2xf32>, param %weight: tensor<3x2xf32>, param %bias: tensor<3xf32>) -> (output: tensor<4x3xf32>) {
  %wt = mithril.transpose %weight : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %mm = mithril.matmul %input, %wt : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %y = mithril.add %mm, %bias : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  mithril.output %y : tensor<4x3xf32>
}

// A weight applied to every matrix of a batch (a Linear on a sequence):
// its gradient is one product of the batch's stacked rows, 8 deep, not a
// batch of 2-deep products summed after.
// CHECK-LABEL: mithril.model @SequenceLinear(
// CHECK-SAME: data "grad:output" %[[SEED:[^:]+]]: tensor<4x2x3xf32>)
// CHECK-DAG: %[[SEEDROWS:.+]] = reshape %[[SEED]] {shape = array<i64: 8, 3>}
// CHECK-DAG: %[[ROWS:.+]] = reshape %input {shape = array<i64: 8, 5>}
// CHECK-DAG: %[[ROWST:.+]] = transpose %[[ROWS]] {permutation = array<i64: 1, 0>} : (tensor<8x5xf32>) -> tensor<5x8xf32>
// CHECK-DAG: %[[DWT:.+]] = matmul %[[ROWST]], %[[SEEDROWS]] : (tensor<5x8xf32>, tensor<8x3xf32>) -> tensor<5x3xf32>
// CHECK-DAG: %[[DW:.+]] = transpose %[[DWT]] {permutation = array<i64: 1, 0>}
// CHECK-NOT: sum
// CHECK: output %{{.+}}, %[[DW]]
mithril.model @SequenceLinear(data %input: tensor<4x2x5xf32>, param %weight: tensor<3x5xf32>) -> (output: tensor<4x2x3xf32>) {
  %wt = mithril.transpose %weight : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %y = mithril.matmul %input, %wt : (tensor<4x2x5xf32>, tensor<5x3xf32>) -> tensor<4x2x3xf32>
  mithril.output %y : tensor<4x2x3xf32>
}

// A convolution with unit stride and dilation differentiates its input into
// another convolution, which gets the forward schedule: of the output
// gradient (padded by kernel - 1 - padding) with the kernel flipped and its
// channels swapped. Its weight gradient stays conv_grad_weight, which the
// linalg lowering sums over flat rows.
// CHECK-LABEL: mithril.model @Conv(
// CHECK-DAG: %[[WT:.+]] = transpose %w {permutation = array<i64: 1, 0, 2, 3>} : (tensor<8x3x3x3xf32>) -> tensor<3x8x3x3xf32>
// CHECK-DAG: %[[FLIP:.+]] = reverse %[[WT]] {axes = array<i64: 2, 3>}
// CHECK-DAG: %[[GX:.+]] = conv2d %{{.+}}, %[[FLIP]] {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<3x8x3x3xf32>) -> tensor<2x3x6x6xf32>
// CHECK-DAG: %[[GW:.+]] = conv_grad_weight %x, %{{.+}} {{.*}} : (tensor<2x3x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<8x3x3x3xf32>
// CHECK-NOT: conv_grad_input
mithril.model @Conv(param %x: tensor<2x3x6x6xf32>, param %w: tensor<8x3x3x3xf32>) -> (y: tensor<2x8x6x6xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x6x6xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32>
  mithril.output %y : tensor<2x8x6x6xf32>
}

// Strided convolutions keep the general gradient ops.
// CHECK-LABEL: mithril.model @Strided(
// CHECK: conv_grad_input
// CHECK: conv_grad_weight
mithril.model @Strided(param %x: tensor<2x3x6x6xf32>, param %w: tensor<8x3x3x3xf32>) -> (y: tensor<2x8x2x2xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x3x6x6xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x2x2xf32>
  mithril.output %y : tensor<2x8x2x2xf32>
}

// Pad's gradient is the slice of the output gradient over the input, on the
// padded axes only.
// CHECK-LABEL: mithril.model @Pad(
// CHECK: %[[G:.+]] = slice %{{.+}} {axes = array<i64: 1>, start = array<i64: 2>, step = array<i64: 1>, stop = array<i64: 5>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
mithril.model @Pad(param %w: tensor<4x3xf32>) -> (output: tensor<4x6xf32>) {
  %p = mithril.pad %w {pad_width = array<i64: 0, 0, 2, 1>} : (tensor<4x3xf32>) -> tensor<4x6xf32>
  mithril.output %p : tensor<4x6xf32>
}

// A triangular solve X = L^-1 B differentiates B into the transposed solve
// L^-T dX and L into -tril(L^-T dX X^T): only L's lower triangle is read.
// CHECK-LABEL: mithril.model @TriangularSolve(
// CHECK-SAME: data "grad:x" %[[SEED:[^:]+]]: tensor<3x2xf64>)
// CHECK: %[[X:.+]] = triangular_solve %l, %b : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
// CHECK: %[[DB:.+]] = triangular_solve %l, %[[SEED]] {transpose = true}
// CHECK: %[[XT:.+]] = transpose %[[X]]
// CHECK: %[[OUTER:.+]] = matmul %[[DB]], %[[XT]]
// CHECK: %[[LOWER:.+]] = tril %[[OUTER]] :
// CHECK: %[[DL:.+]] = negate %[[LOWER]]
// CHECK: output %[[X]], %[[DL]], %[[DB]]
mithril.model @TriangularSolve(param %l: tensor<3x3xf64>, param %b: tensor<3x2xf64>) -> (x: tensor<3x2xf64>) {
  %x = mithril.triangular_solve %l, %b : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  mithril.output %x : tensor<3x2xf64>
}

// With an upper, transposed matrix (X = U^-T B), B's adjoint is U^-1 dX and
// U's is -triu(X dB^T): the matrix less its strict lower triangle.
// CHECK-LABEL: mithril.model @UpperTransposed(
// CHECK: %[[X:.+]] = triangular_solve %u, %b {lower = false, transpose = true}
// CHECK: %[[DB:.+]] = triangular_solve %u, %{{.+}} {lower = false} :
// CHECK: %[[DBT:.+]] = transpose %[[DB]]
// CHECK: %[[OUTER:.+]] = matmul %[[X]], %[[DBT]]
// CHECK: %[[STRICT:.+]] = tril %[[OUTER]] {diagonal = -1 : i64}
// CHECK: %[[UPPER:.+]] = subtract %[[OUTER]], %[[STRICT]]
// CHECK: %[[DU:.+]] = negate %[[UPPER]]
// CHECK: output %[[X]], %[[DU]] :
mithril.model @UpperTransposed(param %u: tensor<3x3xf64>, data %b: tensor<3x2xf64>) -> (x: tensor<3x2xf64>) {
  %x = mithril.triangular_solve %u, %b {lower = false, transpose = true} : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  mithril.output %x : tensor<3x2xf64>
}

// Cholesky's gradient: Phi(L^T dL) (the lower triangle, diagonal halved),
// two solves with L^T, and the symmetric part.
// CHECK-LABEL: mithril.model @Cholesky(
// CHECK-SAME: data "grad:l" %[[SEED:[^:]+]]: tensor<3x3xf64>)
// CHECK-DAG: %[[HALF:.+]] = constant dense<5.000000e-01> : tensor<f64>
// CHECK-DAG: %[[L:.+]] = cholesky %a : (tensor<3x3xf64>) -> tensor<3x3xf64>
// CHECK: %[[LT:.+]] = transpose %[[L]]
// CHECK: %[[P:.+]] = matmul %[[LT]], %[[SEED]]
// CHECK: %[[EYE:.+]] = eye_like %[[P]]
// CHECK: %[[DIAG:.+]] = multiply %[[P]], %[[EYE]]
// CHECK: %[[HALFDIAG:.+]] = multiply %[[DIAG]], %[[HALF]]
// CHECK: %[[LOWER:.+]] = tril %[[P]] :
// CHECK: %[[PHI:.+]] = subtract %[[LOWER]], %[[HALFDIAG]]
// CHECK: %[[LEFT:.+]] = triangular_solve %[[L]], %[[PHI]] {transpose = true}
// CHECK: %[[LEFTT:.+]] = transpose %[[LEFT]]
// CHECK: %[[BOTH:.+]] = triangular_solve %[[L]], %[[LEFTT]] {transpose = true}
// CHECK: %[[BOTHT:.+]] = transpose %[[BOTH]]
// CHECK: %[[SUM:.+]] = add %[[BOTH]], %[[BOTHT]]
// CHECK: %[[DA:.+]] = multiply %[[SUM]], %[[HALF]]
// CHECK: output %[[L]], %[[DA]] :
mithril.model @Cholesky(param %a: tensor<3x3xf64>) -> (l: tensor<3x3xf64>) {
  %l = mithril.cholesky %a : (tensor<3x3xf64>) -> tensor<3x3xf64>
  mithril.output %l : tensor<3x3xf64>
}

// tril passes the same triangle of its gradient.
// CHECK-LABEL: mithril.model @Tril(
// CHECK-SAME: data "grad:t" %[[SEED:[^:]+]]: tensor<3x3xf64>)
// CHECK: %[[G:.+]] = tril %[[SEED]] {diagonal = -1 : i64}
// CHECK: output %{{.+}}, %[[G]] :
mithril.model @Tril(param %a: tensor<3x3xf64>) -> (t: tensor<3x3xf64>) {
  %t = mithril.tril %a {diagonal = -1 : i64} : (tensor<3x3xf64>) -> tensor<3x3xf64>
  mithril.output %t : tensor<3x3xf64>
}

// A custom call's gradient: one call of its gradient function per
// differentiated operand, with the operands, the result, the result's
// adjoint and the operand's index; data operands get none.
// CHECK-LABEL: mithril.model @Custom(
// CHECK: %[[Y:.+]] = custom_call %x, %w {callee = "scale", grad_callee = "scale_grad"}
// CHECK: %[[DW:.+]] = custom_call %x, %w, %[[Y]], %{{.+}} {callee = "scale_grad", index = 1 : i64, shape_of = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
// CHECK-NOT: index = 0
// CHECK: output %[[Y]], %[[DW]]
mithril.model @Custom(data %x: tensor<4x8xf32>, param %w: tensor<8xf32>) -> (y: tensor<4x8xf32>) {
  %y = mithril.custom_call %x, %w {callee = "scale", grad_callee = "scale_grad"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  mithril.output %y : tensor<4x8xf32>
}
