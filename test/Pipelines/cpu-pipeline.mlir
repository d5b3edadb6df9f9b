// The CPU pipeline's stages, each shown on the same dense layer.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion" | FileCheck %s --check-prefix=FUSION
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=bufferize" | FileCheck %s --check-prefix=BUFFERS
// RUN: mithril-opt %s --mithril-cpu-pipeline=vector-bits=512 | FileCheck %s --check-prefix=LLVM

mithril.model @Dense(data %x: tensor<8x16xf32>, param %w: tensor<16x32xf32>, param %b: tensor<32xf32>) -> (y: tensor<8x32xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = mithril.add %mm, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = mithril.relu %a : (tensor<8x32xf32>) -> tensor<8x32xf32>
  mithril.output %y : tensor<8x32xf32>
}

// Fusion: the matmul accumulates in registers over k, one outer product of
// a column of x and a row of w per step, and the bias and relu epilogue run
// on the accumulator before the one write of the result; no linalg op and no
// intermediate tensor is left.
// FUSION-LABEL: func.func @Dense(
// FUSION-NOT: linalg.
// FUSION: %[[ACC:.+]] = scf.for {{.*}} iter_args({{.*}}) -> (vector<8x32xf32>)
// The column of x stretches along the rows (one splat per row), not a
// broadcast to 32 x 8 and a transpose of all 256 elements.
// FUSION: %[[COL:.+]] = vector.transfer_read %arg0{{.*}} : tensor<8x16xf32>, vector<8xf32>
// FUSION-NOT: vector.transpose
// FUSION-NOT: vector.shuffle
// FUSION: %[[TALL:.+]] = vector.shape_cast %[[COL]] : vector<8xf32> to vector<8x1xf32>
// FUSION: vector.broadcast %[[TALL]] : vector<8x1xf32> to vector<8x32xf32>
// FUSION: %[[ROW:.+]] = vector.transfer_read %arg1{{.*}} : tensor<16x32xf32>, vector<32xf32>
// FUSION: vector.broadcast %[[ROW]] : vector<32xf32> to vector<8x32xf32>
// FUSION: arith.mulf {{.*}} : vector<8x32xf32>
// FUSION: scf.yield
// FUSION: %[[BIAS:.+]] = vector.broadcast {{.*}} : vector<32xf32> to vector<8x32xf32>
// FUSION: %[[SUM:.+]] = arith.addf %[[ACC]], %[[BIAS]] : vector<8x32xf32>
// FUSION: %[[RELU:.+]] = arith.maximumf %[[SUM]], {{.*}} : vector<8x32xf32>
// FUSION: vector.transfer_write %[[RELU]]
// FUSION-NOT: vector.transfer_write
// FUSION: return

// Bufferization: the output becomes a caller-provided buffer (destination
// passing), and nothing is allocated or copied.
// BUFFERS-LABEL: func.func @Dense(
// BUFFERS-SAME: %{{.+}}: memref<8x16xf32>
// BUFFERS-SAME: %[[OUT:[^:]+]]: memref<8x32xf32> {mithril.name = "y"}
// BUFFERS-NOT: memref.alloc
// BUFFERS-NOT: memref.copy
// BUFFERS: vector.transfer_write {{.*}}, %[[OUT]]
// BUFFERS-NOT: memref.alloc
// BUFFERS-NOT: memref.copy
// BUFFERS: return

// Down to the llvm dialect, with the C interface wrapper the runtime calls.
// LLVM: llvm.func @Dense(
// LLVM: llvm.func @_mlir_ciface_Dense(
