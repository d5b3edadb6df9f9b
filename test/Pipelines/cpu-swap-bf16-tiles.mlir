// A bf16 Linear layer of a few rows (2 to 64) on AMX tiles swaps
// (C^T = W A^T): the weight's rows are the tiles' A, read where they lie as
// pairs (32 rows of 128 pairs of steps, rows 784 elements apart), and only
// A^T is packed into pairs, its columns padded with zeros to whole tiles;
// C^T goes back through the bias and ReLU, which read it transposed. One
// row, on two threads up to three, and a CPU without tiles (Zen 4) keep the
// lane sums of vdpbf16ps on the weight's rows.
// RUN: mithril-opt %s --split-input-file --host-cpu=sapphirerapids --mithril-cpu-pipeline="threads=1 stop-after=fusion" | FileCheck %s --check-prefix=TILES
// RUN: mithril-opt %s --split-input-file --host-cpu=sapphirerapids --mithril-cpu-pipeline="threads=2 stop-after=fusion" | FileCheck %s --check-prefix=THREADS
// RUN: mithril-opt %s --split-input-file --host-cpu=znver4 --mithril-cpu-pipeline="threads=1 stop-after=fusion" | FileCheck %s --check-prefix=DOTS

// TILES-LABEL: func.func @Linear16(
// TILES-NOT: x86vector.avx512.dot
// TILES: ins({{.*}} : tensor<32x128x2xbf16>, tensor<128x16x2xbf16>) outs({{.*}} : tensor<32x16xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>, mithril.zero_accumulator}
// TILES-NOT: x86vector.avx512.dot
// TILES: arith.maximumf
// TILES-LABEL: func.func @Linear2(
// TILES: tensor.pad {{.*}} low[0, 0] high[0, 14]
// TILES-NOT: x86vector.avx512.dot
// TILES: kernel = tile_matmul
// TILES-NOT: x86vector.avx512.dot
// TILES-LABEL: func.func @Linear1(
// TILES-NOT: kernel = tile_matmul
// TILES: x86vector.avx512.dot

// THREADS-LABEL: func.func @Linear16(
// THREADS: kernel = tile_matmul
// THREADS-LABEL: func.func @Linear2(
// THREADS-NOT: kernel = tile_matmul
// THREADS: x86vector.avx512.dot

// DOTS-LABEL: func.func @Linear16(
// DOTS-NOT: kernel = tile_matmul
// DOTS: x86vector.avx512.dot
// DOTS-LABEL: func.func @Linear2(
// DOTS: x86vector.avx512.dot

mithril.model @Linear16(data %x: tensor<16x784xbf16>, param %w: tensor<512x784xbf16>,
                        param %b: tensor<512xbf16>) -> (y: tensor<16x512xbf16>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %h = mithril.matmul %x, %t : (tensor<16x784xbf16>, tensor<784x512xbf16>) -> tensor<16x512xbf16>
  %s = mithril.add %h, %b : (tensor<16x512xbf16>, tensor<512xbf16>) -> tensor<16x512xbf16>
  %y = mithril.relu %s : (tensor<16x512xbf16>) -> tensor<16x512xbf16>
  mithril.output %y : tensor<16x512xbf16>
}

// -----

mithril.model @Linear2(data %x: tensor<2x784xbf16>, param %w: tensor<512x784xbf16>)
    -> (y: tensor<2x512xbf16>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %h = mithril.matmul %x, %t : (tensor<2x784xbf16>, tensor<784x512xbf16>) -> tensor<2x512xbf16>
  mithril.output %h : tensor<2x512xbf16>
}

// -----

mithril.model @Linear1(data %x: tensor<1x784xbf16>, param %w: tensor<512x784xbf16>)
    -> (y: tensor<1x512xbf16>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %h = mithril.matmul %x, %t : (tensor<1x784xbf16>, tensor<784x512xbf16>) -> tensor<1x512xbf16>
  mithril.output %h : tensor<1x512xbf16>
}
