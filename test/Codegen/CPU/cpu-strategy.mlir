// RUN: mithril-opt %s --split-input-file --mithril-cpu-strategy="target-cpu=znver4" | FileCheck %s --check-prefix=ZEN4
// RUN: mithril-opt %s --split-input-file --mithril-cpu-strategy="target-cpu=znver2" | FileCheck %s --check-prefix=ZEN2
// RUN: mithril-opt %s --split-input-file --host-cpu=znver2 --mithril-cpu-strategy | FileCheck %s --check-prefix=ZEN2
// RUN: mithril-opt %s --split-input-file --mithril-cpu-strategy="target-cpu=alderlake" | FileCheck %s --check-prefix=AVX2-1MIB
// RUN: mithril-opt %s --split-input-file --mithril-cpu-strategy="target-cpu=znver4 threads=2" | FileCheck %s --check-prefix=THREADS
// RUN: mithril-opt %s --split-input-file --mithril-cpu-strategy="target-cpu=znver4" --mithril-cpu-schedule="target-cpu=znver4" | FileCheck %s --check-prefix=SCHEDULE
// RUN: not mithril-opt %s --split-input-file --mithril-cpu-strategy=target-cpu=pentium9000 2>&1 | FileCheck %s --check-prefix=CPU
// CPU: mithril-cpu-strategy: unknown target-cpu 'pentium9000'

// The register tile follows the target's vector registers: AVX-512 (znver4)
// 8 rows x 32 f32 columns, AVX2 (znver2) 6 x 16. Matmuls get the L2 cache
// block; with two threads the column loop is split in halves.
// ZEN4-LABEL: func.func @matmul
// ZEN4: linalg.matmul {mithril.lowering_config = #mithril.lowering_config<kernel = matmul, register_tile = [8, 32, 1], cache_tile = [128, 256, 256]>}
// Alder Lake (AVX2; LLVM's table lists avx2 without the avx it implies)
// gets AVX2's tiles.
// AVX2-1MIB-LABEL: func.func @matmul
// AVX2-1MIB: linalg.matmul {{.*}}register_tile = [6, 16, 1], cache_tile = [128, 256, 256]>}
// ZEN2-LABEL: func.func @matmul
// ZEN2: linalg.matmul {mithril.lowering_config = #mithril.lowering_config<kernel = matmul, register_tile = [6, 16, 1], cache_tile = [128, 256, 256]>}
// THREADS-LABEL: func.func @matmul
// THREADS: linalg.matmul {mithril.lowering_config = #mithril.lowering_config<kernel = matmul, register_tile = [8, 32, 1], cache_tile = [128, 256, 256], threads = [1, 256]>}
// The schedule tiles by the register tile: 8 x 32 accumulators with AVX-512.
// SCHEDULE-LABEL: func.func @matmul
// SCHEDULE: arith.addf %{{.*}} : vector<8x32xf32>
func.func @matmul(%a: tensor<256x512xf32>, %b: tensor<512x512xf32>) -> tensor<256x512xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<256x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<256x512xf32>) -> tensor<256x512xf32>
  %c = linalg.matmul ins(%a, %b : tensor<256x512xf32>, tensor<512x512xf32>) outs(%init : tensor<256x512xf32>) -> tensor<256x512xf32>
  return %c : tensor<256x512xf32>
}

// -----

// A result of 1024 rows: a column block of it (1024 x 256 f32, 1 MiB) fills
// the L2 (Zen 4's 1 MiB), so the reduction block deepens to 1024
// (the accumulator tiles are loaded from beyond L2 once per reduction
// block) and its rows halve to 64 (the left operand's block stays 256 KiB);
// f64 too, to as many bytes of a row (512), bf16 not. AVX2's narrower tiles
// take 16 rows (three tiles a panel) where the packed block of the right
// operand (1 MiB) fits the L2; Zen 2's 512 KiB L2 does not hold it, so it
// keeps 64 rows. Not at 512 rows on Zen 4. AVX2's float32 tiles, which take
// their rows outermost, deepen only past the L2: not at 1024 rows by a 1 MiB L2,
// nor at 512 on Zen 2 (a column block the L2's size).
// ZEN4-LABEL: func.func @deep_reduction
// ZEN4: linalg.matmul {{.*}}cache_tile = [64, 256, 1024]>} ins({{.*}} : tensor<1024x2048xf32>
// ZEN4: linalg.matmul {{.*}}cache_tile = [64, 256, 512]>} ins({{.*}} : tensor<1024x2048xf64>
// ZEN4: linalg.matmul {{.*}}cache_tile = [128, 256, 256]>} ins({{.*}} : tensor<1024x2048xbf16>
// ZEN4: linalg.matmul {{.*}}cache_tile = [128, 256, 256]>} ins({{.*}} : tensor<512x2048xf32>
// ZEN2-LABEL: func.func @deep_reduction
// ZEN2: linalg.matmul {{.*}}cache_tile = [64, 256, 1024]>} ins({{.*}} : tensor<1024x2048xf32>
// ZEN2: linalg.matmul {{.*}}cache_tile = [64, 256, 512]>} ins({{.*}} : tensor<1024x2048xf64>
// ZEN2: linalg.matmul {{.*}}cache_tile = [128, 256, 256]>} ins({{.*}} : tensor<1024x2048xbf16>
// ZEN2: linalg.matmul {{.*}}cache_tile = [128, 256, 256]>} ins({{.*}} : tensor<512x2048xf32>
// AVX2-1MIB-LABEL: func.func @deep_reduction
// AVX2-1MIB: linalg.matmul {{.*}}register_tile = [6, 16, 1], cache_tile = [128, 256, 256]>} ins({{.*}} : tensor<1024x2048xf32>
// AVX2-1MIB: linalg.matmul {{.*}}cache_tile = [16, 256, 512]>} ins({{.*}} : tensor<1024x2048xf64>
// AVX2-1MIB: linalg.matmul {{.*}}cache_tile = [128, 256, 256]>} ins({{.*}} : tensor<1024x2048xbf16>
// AVX2-1MIB: linalg.matmul {{.*}}cache_tile = [128, 256, 256]>} ins({{.*}} : tensor<512x2048xf32>
func.func @deep_reduction(%a: tensor<1024x2048xf32>, %b: tensor<2048x256xf32>,
                          %ad: tensor<1024x2048xf64>, %bd: tensor<2048x256xf64>,
                          %ah: tensor<1024x2048xbf16>, %bh: tensor<2048x256xbf16>)
    -> (tensor<1024x256xf32>, tensor<1024x256xf64>, tensor<1024x256xf32>, tensor<512x256xf32>) {
  %empty = tensor.empty() : tensor<1024x256xf32>
  %emptyd = tensor.empty() : tensor<1024x256xf64>
  %c = linalg.matmul ins(%a, %b : tensor<1024x2048xf32>, tensor<2048x256xf32>) outs(%empty : tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %d = linalg.matmul ins(%ad, %bd : tensor<1024x2048xf64>, tensor<2048x256xf64>) outs(%emptyd : tensor<1024x256xf64>) -> tensor<1024x256xf64>
  %h = linalg.matmul ins(%ah, %bh : tensor<1024x2048xbf16>, tensor<2048x256xbf16>) outs(%empty : tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %a512 = tensor.extract_slice %a[0, 0] [512, 2048] [1, 1] : tensor<1024x2048xf32> to tensor<512x2048xf32>
  %empty512 = tensor.empty() : tensor<512x256xf32>
  %half = linalg.matmul ins(%a512, %b : tensor<512x2048xf32>, tensor<2048x256xf32>) outs(%empty512 : tensor<512x256xf32>) -> tensor<512x256xf32>
  return %c, %d, %h, %half : tensor<1024x256xf32>, tensor<1024x256xf64>, tensor<1024x256xf32>, tensor<512x256xf32>
}


// -----

// AVX2's float32 tiles, rows outermost, in deep blocks: each row tile loads
// its 6 x 1024 block of the left operand once per column block, so their
// column blocks are twice as wide (512) where the result has the columns.
// AVX-512's tiles keep 256.
// ZEN4-LABEL: func.func @wide_column_blocks
// ZEN4: linalg.matmul {{.*}}cache_tile = [64, 256, 1024]>} ins({{.*}} : tensor<2048x2048xf32>, tensor<2048x2048xf32>)
// ZEN4: linalg.matmul {{.*}}cache_tile = [64, 256, 1024]>} ins({{.*}} : tensor<2048x2048xf32>, tensor<2048x256xf32>)
// ZEN2-LABEL: func.func @wide_column_blocks
// ZEN2: linalg.matmul {{.*}}cache_tile = [64, 512, 1024]>} ins({{.*}} : tensor<2048x2048xf32>, tensor<2048x2048xf32>)
// ZEN2: linalg.matmul {{.*}}cache_tile = [64, 256, 1024]>} ins({{.*}} : tensor<2048x2048xf32>, tensor<2048x256xf32>)
// AVX2-1MIB-LABEL: func.func @wide_column_blocks
// AVX2-1MIB: linalg.matmul {{.*}}register_tile = [6, 16, 1], cache_tile = [16, 512, 1024]>} ins({{.*}} : tensor<2048x2048xf32>, tensor<2048x2048xf32>)
// AVX2-1MIB: linalg.matmul {{.*}}cache_tile = [16, 256, 1024]>} ins({{.*}} : tensor<2048x2048xf32>, tensor<2048x256xf32>)
func.func @wide_column_blocks(%a: tensor<2048x2048xf32>, %b: tensor<2048x2048xf32>,
                              %bn: tensor<2048x256xf32>)
    -> (tensor<2048x2048xf32>, tensor<2048x256xf32>) {
  %empty = tensor.empty() : tensor<2048x2048xf32>
  %emptyn = tensor.empty() : tensor<2048x256xf32>
  %c = linalg.matmul ins(%a, %b : tensor<2048x2048xf32>, tensor<2048x2048xf32>) outs(%empty : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %n = linalg.matmul ins(%a, %bn : tensor<2048x2048xf32>, tensor<2048x256xf32>) outs(%emptyn : tensor<2048x256xf32>) -> tensor<2048x256xf32>
  return %c, %n : tensor<2048x2048xf32>, tensor<2048x256xf32>
}
// -----

// Elementwise ops: the last two loops to 8 x two registers of f32 (4 rows
// where a math function becomes a polynomial, exp here: its constants and 8
// chains fit the registers); 16 x 16 register transposes for 32-bit
// transposes of the last two dimensions.
// ZEN4-LABEL: func.func @elementwise_and_transpose
// ZEN4: linalg.generic {{.*}}mithril.lowering_config = #mithril.lowering_config<kernel = default, register_tile = [8, 32]>
// ZEN4: linalg.generic {{.*}}mithril.lowering_config = #mithril.lowering_config<kernel = default, register_tile = [4, 32]>
// ZEN4: linalg.transpose {{.*}}mithril.lowering_config = #mithril.lowering_config<kernel = transpose, register_tile = [16, 16]>
// ZEN2-LABEL: func.func @elementwise_and_transpose
// ZEN2: linalg.generic {{.*}}mithril.lowering_config = #mithril.lowering_config<kernel = default, register_tile = [8, 16]>
// ZEN2: linalg.generic {{.*}}mithril.lowering_config = #mithril.lowering_config<kernel = default, register_tile = [4, 16]>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise_and_transpose(%x: tensor<64x128xf32>) -> tensor<128x64xf32> {
  %empty = tensor.empty() : tensor<64x128xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x128xf32>) outs(%empty : tensor<64x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n : tensor<64x128xf32>) outs(%empty : tensor<64x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %tempty = tensor.empty() : tensor<128x64xf32>
  %t = linalg.transpose ins(%e : tensor<64x128xf32>) outs(%tempty : tensor<128x64xf32>) permutation = [1, 0]
  return %t : tensor<128x64xf32>
}

// -----

// Rows narrower than the tile's columns (10 classes, 28-wide images): as
// many rows as one tile's columns hold, a divisor of the rows (the columns
// are clamped to the row when tiled): 2 rows of 10 and 1 of 28 with
// AVX-512's 32 columns, 1 of 10 with AVX2's 16 (28 is wider: 8 rows, 4
// for tanh's polynomial); a 3 x 4 tensor is one tile.
// ZEN4-LABEL: func.func @narrow_rows
// ZEN4: register_tile = [2, 32]>
// ZEN4: register_tile = [1, 1, 32]>
// ZEN4: register_tile = [3, 32]>
// ZEN2-LABEL: func.func @narrow_rows
// ZEN2: register_tile = [1, 16]>
// ZEN2: register_tile = [1, 4, 16]>
// ZEN2: register_tile = [3, 16]>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @narrow_rows(%x: tensor<64x10xf32>, %y: tensor<16x28x28xf32>, %z: tensor<3x4xf32>)
    -> (tensor<64x10xf32>, tensor<16x28x28xf32>, tensor<3x4xf32>) {
  %e0 = tensor.empty() : tensor<64x10xf32>
  %a = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x10xf32>) outs(%e0 : tensor<64x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<64x10xf32>
  %e1 = tensor.empty() : tensor<16x28x28xf32>
  %b = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y : tensor<16x28x28xf32>) outs(%e1 : tensor<16x28x28xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.tanh %in : f32
    linalg.yield %r : f32
  } -> tensor<16x28x28xf32>
  %e2 = tensor.empty() : tensor<3x4xf32>
  %c = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<3x4xf32>) outs(%e2 : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  return %a, %b, %c : tensor<64x10xf32>, tensor<16x28x28xf32>, tensor<3x4xf32>
}

// -----

// The last two loops covered whole (2 x 2: a Winograd tile's outputs, a
// pooling window): the loops before them join the tile, whole or by a
// divisor, up to one tile's columns: 7 x 2 x 2 with AVX-512's 32 columns;
// with AVX2's 16, 7 has no divisor up to 4 and the tile stays 2 x 2. A
// reduction loop does not join, nor one that an operand is broadcast along
// (its vectorized read came out transposed: diff-fuzz 1515:308). (The
// columns are clamped to the row when tiled.)
// ZEN4-LABEL: func.func @whole_small_rows
// ZEN4: register_tile = [1, 1, 7, 2, 32]>
// ZEN4: register_tile = [1, 1, 2, 32]>
// ZEN4: register_tile = [1, 5, 32]>
// ZEN2-LABEL: func.func @whole_small_rows
// ZEN2: register_tile = [1, 1, 1, 2, 16]>
// ZEN2: register_tile = [1, 1, 2, 16]>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#row5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#in4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#out4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#bcast = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#id3b = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @whole_small_rows(%x: tensor<16x32x7x2x2xf32>, %p: tensor<16x32x7xf32>, %y: tensor<8x7x2x2xf32>, %v: tensor<1x5x1xf32>)
    -> (tensor<16x32x7x2x2xf32>, tensor<8x2x2xf32>, tensor<5x5x1xf32>) {
  %e0 = tensor.empty() : tensor<16x32x7x2x2xf32>
  %a = linalg.generic {indexing_maps = [#id5, #row5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %p : tensor<16x32x7x2x2xf32>, tensor<16x32x7xf32>) outs(%e0 : tensor<16x32x7x2x2xf32>) {
  ^bb0(%in: f32, %q: f32, %out: f32):
    %r = arith.mulf %in, %q : f32
    linalg.yield %r : f32
  } -> tensor<16x32x7x2x2xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x2x2xf32>) -> tensor<8x2x2xf32>
  %b = linalg.generic {indexing_maps = [#in4, #out4], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%y : tensor<8x7x2x2xf32>) outs(%f : tensor<8x2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<8x2x2xf32>
  %e2 = tensor.empty() : tensor<5x5x1xf32>
  %c = linalg.generic {indexing_maps = [#bcast, #id3b], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<1x5x1xf32>) outs(%e2 : tensor<5x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<5x5x1xf32>
  return %a, %b, %c : tensor<16x32x7x2x2xf32>, tensor<8x2x2xf32>, tensor<5x5x1xf32>
}

// -----

// A config written by hand is kept, and the schedule carries it out: 4 x 16
// accumulators instead of the strategy's 8 x 32.
// ZEN4-LABEL: func.func @hand_written
// ZEN4: register_tile = [4, 16, 1], cache_tile = [64, 64, 64]
// SCHEDULE-LABEL: func.func @hand_written
// SCHEDULE: scf.for {{.*}} -> (vector<4x16xf32>)
// SCHEDULE-NOT: vector<8x32xf32>
func.func @hand_written(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %r = linalg.matmul {mithril.lowering_config = #mithril.lowering_config<kernel = matmul, register_tile = [4, 16, 1], cache_tile = [64, 64, 64]>}
      ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// Two threads split an elementwise op from 2^15 elements written: a generic
// of 8 results over 64 x 64 iterations is split, one result over the same
// loops is not.
// SCHEDULE-LABEL: func.func @work_of_every_result
// THREADS-LABEL: func.func @work_of_every_result
// THREADS: linalg.generic {{.*}}threads = [0, 32]
// THREADS: linalg.generic
// THREADS-NOT: threads =
#same = affine_map<(d0, d1) -> (d0, d1)>
func.func @work_of_every_result(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = tensor.empty() : tensor<64x64xf32>
  %r:8 = linalg.generic {indexing_maps = [#same, #same, #same, #same, #same, #same, #same, #same, #same],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e, %e, %e, %e, %e, %e, %e, %e : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32, %o5: f32, %o6: f32, %o7: f32):
    %n = arith.negf %in : f32
    linalg.yield %in, %n, %in, %n, %in, %n, %in, %n : f32, f32, f32, f32, f32, f32, f32, f32
  } -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  %one = linalg.generic {indexing_maps = [#same, #same], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  return %r#1, %one : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// The same work read at fixed positions (a Winograd filter transform's taps,
// [f, c, i, j] at constant i, j) stays on one thread: the vectorizer leaves
// it to scalar loops, which LLVM vectorizes whole but not as a split's chunk.
// SCHEDULE-LABEL: func.func @fixed_positions
// THREADS-LABEL: func.func @fixed_positions
// THREADS: linalg.generic
// THREADS-NOT: threads =
#tap0 = affine_map<(d0, d1) -> (d0, d1, 0, 0)>
#tap1 = affine_map<(d0, d1) -> (d0, d1, 1, 2)>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @fixed_positions(%w: tensor<64x64x3x3xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %r:8 = linalg.generic {indexing_maps = [#tap0, #tap1, #out, #out, #out, #out, #out, #out, #out, #out],
                         iterator_types = ["parallel", "parallel"]}
      ins(%w, %w : tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>) outs(%e, %e, %e, %e, %e, %e, %e, %e : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o0: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32, %o5: f32, %o6: f32, %o7: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %a, %s, %b, %s, %a, %s, %b, %s : f32, f32, f32, f32, f32, f32, f32, f32
  } -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return %r#1 : tensor<64x64xf32>
}

// -----

// An int8 product of a dynamic batch whose operands are widened (8 columns,
// too few to pack): the widened left operand takes the batch's size.
// SCHEDULE-LABEL: func.func @int8_dynamic_rows
// SCHEDULE: tensor.empty(%{{.+}}) : tensor<?x40xi32>
// SCHEDULE: arith.extsi
func.func @int8_dynamic_rows(%a: tensor<?x40xi8>, %b: tensor<40x8xi8>) -> tensor<?x8xi32> {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i32
  %d = tensor.dim %a, %c0 : tensor<?x40xi8>
  %e = tensor.empty(%d) : tensor<?x8xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<?x8xi32>) -> tensor<?x8xi32>
  %r = linalg.matmul ins(%a, %b : tensor<?x40xi8>, tensor<40x8xi8>) outs(%f : tensor<?x8xi32>) -> tensor<?x8xi32>
  return %r : tensor<?x8xi32>
}

// -----

// A right operand compiled in (a constant, here through the transpose of a
// Linear layer's weight) is packed whole when compiling: the reduction block
// takes the whole reduction (784, up to 1024), each accumulator tile loaded
// and stored once; the same product of a weight passed in keeps 256.
// ZEN4-LABEL: func.func @compiled_in_weight
// ZEN4: linalg.matmul {mithril.lowering_config = #mithril.lowering_config<kernel = matmul, register_tile = [8, 32, 1], cache_tile = [128, 256, 784]>} ins(%arg0, %transposed
// ZEN4: linalg.matmul {mithril.lowering_config = #mithril.lowering_config<kernel = matmul, register_tile = [8, 32, 1], cache_tile = [128, 256, 256]>} ins(%arg0, %arg1
// AVX2 (Zen 2's 6 x 16 tiles) alike.
// ZEN2-LABEL: func.func @compiled_in_weight
// ZEN2: linalg.matmul {{.*}}register_tile = [6, 16, 1], cache_tile = [128, 256, 784]>} ins(%arg0, %transposed
// ZEN2: linalg.matmul {{.*}}register_tile = [6, 16, 1], cache_tile = [128, 256, 256]>} ins(%arg0, %arg1
// Two threads split the compiled-in product by rows (each reads the packed
// weight whole), the other by columns.
// THREADS-LABEL: func.func @compiled_in_weight
// THREADS: linalg.matmul {{.*}}cache_tile = [128, 256, 784], threads = [0, 128]>} ins(%arg0, %transposed
// THREADS: linalg.matmul {{.*}}cache_tile = [128, 256, 256], threads = [1, 256]>} ins(%arg0, %arg1
func.func @compiled_in_weight(%x: tensor<256x784xf32>, %b: tensor<784x512xf32>) -> (tensor<256x512xf32>, tensor<256x512xf32>) {
  %weight = arith.constant dense<5.000000e-01> : tensor<512x784xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<784x512xf32>
  %wt = linalg.transpose ins(%weight : tensor<512x784xf32>) outs(%empty : tensor<784x512xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<256x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<256x512xf32>) -> tensor<256x512xf32>
  %c = linalg.matmul ins(%x, %wt : tensor<256x784xf32>, tensor<784x512xf32>) outs(%init : tensor<256x512xf32>) -> tensor<256x512xf32>
  %d = linalg.matmul ins(%x, %b : tensor<256x784xf32>, tensor<784x512xf32>) outs(%init : tensor<256x512xf32>) -> tensor<256x512xf32>
  return %c, %d : tensor<256x512xf32>, tensor<256x512xf32>
}
