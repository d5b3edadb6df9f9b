// Two inputs whose first sizes are only known at run time: either may be 1
// and broadcast against the other.
mithril.model @BroadcastAdd(data %a: tensor<?x4xf64>, data %b: tensor<?x4xf64>) -> (y: tensor<?x4xf64>) {
  %0 = mithril.add %a, %b : (tensor<?x4xf64>, tensor<?x4xf64>) -> tensor<?x4xf64>
  mithril.output %0 : tensor<?x4xf64>
}
