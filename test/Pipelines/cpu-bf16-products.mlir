// bf16 products multiply bf16 pairs (vdpbf16ps) where the core runs them at
// least at its FMA rate (Zen 4), and widen both operands to float32 when
// packing them, for the float32 FMA tiles, where it does not: the Intel cores
// from Sapphire Rapids on without usable AMX tiles (here one whose
// hypervisor hides them), which issue vdpbf16ps about once in two cycles.
// A matrix-vector product (one row), bound by memory, keeps vdpbf16ps
// everywhere: it reads half the bytes.
// RUN: mithril-opt %s --split-input-file --host-cpu=znver4 --mithril-cpu-pipeline="threads=1 stop-after=fusion" | FileCheck %s --check-prefix=PAIRS
// RUN: mithril-opt %s --split-input-file --host-cpu=sapphirerapids,-amx-tile --mithril-cpu-pipeline="threads=1 stop-after=fusion" | FileCheck %s --check-prefix=WIDENED

// PAIRS-LABEL: func.func @Linear(
// PAIRS: x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
// PAIRS-LABEL: func.func @Row(
// PAIRS: x86vector.avx512.dot

// WIDENED-LABEL: func.func @Linear(
// WIDENED-NOT: x86vector.avx512.dot
// WIDENED: arith.extf {{.*}} : vector<1x8x32xbf16> to vector<1x8x32xf32>
// WIDENED: arith.extf {{.*}} : vector<8x16xbf16> to vector<8x16xf32>
// WIDENED: arith.mulf {{.*}} : vector<8x32xf32>
// WIDENED-NOT: x86vector.avx512.dot
// WIDENED-LABEL: func.func @Row(
// WIDENED: x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
mithril.model @Linear(data %x: tensor<64x784xbf16>, param %w: tensor<512x784xbf16>) -> (y: tensor<64x512xbf16>) {
  %0 = transpose %w : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %1 = matmul %x, %0 : (tensor<64x784xbf16>, tensor<784x512xbf16>) -> tensor<64x512xbf16>
  output %1 : tensor<64x512xbf16>
}

// -----

mithril.model @Row(data %x: tensor<1x784xbf16>, param %w: tensor<512x784xbf16>) -> (y: tensor<1x512xbf16>) {
  %0 = transpose %w : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %1 = matmul %x, %0 : (tensor<1x784xbf16>, tensor<784x512xbf16>) -> tensor<1x512xbf16>
  output %1 : tensor<1x512xbf16>
}
