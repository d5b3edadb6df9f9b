// A row tile 3-15 wide whose width is no power of 2 (a 7-wide row: the 2x2
// blocks of a 14 x 14 image, a Winograd transform's tiles) is vectorized to
// the next power of 2 with a mask, which becomes masked loads and stores;
// the exact width was split by LLVM into vectors of 4, 2 and 1 lanes.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=1 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=1" | FileCheck %s --check-prefix=LLVM

mithril.model @Rows7(data %x: tensor<7x7xf32>) -> (y: tensor<7x7xf32>) {
  %y = mithril.relu %x : (tensor<7x7xf32>) -> tensor<7x7xf32>
  mithril.output %y : tensor<7x7xf32>
}

// CHECK-LABEL: func.func @Rows7(
// CHECK: %[[MASK:.+]] = vector.constant_mask [1, 7] : vector<1x8xi1>
// CHECK: %[[ROW:.+]] = vector.transfer_read %{{.+}}[%c0, %c0], %{{.+}}, %[[MASK]] {{.*}} : tensor<1x7xf32>, vector<1x8xf32>
// CHECK: %[[Y:.+]] = arith.maximumf %[[ROW]], %{{.+}} : vector<1x8xf32>
// CHECK: vector.transfer_write %[[Y]], %{{.+}}[%c0, %c0], %[[MASK]] {{.*}} : vector<1x8xf32>, tensor<1x7xf32>

// LLVM-LABEL: llvm.func @Rows7(
// LLVM: llvm.intr.masked.load {{.*}} -> vector<8xf32>
// LLVM: llvm.intr.masked.store
