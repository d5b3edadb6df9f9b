// A Linear layer whose two threads each take 32 rows x 32 columns of its
// product whole (mithril-run-target-cpu.test).
mithril.model @Linear(data %x: tensor<64x1030xf32>, param %w: tensor<40x1030xf32>)
    -> (y: tensor<64x40xf32>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<40x1030xf32>) -> tensor<1030x40xf32>
  %0 = mithril.matmul %x, %t : (tensor<64x1030xf32>, tensor<1030x40xf32>) -> tensor<64x40xf32>
  mithril.output %0 : tensor<64x40xf32>
}
