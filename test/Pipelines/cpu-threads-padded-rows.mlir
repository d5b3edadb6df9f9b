// On AVX2, a thread's chunk of a split product copies each block of its left
// operand with 64 more bytes a row when the operand's rows lie a multiple of
// 2 KiB apart (here 4 KiB: 1024 float32), its blocks take whole rows and it
// is at least 2 MiB: the 6-row tiles' rows then no longer share L1's sets.
// Not on one thread, not with AVX-512's tiles, not for a smaller operand.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver3 stop-after=fusion threads=2" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver3 stop-after=fusion threads=1" | FileCheck %s --check-prefix=SERIAL
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=fusion threads=2" | FileCheck %s --check-prefix=SERIAL

// CHECK-LABEL: func.func @Square
// CHECK: scf.forall
// CHECK: tensor.pad %{{.*}} nofold low[0, 0] high[0, 16]
// CHECK: tensor<64x1024xf32> to tensor<64x1040xf32>
// SERIAL-LABEL: func.func @Square
// SERIAL-NOT: tensor.pad
mithril.model @Square(data %a: tensor<1024x1024xf32>, data %b: tensor<1024x1024xf32>) -> (c: tensor<1024x1024xf32>) {
  %0 = mithril.matmul %a, %b : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  mithril.output %0 : tensor<1024x1024xf32>
}

// 1 MiB: its rows stay in L2, where the copy cost more than it saved.
// CHECK-LABEL: func.func @Small
// CHECK-NOT: tensor.pad
// CHECK-LABEL: func.func @Deep
// SERIAL-LABEL: func.func @Small
// SERIAL-NOT: tensor.pad
mithril.model @Small(data %a: tensor<512x512xf32>, data %b: tensor<512x512xf32>) -> (c: tensor<512x512xf32>) {
  %0 = mithril.matmul %a, %b : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  mithril.output %0 : tensor<512x512xf32>
}

// A reduction split in blocks (2048 deep): no copy.
// CHECK-NOT: tensor.pad
// SERIAL-LABEL: func.func @Deep
// SERIAL-NOT: tensor.pad
mithril.model @Deep(data %a: tensor<1024x2048xf32>, data %b: tensor<2048x1024xf32>) -> (c: tensor<1024x1024xf32>) {
  %0 = mithril.matmul %a, %b : (tensor<1024x2048xf32>, tensor<2048x1024xf32>) -> tensor<1024x1024xf32>
  mithril.output %0 : tensor<1024x1024xf32>
}
