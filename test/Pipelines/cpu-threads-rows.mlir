// Threads split a product of a weight compiled in by rows once each thread
// gets 32 or more: the weight is packed already, each thread reads it whole
// and keeps the rows of the activation it wrote itself (CpuStrategy.cpp,
// splitsRows). Fewer rows, or a weight passed in (packed per call, each
// thread its own columns), split by columns.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids stop-after=linalg" \
// RUN:   | mithril-opt --mithril-fuse-elementwise --canonicalize --cse \
// RUN:       --mithril-cpu-strategy="target-cpu=sapphirerapids threads=2 min-parallel-work=1024" \
// RUN:   | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids quantize=int8 stop-after=linalg" \
// RUN:   | mithril-opt --mithril-fuse-elementwise --canonicalize --cse \
// RUN:       --mithril-cpu-strategy="target-cpu=sapphirerapids threads=2 min-parallel-work=1024" \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @CompiledIn(
// CHECK: linalg.matmul {{.*}}threads = [0, 64]
// CHECK-LABEL: func.func @FewRows(
// CHECK: linalg.matmul {{.*}}threads = [1, 64]
// CHECK-LABEL: func.func @PassedIn(
// CHECK: linalg.matmul {{.*}}threads = [1, 64]

mithril.model @CompiledIn(data %x: tensor<128x64xf32>) -> (y: tensor<128x128xf32>) {
  %w = mithril.constant dense<0.25> : tensor<64x128xf32>
  %y = mithril.matmul %x, %w : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
  mithril.output %y : tensor<128x128xf32>
}

mithril.model @FewRows(data %x: tensor<32x64xf32>) -> (y: tensor<32x128xf32>) {
  %w = mithril.constant dense<0.25> : tensor<64x128xf32>
  %y = mithril.matmul %x, %w : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  mithril.output %y : tensor<32x128xf32>
}

mithril.model @PassedIn(data %x: tensor<128x64xf32>, param %w: tensor<64x128xf32>) -> (y: tensor<128x128xf32>) {
  %y = mithril.matmul %x, %w : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
  mithril.output %y : tensor<128x128xf32>
}

// In bf16 on AMX tiles, a product of fewer rows than a tile a thread stays on
// one thread (its tiles take microseconds, less than the handoff).
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids precision=bf16 stop-after=linalg" \
// RUN:   | mithril-opt --mithril-fuse-elementwise --canonicalize --cse \
// RUN:       --mithril-cpu-strategy="target-cpu=sapphirerapids threads=2 min-parallel-work=1024" \
// RUN:   | FileCheck %s --check-prefix=BF16
// BF16-LABEL: func.func @CompiledIn(
// BF16: linalg.matmul {{.*}}threads = [0, 64]
// BF16-LABEL: func.func @OneTileOfRows(
// BF16: linalg.matmul {mithril.lowering_config = #mithril.lowering_config<kernel = matmul, register_tile = [{{[0-9, ]+}}], cache_tile = [{{[0-9, ]+}}]>} ins({{.+}} : tensor<16x64xbf16>, tensor<64x128xbf16>)
mithril.model @OneTileOfRows(data %x: tensor<16x64xf32>) -> (y: tensor<16x128xf32>) {
  %w = mithril.constant dense<0.25> : tensor<64x128xf32>
  %y = mithril.matmul %x, %w : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32>
  mithril.output %y : tensor<16x128xf32>
}
