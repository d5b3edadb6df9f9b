// An int8 Linear layer on a few rows with its weight compiled in (a
// constant, quantized when compiling) runs as a matrix-vector product on
// vpdpbusd where the CPU has AVX512-VNNI: the weight is stored transposed in
// groups of 64 bytes per output column ([2][3][16][4], the reduction of 130
// padded with zeros to 192), A is padded the same way, and each (row,
// column) tile step is one vpdpbusd of 64 contiguous bytes of both.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 quantize=int8 threads=1 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 quantize=int8 threads=1" | FileCheck %s --check-prefix=LLVM
// Without VNNI (Skylake-SP), the usual blocked product.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 quantize=int8 threads=1 stop-after=fusion" | FileCheck %s --check-prefix=NOVNNI

mithril.model @Int8Gemv(data %x: tensor<4x130xf32>) -> (y: tensor<4x2xf32>) {
  %w = mithril.constant dense<[[-1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545], [0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273, -0.7273, -0.0909, 0.5455, -0.9091, -0.2727, 0.3636, 1.0000, -0.4545, 0.1818, 0.8182, -0.6364, 0.0000, 0.6364, -0.8182, -0.1818, 0.4545, -1.0000, -0.3636, 0.2727, 0.9091, -0.5455, 0.0909, 0.7273]]> : tensor<2x130xf32>
  %wt = mithril.transpose %w : (tensor<2x130xf32>) -> tensor<130x2xf32>
  %y = mithril.matmul %x, %wt : (tensor<4x130xf32>, tensor<130x2xf32>) -> tensor<4x2xf32>
  mithril.output %y : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @Int8Gemv(
// CHECK-DAG: arith.constant dense<{{.+}}> : tensor<2x3x16x4xi8>
// CHECK-DAG: tensor.pad %{{.+}} low[0, 0] high[0, 62]
// CHECK: vector.contract {{.*}} : vector<16x4xi32>, vector<16x4xi32> into vector<16xi32>

// LLVM-LABEL: llvm.func @Int8Gemv(
// LLVM: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.+}}, %{{.+}}, %{{.+}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>

// NOVNNI-LABEL: func.func @Int8Gemv(
// NOVNNI-NOT: x3x16x4xi8
// NOVNNI-NOT: vector<16x4xi32>, vector<16x4xi32>
// NOVNNI: return
