// On Intel cores with AMX (named by target-cpu, or the host), float32
// products of two or more 64-column panels and at least 256 reduction steps
// take 6 x 64 register tiles (24 zmm accumulators) over B packed in 64-column
// panels; 256 rows leave a 4-row remainder tile. Shallow products (a
// training step's 64-deep weight gradients), other AVX-512 CPUs and a
// vector width given as an option keep 8 x 32 tiles over 32-column panels
// (float64: 6 x 32 against 8 x 16). Products of few rows that 8 divides
// keep 8 x 32 (a small batch).
// RUN: mithril-opt %s --split-input-file --mithril-cpu-pipeline="target-cpu=sapphirerapids stop-after=fusion" | FileCheck %s --check-prefix=WIDE
// RUN: mithril-opt %s --split-input-file --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=fusion" | FileCheck %s --check-prefix=NARROW
// RUN: mithril-opt %s --split-input-file --mithril-cpu-pipeline="target-cpu=emeraldrapids vector-bits=512 stop-after=fusion" | FileCheck %s --check-prefix=GIVEN

// Sapphire Rapids' 2 MiB L2 takes the reduction 512 deep in one block.
// WIDE-LABEL: func.func @Deep
// WIDE: tensor<4x512x64xf32>
// WIDE: iter_args({{.+}}) -> (vector<6x64xf32>)
// WIDE: iter_args({{.+}}) -> (vector<4x64xf32>)
// WIDE-NOT: -> (vector<8x32xf32>)
// NARROW-LABEL: func.func @Deep
// NARROW: tensor<8x256x32xf32>
// NARROW: iter_args({{.+}}) -> (vector<8x32xf32>)
// NARROW-NOT: vector<{{[0-9]+}}x64xf32>
// GIVEN-LABEL: func.func @Deep
// GIVEN: tensor<8x512x32xf32>
// GIVEN: iter_args({{.+}}) -> (vector<8x32xf32>)
// GIVEN-NOT: vector<{{[0-9]+}}x64xf32>
mithril.model @Deep(data %x: tensor<256x512xf32>, param %w: tensor<512x512xf32>) -> (y: tensor<256x512xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32>
  mithril.output %mm : tensor<256x512xf32>
}

// -----

// WIDE-LABEL: func.func @Shallow
// WIDE-NOT: vector<{{[0-9]+}}x64xf32>
// WIDE: iter_args({{.+}}) -> (vector<8x32xf32>)
// WIDE-NOT: vector<{{[0-9]+}}x64xf32>
// NARROW-LABEL: func.func @Shallow
// NARROW-NOT: vector<{{[0-9]+}}x64xf32>
// GIVEN-LABEL: func.func @Shallow
// GIVEN-NOT: vector<{{[0-9]+}}x64xf32>
mithril.model @Shallow(data %x: tensor<512x64xf32>, param %w: tensor<64x512xf32>) -> (y: tensor<512x512xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<512x64xf32>, tensor<64x512xf32>) -> tensor<512x512xf32>
  mithril.output %mm : tensor<512x512xf32>
}

// -----

// A product whose reduction is one block, into a zero fill: the rows 6 does
// not divide split off the packed product, and each part's tiles start
// from zeros (its own fill, fused) rather than load a fill of the block.
// WIDE-LABEL: func.func @OneBlock
// WIDE-DAG: %[[ZERO4:.+]] = arith.constant dense<0.000000e+00> : vector<4x64xf32>
// WIDE-DAG: %[[ZERO6:.+]] = arith.constant dense<0.000000e+00> : vector<6x64xf32>
// WIDE: iter_args(%{{.+}} = %[[ZERO6]]) -> (vector<6x64xf32>)
// WIDE: iter_args(%{{.+}} = %[[ZERO4]]) -> (vector<4x64xf32>)
// NARROW-LABEL: func.func @OneBlock
// NARROW: -> (vector<8x32xf32>)
// GIVEN-LABEL: func.func @OneBlock
// GIVEN: -> (vector<8x32xf32>)
mithril.model @OneBlock(data %x: tensor<256x256xf32>, param %w: tensor<256x512xf32>) -> (y: tensor<256x512xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<256x256xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  mithril.output %mm : tensor<256x512xf32>
}

// -----

// float64 takes four registers of columns too: 6 x 32 over 32-column panels,
// where other CPUs keep 8 x 16.
// (Its right operand, 1 MiB, is one cache block in the 2 MiB L2 and is read
// in place, not packed.)
// WIDE-LABEL: func.func @Double
// WIDE: iter_args({{.+}}) -> (vector<6x32xf64>)
// WIDE: iter_args({{.+}}) -> (vector<4x32xf64>)
// WIDE-NOT: -> (vector<8x16xf64>)
// NARROW-LABEL: func.func @Double
// NARROW: tensor<16x256x16xf64>
// NARROW: iter_args({{.+}}) -> (vector<8x16xf64>)
// NARROW-NOT: -> (vector<{{[0-9]+}}x32xf64>)
// GIVEN-LABEL: func.func @Double
// GIVEN: tensor<16x512x16xf64>
// GIVEN: iter_args({{.+}}) -> (vector<8x16xf64>)
// GIVEN-NOT: -> (vector<{{[0-9]+}}x32xf64>)
mithril.model @Double(data %x: tensor<256x512xf64>, param %w: tensor<512x256xf64>) -> (y: tensor<256x256xf64>) {
  %mm = mithril.matmul %x, %w : (tensor<256x512xf64>, tensor<512x256xf64>) -> tensor<256x256xf64>
  mithril.output %mm : tensor<256x256xf64>
}

// -----

// A small batch's product, whose 16 rows two 8-row tiles cover, keeps 8 x 32
// (each row tile rereads the B panel: two reads of a 32-column panel, not
// three of a 64-column one); 12 rows, which 6 divides, take 6 x 64.
// WIDE-LABEL: func.func @FewRows
// WIDE-NOT: vector<{{[0-9]+}}x64xf32>
// WIDE: iter_args({{.+}}) -> (vector<8x32xf32>)
// WIDE-NOT: vector<{{[0-9]+}}x64xf32>
mithril.model @FewRows(data %x: tensor<16x512xf32>, param %w: tensor<512x512xf32>) -> (y: tensor<16x512xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<16x512xf32>, tensor<512x512xf32>) -> tensor<16x512xf32>
  mithril.output %mm : tensor<16x512xf32>
}

// -----

// WIDE-LABEL: func.func @FewRowsOfSix
// WIDE: iter_args({{.+}}) -> (vector<6x64xf32>)
// WIDE-NOT: -> (vector<8x32xf32>)
mithril.model @FewRowsOfSix(data %x: tensor<12x512xf32>, param %w: tensor<512x512xf32>) -> (y: tensor<12x512xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<12x512xf32>, tensor<512x512xf32>) -> tensor<12x512xf32>
  mithril.output %mm : tensor<12x512xf32>
}

// -----

// The rows counted are the whole product's: a 1024-row float64 product's
// 64-row cache blocks keep its 6 x 32 tiles.
// WIDE-LABEL: func.func @DoubleRowBlocks
// WIDE: iter_args({{.+}}) -> (vector<6x32xf64>)
// WIDE-NOT: -> (vector<8x16xf64>)
mithril.model @DoubleRowBlocks(data %x: tensor<1024x1024xf64>, param %w: tensor<1024x1024xf64>) -> (y: tensor<1024x1024xf64>) {
  %mm = mithril.matmul %x, %w : (tensor<1024x1024xf64>, tensor<1024x1024xf64>) -> tensor<1024x1024xf64>
  mithril.output %mm : tensor<1024x1024xf64>
}
