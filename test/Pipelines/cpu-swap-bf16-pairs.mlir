// A bf16 Linear layer of more than 16 rows (a multiple of 32) on a CPU with
// vdpbf16ps pair products but no AMX tiles (Zen 4) swaps (C^T = W A^T): the
// weight's rows are the register tiles' broadcast pairs, read where they lie
// (128 rows of 392 pairs a block), and only A^T is packed into pairs (2
// panels of 32 columns), not the weight each call. The bias and ReLU between
// the two swapped layers write the second one's A^T (512 x 64) directly.
// C^T, its reduction whole in one block, is never zeroed first: each register
// tile's accumulators start at zero (the fill on its panels, fused). On
// AMX tiles the rows stay in blocks of their own (swapsOntoTiles: up to 64
// rows); on a CPU without AVX512-BF16 both operands widen to float32 and the
// float32 swap's result stays float32 (no 512 x 64 bf16 C^T here). A last
// layer of 10 outputs whose A comes from a swapped layer swaps too: its bias
// and ReLU write A^T, its weight is padded with zero rows to whole register
// tiles (16 rows of 8-row tiles), and A^T is packed into pairs once (on two
// threads, each its half of the columns), not again for the rows left over.
// RUN: mithril-opt %s --split-input-file --host-cpu=znver4 --mithril-cpu-pipeline="threads=1 stop-after=fusion" | FileCheck %s --check-prefix=PAIRS
// RUN: mithril-opt %s --split-input-file --host-cpu=znver4 --mithril-cpu-pipeline="threads=2 stop-after=fusion" | FileCheck %s --check-prefix=THREADS
// RUN: mithril-opt %s --split-input-file --host-cpu=skylake-avx512 --mithril-cpu-pipeline="threads=1 stop-after=fusion" | FileCheck %s --check-prefix=WIDE

// PAIRS-LABEL: func.func @MLP64(
// PAIRS: bufferization.alloc_tensor() : tensor<512x64xf32>
// PAIRS-NOT: vector.transfer_write {{.*}} tensor<512x64xf32>
// PAIRS: tensor.empty() : tensor<2x392x32x2xbf16>
// PAIRS: tensor.extract_slice %arg1{{.*}} to tensor<128x784xbf16>
// PAIRS: tensor.expand_shape {{.*}} : tensor<128x784xbf16> into tensor<128x392x2xbf16>
// PAIRS: scf.for {{.*}} iter_args(%{{.*}} = %cst) -> (vector<8x32xf32>)
// PAIRS: x86vector.avx512.dot
// PAIRS: tensor.empty() : tensor<512x64xbf16>
// PAIRS: bufferization.alloc_tensor() : tensor<256x64xf32>
// PAIRS: tensor.empty() : tensor<2x256x32x2xbf16>
// PAIRS: x86vector.avx512.dot
// PAIRS-LABEL: func.func @MLPLast10(
// PAIRS: bufferization.alloc_tensor() : tensor<512x64xf32>
// PAIRS: tensor.empty() : tensor<512x64xbf16>
// PAIRS: tensor.pad %arg3 low[0, 0] high[6, 0]
// PAIRS: bufferization.alloc_tensor() : tensor<16x64xf32>
// PAIRS: tensor.empty() : tensor<2x256x32x2xbf16>
// PAIRS-NOT: tensor.empty() : tensor<2x256x32x2xbf16>
// PAIRS: x86vector.avx512.dot
// PAIRS-NOT: tensor.empty() : tensor<2x256x32x2xbf16>
// PAIRS: return
// PAIRS-LABEL: func.func @Linear16(
// PAIRS-NOT: tensor<512x16xf32>
// PAIRS: x86vector.avx512.dot

// Two threads: each takes half the weight's rows, and packs A^T itself.
// THREADS-LABEL: func.func @MLP64(
// THREADS: tensor.extract_slice %arg1{{.*}} to tensor<256x784xbf16>
// THREADS: tensor.empty() : tensor<2x392x32x2xbf16>
// THREADS: x86vector.avx512.dot

// THREADS-LABEL: func.func @MLPLast10(
// THREADS: tensor.pad %arg3 low[0, 0] high[6, 0]
// THREADS: scf.forall (%{{.*}}) = (0) to (64) step (32) shared_outs(%{{.*}}) -> (tensor<16x64xf32>)
// THREADS: tensor.empty() : tensor<1x256x32x2xbf16>
// THREADS: x86vector.avx512.dot
// THREADS-NOT: tensor.empty() : tensor<1x256x32x2xbf16>
// THREADS: return

// WIDE-LABEL: func.func @MLP64(
// WIDE-NOT: x86vector.avx512.dot
// WIDE-NOT: tensor<512x64xbf16>
// WIDE: return

mithril.model @MLP64(data %x: tensor<64x784xbf16>, param %w1: tensor<512x784xbf16>,
                     param %b1: tensor<512xbf16>, param %w2: tensor<256x512xbf16>)
    -> (y: tensor<64x256xbf16>) {
  %t1 = mithril.transpose %w1 {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %h = mithril.matmul %x, %t1 : (tensor<64x784xbf16>, tensor<784x512xbf16>) -> tensor<64x512xbf16>
  %s = mithril.add %h, %b1 : (tensor<64x512xbf16>, tensor<512xbf16>) -> tensor<64x512xbf16>
  %a = mithril.relu %s : (tensor<64x512xbf16>) -> tensor<64x512xbf16>
  %t2 = mithril.transpose %w2 {permutation = array<i64: 1, 0>} : (tensor<256x512xbf16>) -> tensor<512x256xbf16>
  %y = mithril.matmul %a, %t2 : (tensor<64x512xbf16>, tensor<512x256xbf16>) -> tensor<64x256xbf16>
  mithril.output %y : tensor<64x256xbf16>
}

// -----

mithril.model @MLPLast10(data %x: tensor<64x784xbf16>, param %w1: tensor<512x784xbf16>,
                         param %b1: tensor<512xbf16>, param %w2: tensor<10x512xbf16>)
    -> (y: tensor<64x10xbf16>) {
  %t1 = mithril.transpose %w1 {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %h = mithril.matmul %x, %t1 : (tensor<64x784xbf16>, tensor<784x512xbf16>) -> tensor<64x512xbf16>
  %s = mithril.add %h, %b1 : (tensor<64x512xbf16>, tensor<512xbf16>) -> tensor<64x512xbf16>
  %a = mithril.relu %s : (tensor<64x512xbf16>) -> tensor<64x512xbf16>
  %t2 = mithril.transpose %w2 {permutation = array<i64: 1, 0>} : (tensor<10x512xbf16>) -> tensor<512x10xbf16>
  %y = mithril.matmul %a, %t2 : (tensor<64x512xbf16>, tensor<512x10xbf16>) -> tensor<64x10xbf16>
  mithril.output %y : tensor<64x10xbf16>
}

// -----

mithril.model @Linear16(data %x: tensor<16x784xbf16>, param %w: tensor<512x784xbf16>)
    -> (y: tensor<16x512xbf16>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %h = mithril.matmul %x, %t : (tensor<16x784xbf16>, tensor<784x512xbf16>) -> tensor<16x512xbf16>
  mithril.output %h : tensor<16x512xbf16>
}
