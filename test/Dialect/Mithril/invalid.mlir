// Verifier errors of the mithril dialect, each with the message users see.
// RUN: mithril-opt %s -split-input-file -verify-diagnostics

mithril.model @bad_broadcast(data %a: tensor<4x8xf32>, data %b: tensor<4x9xf32>) -> (out: tensor<4x8xf32>) {
  // expected-error @+2 {{'mithril.add' cannot broadcast terminal 'a' (4x8) with terminal 'b' (4x9)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.add %a, %b : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  mithril.output %0 : tensor<4x8xf32>
}

// -----

mithril.model @mixed_types(data %a: tensor<4xf32>, data %b: tensor<4xf64>) -> (out: tensor<4xf32>) {
  // expected-error @+2 {{'mithril.multiply' operands have different element types: terminal 'a' is 'f32' but terminal 'b' is 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.multiply %a, %b : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @wrong_result(data %a: tensor<4x8xf32>) -> (out: tensor<4x9xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<4x9xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.relu %a : (tensor<4x8xf32>) -> tensor<4x9xf32>
  mithril.output %0 : tensor<4x9xf32>
}

// -----

mithril.model @matmul_mismatch(data %a: tensor<4x8xf32>, param %w: tensor<7x3xf32>) -> (out: tensor<4x3xf32>) {
  // expected-error @+2 {{'mithril.matmul' contraction dimensions differ: terminal 'a' (4x8) has 8 columns but terminal 'w' (7x3) has 7 rows}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.matmul %a, %w : (tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  mithril.output %0 : tensor<4x3xf32>
}

// -----

mithril.model @bad_axes(data %a: tensor<4x8xf32>) -> (out: tensor<4xf32>) {
  // expected-error @+2 {{'mithril.sum' has invalid axes [2] for terminal 'a' (4x8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.sum %a {axes = array<i64: 2>} : (tensor<4x8xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @bad_reshape(data %a: tensor<4x8xf32>) -> (out: tensor<5x6xf32>) {
  // expected-error @+2 {{'mithril.reshape' cannot reshape terminal 'a' (4x8) (32 elements) into [5, 6] (30 elements)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.reshape %a {shape = array<i64: 5, 6>} : (tensor<4x8xf32>) -> tensor<5x6xf32>
  mithril.output %0 : tensor<5x6xf32>
}

// -----

mithril.model @bad_perm(data %a: tensor<4x8xf32>) -> (out: tensor<8x4xf32>) {
  // expected-error @+2 {{'mithril.transpose' permutation [0, 0] is not a permutation of 2 axes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.transpose %a {permutation = array<i64: 0, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  mithril.output %0 : tensor<8x4xf32>
}

// -----

mithril.model @conv_channels(data %x: tensor<1x3x8x8xf32>, param %w: tensor<4x2x3x3xf32>) -> (out: tensor<1x4x6x6xf32>) {
  // expected-error @+2 {{'mithril.conv2d' input terminal 'x' (1x3x8x8) has 3 channels but weight terminal 'w' (4x2x3x3) expects 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  mithril.output %0 : tensor<1x4x6x6xf32>
}

// -----

mithril.model @conv_padding(data %x: tensor<1x3x8x8xf32>, param %w: tensor<4x3x3x3xf32>) -> (out: tensor<1x4x6x6xf32>) {
  // expected-error @+2 {{'mithril.conv2d' needs 4 padding values (before and after each spatial dimension)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  mithril.output %0 : tensor<1x4x6x6xf32>
}

// -----

mithril.model @softmax_axis(data %x: tensor<2x3xf32>) -> (out: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for terminal 'x' (2x3)}}
  %0 = mithril.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  mithril.output %0 : tensor<2x3xf32>
}

// -----

mithril.model @logical_floats(data %a: tensor<4xf32>) -> (out: tensor<4xi1>) {
  // expected-error @+2 {{'mithril.logical_and' expects i1 operands, got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.logical_and %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  mithril.output %0 : tensor<4xi1>
}

// -----

// expected-error @+1 {{has two input terminals named 'x'}}
"mithril.model"() <{function_type = (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>, sym_name = "dup", arg_attrs = [{mithril.name = "x"}, {mithril.name = "x"}], res_attrs = [{mithril.name = "y"}]}> ({
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  "mithril.output"(%a) : (tensor<2xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{duplicate input terminal 'x'}}
mithril.model @dup_custom(data %x: tensor<2xf32>, param "x" %y: tensor<2xf32>) -> (out: tensor<2xf32>) {
  mithril.output %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{expected a terminal role (data, param or const), got 'weight'}}
mithril.model @bad_role(weight %x: tensor<2xf32>) -> (out: tensor<2xf32>) {
  mithril.output %x : tensor<2xf32>
}

// -----

mithril.model @output_count(data %x: tensor<2xf32>) -> (a: tensor<2xf32>, b: tensor<2xf32>) {
  // expected-error @+1 {{feeds 1 values to 2 output terminals of @output_count}}
  mithril.output %x : tensor<2xf32>
}

// -----

mithril.model @output_type(data %x: tensor<2xf32>) -> (a: tensor<3xf32>) {
  // expected-error @+1 {{value for output terminal 'a' has type 'tensor<2xf32>', but the terminal is declared as 'tensor<3xf32>'}}
  mithril.output %x : tensor<2xf32>
}

// -----

mithril.model @Leaf(data %input: tensor<4xf32>) -> (output: tensor<4xf32>) {
  mithril.output %input : tensor<4xf32>
}
mithril.model @unknown_terminal(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{instance 'leaf' binds unknown terminal 'inptu' of @Leaf (its inputs are 'input')}}
  %0 = mithril.instance "leaf" @Leaf(inptu = %x) : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @Leaf(data %input: tensor<4xf32>) -> (output: tensor<4xf32>) {
  mithril.output %input : tensor<4xf32>
}
mithril.model @binding_type(data %x: tensor<5xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{instance 'leaf' binds 'tensor<5xf32>' to terminal 'input' of @Leaf, which expects 'tensor<4xf32>'}}
  %0 = mithril.instance "leaf" @Leaf(input = %x) : (tensor<5xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @no_callee(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{instance 'ghost' refers to @Missing, which is not a mithril.model}}
  %0 = mithril.instance "ghost" @Missing(input = %x) : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @Leaf(data %input: tensor<4xf32>) -> (output: tensor<4xf32>) {
  mithril.output %input : tensor<4xf32>
}
mithril.model @twice(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{instance 'leaf' binds terminal 'input' twice}}
  %0 = mithril.instance "leaf" @Leaf(input = %x, input = %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @bad_threshold(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{'mithril.robust_sqrt' op threshold must be a positive finite number, got -1}}
  %0 = mithril.robust_sqrt %x {threshold = -1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @features_of_a_vector(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+2 {{'mithril.polynomial_features' expects a [samples, features] matrix, got terminal 'x' (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.polynomial_features %x {degree = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @too_many_monomials(data %x: tensor<2x1000xf32>) -> (y: tensor<2x?xf32>) {
  // expected-error @+2 {{'mithril.polynomial_features' of 1000 features at degree 9 has too many monomials}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.polynomial_features %x {degree = 9 : i64} : (tensor<2x1000xf32>) -> tensor<2x?xf32>
  mithril.output %0 : tensor<2x?xf32>
}

// -----

mithril.model @eye_of_a_vector(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{'mithril.eye_like' op expects a matrix, got terminal 'x' (4)}}
  %0 = mithril.eye_like %x : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @shift_floats(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{'mithril.shift_left' op operand #0 must be ranked tensor of signless integer values}}
  %0 = mithril.shift_left %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @reverse_dynamic(data %x: tensor<?x3xf32>) -> (y: tensor<?x3xf32>) {
  // expected-error @+1 {{'mithril.reverse' op reverses axis 0 of terminal 'x' (?x3), whose size is dynamic}}
  %0 = mithril.reverse %x {axes = array<i64: 0>} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  mithril.output %0 : tensor<?x3xf32>
}

// -----

// Misspelled attributes are errors, not silently ignored ones.
mithril.model @attr_typo_softmax(data %x: tensor<2x3xf32>) -> (y: tensor<2x3xf32>) {
  // expected-error @+1 {{'mithril.softmax' op has no attribute 'axs' (it takes: axis)}}
  %0 = mithril.softmax %x {axs = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  mithril.output %0 : tensor<2x3xf32>
}

// -----

mithril.model @attr_typo_leaky(data %x: tensor<2x3xf32>) -> (y: tensor<2x3xf32>) {
  // expected-error @+1 {{'mithril.leaky_relu' op has no attribute 'slop' (it takes: slope)}}
  %0 = mithril.leaky_relu %x {slop = 0.2 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  mithril.output %0 : tensor<2x3xf32>
}

// -----

mithril.model @attr_typo_transpose(data %x: tensor<2x3xf32>) -> (y: tensor<3x2xf32>) {
  // expected-error @+1 {{'mithril.transpose' op has no attribute 'perm' (it takes: permutation)}}
  %0 = mithril.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  mithril.output %0 : tensor<3x2xf32>
}

// -----

mithril.model @attr_on_attrless(data %x: tensor<2x3xf32>) -> (y: tensor<2x3xf32>) {
  // expected-error @+1 {{'mithril.relu' op has no attribute 'inplace' (it takes none)}}
  %0 = mithril.relu %x {inplace = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  mithril.output %0 : tensor<2x3xf32>
}

// -----

mithril.model @layer_norm_weight(data %x: tensor<2x5xf32>, param %w: tensor<3xf32>) -> (y: tensor<2x5xf32>) {
  // expected-error @+2 {{'mithril.layer_norm' weight and bias must have the shape of the normalized axes 5 of terminal 'x' (2x5), got terminal 'w' (3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.layer_norm %x, %w {scaled = true} : (tensor<2x5xf32>, tensor<3xf32>) -> tensor<2x5xf32>
  mithril.output %0 : tensor<2x5xf32>
}

// -----

mithril.model @layer_norm_affine_count(data %x: tensor<2x5xf32>, param %w: tensor<5xf32>) -> (y: tensor<2x5xf32>) {
  // expected-error @+2 {{'mithril.layer_norm' takes 0 weight and bias operands (scaled 0, shifted 0), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.layer_norm %x, %w : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  mithril.output %0 : tensor<2x5xf32>
}

// -----

mithril.model @all_reduce_integers(data %g: tensor<4xi32>) -> (s: tensor<4xi32>) {
  // expected-error @+1 {{'mithril.all_reduce' op operand #0 must be ranked tensor of 32-bit float or 64-bit float values}}
  %0 = mithril.all_reduce %g : (tensor<4xi32>) -> tensor<4xi32>
  mithril.output %0 : tensor<4xi32>
}

// -----

mithril.model @pad_pairs(data %x: tensor<4x3xf32>) -> (p: tensor<5x3xf32>) {
  // expected-error @+2 {{'mithril.pad' needs a (before, after) pair for each of the 2 axes of terminal 'x' (4x3), got 2 sizes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.pad %x {pad_width = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<5x3xf32>
  mithril.output %0 : tensor<5x3xf32>
}

// -----

mithril.model @pad_negative(data %x: tensor<4x3xf32>) -> (p: tensor<3x3xf32>) {
  // expected-error @+2 {{'mithril.pad' sizes must not be negative, got (-1, 0) for axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.pad %x {pad_width = array<i64: -1, 0, 0, 0>} : (tensor<4x3xf32>) -> tensor<3x3xf32>
  mithril.output %0 : tensor<3x3xf32>
}

// -----

mithril.model @tsne_p_joint_not_square(data %d: tensor<3x4xf64>, data %t: tensor<f64>) -> (p: tensor<3x4xf64>) {
  // expected-error @+2 {{'mithril.tsne_p_joint' expects its squared distances to be a square matrix, got terminal 'd' (3x4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.tsne_p_joint %d, %t : (tensor<3x4xf64>, tensor<f64>) -> tensor<3x4xf64>
  mithril.output %0 : tensor<3x4xf64>
}

// -----

mithril.model @tsne_p_joint_perplexities(data %d: tensor<3x3xf64>, data %t: tensor<2xf64>) -> (p: tensor<3x3xf64>) {
  // expected-error @+2 {{'mithril.tsne_p_joint' target_perplexity must hold one element, got terminal 't' (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.tsne_p_joint %d, %t : (tensor<3x3xf64>, tensor<2xf64>) -> tensor<3x3xf64>
  mithril.output %0 : tensor<3x3xf64>
}

// -----

mithril.model @tsne_p_joint_types(data %d: tensor<3x3xf64>, data %t: tensor<f32>) -> (p: tensor<3x3xf64>) {
  // expected-error @+2 {{'mithril.tsne_p_joint' target_perplexity terminal 't' (scalar) has another element type than the distances' 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.tsne_p_joint %d, %t : (tensor<3x3xf64>, tensor<f32>) -> tensor<3x3xf64>
  mithril.output %0 : tensor<3x3xf64>
}

// -----

mithril.model @cholesky_not_square(data %a: tensor<3x4xf64>) -> (l: tensor<3x4xf64>) {
  // expected-error @+2 {{'mithril.cholesky' expects its input to be a square matrix, got terminal 'a' (3x4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.cholesky %a : (tensor<3x4xf64>) -> tensor<3x4xf64>
  mithril.output %0 : tensor<3x4xf64>
}

// -----

mithril.model @cholesky_rank(data %a: tensor<2x3x3xf64>) -> (l: tensor<2x3x3xf64>) {
  // expected-error @+2 {{'mithril.cholesky' expects its input to be a square matrix, got terminal 'a' (2x3x3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.cholesky %a : (tensor<2x3x3xf64>) -> tensor<2x3x3xf64>
  mithril.output %0 : tensor<2x3x3xf64>
}

// -----

mithril.model @cholesky_integers(data %a: tensor<3x3xi64>) -> (l: tensor<3x3xi64>) {
  // expected-error @+1 {{'mithril.cholesky' op operand #0 must be ranked tensor of floating-point values}}
  %0 = mithril.cholesky %a : (tensor<3x3xi64>) -> tensor<3x3xi64>
  mithril.output %0 : tensor<3x3xi64>
}

// -----

mithril.model @triangular_solve_not_square(data %l: tensor<3x2xf64>, data %b: tensor<3x1xf64>) -> (x: tensor<3x1xf64>) {
  // expected-error @+2 {{'mithril.triangular_solve' expects its triangular matrix to be a square matrix, got terminal 'l' (3x2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.triangular_solve %l, %b : (tensor<3x2xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  mithril.output %0 : tensor<3x1xf64>
}

// -----

mithril.model @triangular_solve_rows(data %l: tensor<3x3xf64>, data %b: tensor<4x1xf64>) -> (x: tensor<3x1xf64>) {
  // expected-error @+2 {{'mithril.triangular_solve' right-hand side terminal 'b' (4x1) needs as many rows as the triangular matrix terminal 'l' (3x3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.triangular_solve %l, %b : (tensor<3x3xf64>, tensor<4x1xf64>) -> tensor<3x1xf64>
  mithril.output %0 : tensor<3x1xf64>
}

// -----

mithril.model @triangular_solve_vector(data %l: tensor<3x3xf64>, data %b: tensor<3xf64>) -> (x: tensor<3xf64>) {
  // expected-error @+2 {{'mithril.triangular_solve' expects a [rows, columns] right-hand side, got terminal 'b' (3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.triangular_solve %l, %b : (tensor<3x3xf64>, tensor<3xf64>) -> tensor<3xf64>
  mithril.output %0 : tensor<3xf64>
}

// -----

mithril.model @triangular_solve_types(data %l: tensor<3x3xf64>, data %b: tensor<3x1xf32>) -> (x: tensor<3x1xf32>) {
  // expected-error @+2 {{'mithril.triangular_solve' operands have different element types: 'f64' and 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.triangular_solve %l, %b : (tensor<3x3xf64>, tensor<3x1xf32>) -> tensor<3x1xf32>
  mithril.output %0 : tensor<3x1xf32>
}

// -----

mithril.model @tril_vector(data %x: tensor<4xf32>) -> (t: tensor<4xf32>) {
  // expected-error @+1 {{'mithril.tril' op expects a matrix or a stack of matrices (rank >= 2), got terminal 'x' (4)}}
  %0 = mithril.tril %x : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @random_ints(data %k: tensor<i64>) -> (z: tensor<2xi32>) {
  // expected-error @+1 {{'mithril.random_normal' op result #0 must be ranked tensor of floating-point values, but got 'tensor<2xi32>'}}
  %0 = mithril.random_normal %k {shape = array<i64: 2>, element_type = i32} : (tensor<i64>) -> tensor<2xi32>
  mithril.output %0 : tensor<2xi32>
}

// -----

mithril.model @random_dynamic(data %k: tensor<i64>) -> (z: tensor<?xf32>) {
  // expected-error @+2 {{'mithril.random_normal' needs a static, non-negative shape, got ?}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.random_normal %k {shape = array<i64: -9223372036854775808>, element_type = f32} : (tensor<i64>) -> tensor<?xf32>
  mithril.output %0 : tensor<?xf32>
}

// -----

mithril.model @custom_call_name(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+2 {{'mithril.custom_call' callee 'my op' is not a C function name}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.custom_call %x {callee = "my op"} : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @custom_call_pairs(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+2 {{'mithril.custom_call' @f result_shape must hold (operand, dim) or (-1, size) pairs, got 3 numbers}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.custom_call %x {callee = "f", result_shape = array<i64: 0, 0, 1>} : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @custom_call_dim(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+2 {{'mithril.custom_call' @f result dimension 0 refers to dimension 1 of operand 0, terminal 'x' (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.custom_call %x {callee = "f", result_shape = array<i64: 0, 1>} : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @custom_call_operand(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+2 {{'mithril.custom_call' @f takes the shape of operand 2, but it has 1 operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.custom_call %x {callee = "f", shape_of = 2} : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// -----

mithril.model @custom_call_result(data %x: tensor<4xf32>) -> (y: tensor<5xf32>) {
  // expected-error @+2 {{'mithril.custom_call' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mithril.custom_call %x {callee = "f"} : (tensor<4xf32>) -> tensor<5xf32>
  mithril.output %0 : tensor<5xf32>
}

// -----

mithril.model @unique_operand(data %x: tensor<4xf32>) -> (s: tensor<f32>) {
  // expected-error @+1 {{'mithril.unique' op values have a size that depends on the data (the number of distinct values), so they can only be an output of the model, not an operand of 'mithril.sum'}}
  %v, %n = mithril.unique %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<i64>)
  %s = mithril.sum %v {axes = array<i64: 0>, keepdim = false} : (tensor<4xf32>) -> tensor<f32>
  mithril.output %s : tensor<f32>
}

// -----

func.func @collective_window_dynamic() -> memref<?xi8> {
  // expected-error @+1 {{'mithril.collective_window' op needs a static, non-empty memref of bytes with the identity layout in the default memory space, not 'memref<?xi8>'}}
  %0 = mithril.collective_window : memref<?xi8>
  return %0 : memref<?xi8>
}

// -----

func.func @collective_window_group() -> memref<64xi8> {
  // expected-error @+1 {{'mithril.collective_window' op attribute 'group' failed to satisfy constraint: "data" or "tensor"}}
  %0 = mithril.collective_window {group = "pipeline"} : memref<64xi8>
  return %0 : memref<64xi8>
}

// -----

func.func @collective_window_rank() -> memref<64xi8> {
  // expected-error @+1 {{'mithril.collective_window' op needs a rank of 0 or more, not -1}}
  %0 = mithril.collective_window {rank = -1} : memref<64xi8>
  return %0 : memref<64xi8>
}
