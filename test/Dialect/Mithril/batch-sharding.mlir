// RUN: mithril-opt %s -split-input-file -verify-diagnostics -mithril-batch-sharding="inputs=x,t"

// An MLP's logits stay split along the batch; its loss, a mean over the
// batch, is a partial mean; a term on the weights alone is replicated and
// joins the mean.
// expected-remark@+3 {{output 'logits': sharded<0>}}
// expected-remark@+2 {{output 'loss': partial_mean}}
// expected-remark@+1 {{output 'norm': replicated}}
mithril.model @mlp(data %x: tensor<?x8xf32>, data %t: tensor<?xi64>, param %w: tensor<4x8xf32>,
                   param %b: tensor<4xf32>) -> (logits: tensor<?x4xf32>, loss: tensor<f32>, norm: tensor<f32>) {
  %wt = mithril.transpose %w : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %mm = mithril.matmul %x, %wt : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %y = mithril.add %mm, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %r = mithril.relu %y : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %ce = mithril.cross_entropy %r, %t {from_logits = true} : (tensor<?x4xf32>, tensor<?xi64>) -> tensor<?xf32>
  %m = mithril.mean %ce : (tensor<?xf32>) -> tensor<f32>
  %sq = mithril.square %w : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = mithril.sum %sq : (tensor<4x8xf32>) -> tensor<f32>
  %l = mithril.add %m, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  mithril.output %r, %l, %n : tensor<?x4xf32>, tensor<f32>, tensor<f32>
}

// -----

// Sums over the batch add up across ranks; a product contracting the batch
// (X^T Y) does too. Reshapes that keep the rows, transposes and reductions
// over other axes move the split axis.
// expected-remark@+4 {{output 's': partial_sum}}
// expected-remark@+3 {{output 'g': partial_sum}}
// expected-remark@+2 {{output 'f': sharded<0>}}
// expected-remark@+1 {{output 'c': sharded<1>}}
mithril.model @moves(data %x: tensor<?x2x3xf32>, data %t: tensor<?x5xf32>) -> (s: tensor<2x3xf32>, g: tensor<6x5xf32>, f: tensor<?xf32>, c: tensor<3x?xf32>) {
  %s = mithril.sum %x {axes = array<i64: 0>} : (tensor<?x2x3xf32>) -> tensor<2x3xf32>
  %f6 = mithril.reshape %x {shape = array<i64: -1, 6>} : (tensor<?x2x3xf32>) -> tensor<?x6xf32>
  %ft = mithril.transpose %f6 : (tensor<?x6xf32>) -> tensor<6x?xf32>
  %g = mithril.matmul %ft, %t : (tensor<6x?xf32>, tensor<?x5xf32>) -> tensor<6x5xf32>
  %flat = mithril.flatten %x : (tensor<?x2x3xf32>) -> tensor<?xf32>
  %mx = mithril.max %x {axes = array<i64: 1>} : (tensor<?x2x3xf32>) -> tensor<?x3xf32>
  %c = mithril.transpose %mx : (tensor<?x3xf32>) -> tensor<3x?xf32>
  mithril.output %s, %g, %flat, %c : tensor<2x3xf32>, tensor<6x5xf32>, tensor<?xf32>, tensor<3x?xf32>
}

// -----

// A softmax along the batch needs every rank's rows.
mithril.model @softmax_over_batch(data %x: tensor<?x4xf32>, data %t: tensor<?xf32>) -> (y: tensor<?x4xf32>) {
  // expected-error@+1 {{data parallelism: 'mithril.softmax' cannot run on batch shards: it works across axis 0, the batch axis split across ranks (operands: sharded<0>)}}
  %y = mithril.softmax %x {axis = 0} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  mithril.output %y : tensor<?x4xf32>
}

// -----

// The maximum over the batch does not combine from the ranks' maxima here.
mithril.model @max_over_batch(data %x: tensor<?x4xf32>, data %t: tensor<?xf32>) -> (y: tensor<4xf32>) {
  // expected-error@+1 {{'mithril.max' cannot run on batch shards: it reduces over the batch axis}}
  %y = mithril.max %x {axes = array<i64: 0>} : (tensor<?x4xf32>) -> tensor<4xf32>
  mithril.output %y : tensor<4xf32>
}

// -----

// A nonlinear function of a mean over the batch needs the whole mean.
mithril.model @log_of_mean(data %x: tensor<?xf32>, data %t: tensor<?xf32>) -> (y: tensor<f32>) {
  %m = mithril.mean %x : (tensor<?xf32>) -> tensor<f32>
  // expected-error@+1 {{'mithril.log' cannot run on batch shards: it needs the whole value of a sum or mean over the batch}}
  %y = mithril.log %m : (tensor<f32>) -> tensor<f32>
  mithril.output %y : tensor<f32>
}

// -----

// A partial sum plus a replicated value would count the latter once per rank.
mithril.model @sum_plus_constant(data %x: tensor<?xf32>, data %t: tensor<?xf32>, param %c: tensor<f32>) -> (y: tensor<f32>) {
  %s = mithril.sum %x : (tensor<?xf32>) -> tensor<f32>
  // expected-error@+1 {{'mithril.add' cannot run on batch shards: it adds a partial_sum to a replicated value}}
  %y = mithril.add %s, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  mithril.output %y : tensor<f32>
}

// -----

// Batch-norm statistics of the batch are means over it: normalizing with
// them needs their whole value.
mithril.model @batch_norm(data %x: tensor<?x3xf32>, data %t: tensor<?xf32>, param %w: tensor<3xf32>, param %b: tensor<3xf32>) -> (y: tensor<?x3xf32>) {
  %m = mithril.mean %x {axes = array<i64: 0>} : (tensor<?x3xf32>) -> tensor<3xf32>
  %v = mithril.variance %x {axes = array<i64: 0>} : (tensor<?x3xf32>) -> tensor<3xf32>
  // expected-error@-1 {{'mithril.variance' cannot run on batch shards: it reduces over the batch axis}}
  %y = mithril.batch_norm %x, %m, %v, %w, %b : (tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  mithril.output %y : tensor<?x3xf32>
}

// -----

// The split inputs' batch axis must be dynamic.
// expected-error@+1 {{data parallelism: input 'x' is split along its axis 0, which must be dynamic (?)}}
mithril.model @static_batch(data %x: tensor<4x3xf32>, data %t: tensor<?xf32>) -> (y: tensor<4x3xf32>) {
  mithril.output %x : tensor<4x3xf32>
}

// -----

// An argmax along another axis keeps the batch split; along the batch it
// cannot combine across ranks.
// expected-remark@+1 {{output 'i': sharded<0>}}
mithril.model @argmax(data %x: tensor<?x4xf32>, data %t: tensor<?xf32>) -> (i: tensor<?xi64>) {
  %i = mithril.argmax %x {axis = 1} : (tensor<?x4xf32>) -> tensor<?xi64>
  mithril.output %i : tensor<?xi64>
}

// -----

mithril.model @argmax_over_batch(data %x: tensor<?x4xf32>, data %t: tensor<?xf32>) -> (i: tensor<4xi64>) {
  // expected-error@+1 {{'mithril.argmax' cannot run on batch shards: it reduces over the batch axis}}
  %i = mithril.argmax %x {axis = 0} : (tensor<?x4xf32>) -> tensor<4xi64>
  mithril.output %i : tensor<4xi64>
}

// -----

// Padding other axes keeps the rows apart; padding the batch axis cannot run
// on shards.
// expected-remark@+1 {{output 'p': sharded<0>}}
mithril.model @pad_features(data %x: tensor<?x4xf32>, data %t: tensor<?xf32>) -> (p: tensor<?x6xf32>) {
  %p = mithril.pad %x {pad_width = array<i64: 0, 0, 1, 1>} : (tensor<?x4xf32>) -> tensor<?x6xf32>
  mithril.output %p : tensor<?x6xf32>
}

// -----

mithril.model @pad_batch(data %x: tensor<?x4xf32>, data %t: tensor<?xf32>) -> (p: tensor<?x4xf32>) {
  // expected-error@+1 {{'mithril.pad' cannot run on batch shards}}
  %p = mithril.pad %x {pad_width = array<i64: 1, 0, 0, 0>} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  mithril.output %p : tensor<?x4xf32>
}

// -----

// A triangular solve runs on each column of its right-hand side: columns
// split across ranks stay split; a triangular matrix of the rows does not
// run on shards.
// expected-remark@+1 {{output 'y': sharded<1>}}
mithril.model @solve_columns(data %x: tensor<?x4xf64>, data %t: tensor<?xf64>, param %l: tensor<4x4xf64>) -> (y: tensor<4x?xf64>) {
  %xt = mithril.transpose %x : (tensor<?x4xf64>) -> tensor<4x?xf64>
  %y = mithril.triangular_solve %l, %xt : (tensor<4x4xf64>, tensor<4x?xf64>) -> tensor<4x?xf64>
  mithril.output %y : tensor<4x?xf64>
}

// -----

mithril.model @solve_rows(data %x: tensor<?x4xf64>, data %t: tensor<?xf64>, param %l: tensor<4x4xf64>) -> (y: tensor<?x4xf64>) {
  // expected-error@+1 {{'mithril.triangular_solve' cannot run on batch shards: it solves across the rows of its right-hand side, the batch axis split across ranks (operands: replicated, sharded<0>)}}
  %y = mithril.triangular_solve %l, %x : (tensor<4x4xf64>, tensor<?x4xf64>) -> tensor<?x4xf64>
  mithril.output %y : tensor<?x4xf64>
}

// -----

mithril.model @solve_sharded_matrix(data %x: tensor<?x4xf64>, data %t: tensor<?xf64>, param %b: tensor<4x2xf64>) -> (y: tensor<4x2xf64>) {
  // expected-error@+1 {{'mithril.triangular_solve' cannot run on batch shards: its triangular matrix is split across ranks}}
  %y = mithril.triangular_solve %x, %b : (tensor<?x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  mithril.output %y : tensor<4x2xf64>
}

// -----

mithril.model @cholesky_rows(data %x: tensor<?x4xf64>, data %t: tensor<?xf64>) -> (l: tensor<4x4xf64>) {
  // expected-error@+1 {{'mithril.cholesky' cannot run on batch shards: it factors the whole matrix, whose rows are split across ranks}}
  %l = mithril.cholesky %x : (tensor<?x4xf64>) -> tensor<4x4xf64>
  mithril.output %l : tensor<4x4xf64>
}

// -----

// tril keeps a stack of matrices split along the stack; within a matrix it
// needs the rows' global positions.
// expected-remark@+1 {{output 'lower': sharded<0>}}
mithril.model @tril_stack(data %x: tensor<?x3x3xf64>, data %t: tensor<?xf64>) -> (lower: tensor<?x3x3xf64>) {
  %l = mithril.tril %x : (tensor<?x3x3xf64>) -> tensor<?x3x3xf64>
  mithril.output %l : tensor<?x3x3xf64>
}

// -----

mithril.model @tril_rows(data %x: tensor<?x4xf64>, data %t: tensor<?xf64>) -> (lower: tensor<?x4xf64>) {
  // expected-error@+1 {{'mithril.tril' cannot run on batch shards: it works across axis 0, the batch axis split across ranks}}
  %l = mithril.tril %x : (tensor<?x4xf64>) -> tensor<?x4xf64>
  mithril.output %l : tensor<?x4xf64>
}
