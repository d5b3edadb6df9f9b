// The CPU pipeline computes float32 exp and tanh (a sigmoid, a tanh layer) as
// vector polynomials: no float32 llvm.exp (which LLVM scalarizes into one
// libm call per element) and no tanhf is left; float64 keeps libm's.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=256" | FileCheck %s --implicit-check-not=@tanhf --implicit-check-not=@expf --implicit-check-not="llvm.intr.exp(%{{[0-9]+}}) : (vector<{{[0-9]+}}xf32>)"
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512" | FileCheck %s --implicit-check-not=@tanhf --implicit-check-not=@expf --implicit-check-not="llvm.intr.exp(%{{[0-9]+}}) : (vector<{{[0-9]+}}xf32>)"

// CHECK-LABEL: llvm.func @Activations(
// CHECK: llvm.intr.fma
// CHECK: llvm.intr.exp(%{{[0-9]+}}) : (vector<{{[0-9]+}}xf64>)
mithril.model @Activations(data %x: tensor<64x256xf32>, data %d: tensor<8xf64>) -> (s: tensor<64x256xf32>, t: tensor<64x256xf32>, e: tensor<8xf64>) {
  %s = mithril.sigmoid %x : (tensor<64x256xf32>) -> tensor<64x256xf32>
  %t = mithril.tanh %x : (tensor<64x256xf32>) -> tensor<64x256xf32>
  %e = mithril.exp %d : (tensor<8xf64>) -> tensor<8xf64>
  mithril.output %s, %t, %e : tensor<64x256xf32>, tensor<64x256xf32>, tensor<8xf64>
}
