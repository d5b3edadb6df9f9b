// RUN: mithril-opt %s --mithril-x86-tile-matmuls | FileCheck %s
// RUN: mithril-opt %s --mithril-x86-tile-matmuls --convert-linalg-to-loops --convert-scf-to-cf \
// RUN:   --convert-vector-to-llvm=enable-amx --expand-strided-metadata --lower-affine --finalize-memref-to-llvm \
// RUN:   --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids \
// RUN:   | FileCheck %s --check-prefix=ASM

#a = affine_map<(m, n, k, g) -> (m, k, g)>
#b = affine_map<(m, n, k, g) -> (k, n, g)>
#c = affine_map<(m, n, k, g) -> (m, n)>

// A bf16 register tile of 32 rows x one 32-column panel, 128 pairs of
// reduction steps: 2 x 2 accumulator tiles loaded once, a loop of 8 steps
// of 16 pairs (two A tiles, two B tiles, four tdpbf16ps), stored once.
// CHECK-LABEL: func.func @bf16_tile
// CHECK-DAG: %[[A:.*]] = memref.collapse_shape %arg0 {{\[\[}}0], [1, 2]] : memref<32x128x2xbf16, strided<[512, 2, 1], offset: ?>> into memref<32x256xbf16, strided<[512, 1], offset: ?>>
// CHECK-DAG: %[[B:.*]] = memref.collapse_shape %arg1 {{\[\[}}0], [1, 2]] : memref<128x32x2xbf16> into memref<128x64xbf16>
// CHECK-COUNT-4: amx.tile_load %arg2{{.*}} into !amx.tile<16x16xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: amx.tile_load %[[A]]{{.*}} into !amx.tile<16x32xbf16>
// CHECK: amx.tile_load %[[A]]{{.*}} into !amx.tile<16x32xbf16>
// CHECK: amx.tile_load %[[B]][%[[K]], %{{.*}}] : {{.*}} into !amx.tile<16x32xbf16>
// CHECK: amx.tile_load %[[B]][%[[K]], %{{.*}}] : {{.*}} into !amx.tile<16x32xbf16>
// CHECK-COUNT-4: amx.tile_mulf
// CHECK: scf.yield
// CHECK-COUNT-4: amx.tile_store %arg2
// CHECK-NOT: linalg.generic
// ASM-LABEL: bf16_tile:
// ASM: ldtilecfg
// ASM-COUNT-4: tileloadd
// ASM-COUNT-4: tileloadd
// ASM-COUNT-4: tdpbf16ps
// ASM-COUNT-4: tilestored
func.func @bf16_tile(%a: memref<32x128x2xbf16, strided<[512, 2, 1], offset: ?>>,
                     %b: memref<128x32x2xbf16>, %c: memref<32x32xf32, strided<[256, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<32x128x2xbf16, strided<[512, 2, 1], offset: ?>>, memref<128x32x2xbf16>)
      outs(%c : memref<32x32xf32, strided<[256, 1], offset: ?>>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %y : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// i8 (A offset to unsigned): tdpbusd. 16 rows x 64 columns are two blocks
// of 1 x 2 accumulator tiles; 32 quads, two steps of 16.
// CHECK-LABEL: func.func @int8_tile
// CHECK-COUNT-2: amx.tile_load %arg2{{.*}} into !amx.tile<16x16xi32>
// CHECK: scf.for
// CHECK-COUNT-3: amx.tile_load {{.*}} into !amx.tile<16x64xi8>
// CHECK-COUNT-2: amx.tile_muli {{.*}} zext, {{.*}} : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
// CHECK: scf.yield
// CHECK-COUNT-2: amx.tile_store %arg2
// CHECK-COUNT-2: amx.tile_load %arg2{{.*}} into !amx.tile<16x16xi32>
// CHECK: scf.for
// CHECK-COUNT-2: amx.tile_muli
// CHECK-COUNT-2: amx.tile_store %arg2
// ASM-LABEL: int8_tile:
// ASM: tdpbusd
// ASM-NOT: tdpbssd
func.func @int8_tile(%a: memref<16x32x4xi8>, %b: memref<32x64x4xi8>, %c: memref<16x64xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<16x32x4xi8>, memref<32x64x4xi8>) outs(%c : memref<16x64xi32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>} {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %0 = arith.extui %x : i8 to i32
    %1 = arith.extsi %y : i8 to i32
    %2 = arith.muli %0, %1 : i32
    %3 = arith.addi %acc, %2 : i32
    linalg.yield %3 : i32
  }
  return
}

// Signed bytes on both sides are not tdpbusd's product: left alone.
// CHECK-LABEL: func.func @signed_int8
// CHECK-NOT: amx.
// CHECK: linalg.generic
func.func @signed_int8(%a: memref<16x16x4xi8>, %b: memref<16x16x4xi8>, %c: memref<16x16xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<16x16x4xi8>, memref<16x16x4xi8>) outs(%c : memref<16x16xi32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>} {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %0 = arith.extsi %x : i8 to i32
    %1 = arith.extsi %y : i8 to i32
    %2 = arith.muli %0, %1 : i32
    %3 = arith.addi %acc, %2 : i32
    linalg.yield %3 : i32
  }
  return
}

// 8 rows, or 24 pairs of reduction steps, are not whole tiles: left to the
// loop lowering.
// CHECK-LABEL: func.func @partial_rows
// CHECK-NOT: amx.
// CHECK: linalg.generic
func.func @partial_rows(%a: memref<8x16x2xbf16>, %b: memref<16x16x2xbf16>, %c: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<8x16x2xbf16>, memref<16x16x2xbf16>) outs(%c : memref<8x16xf32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %y : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// CHECK-LABEL: func.func @partial_steps
// CHECK-NOT: amx.
// CHECK: linalg.generic
func.func @partial_steps(%a: memref<16x24x2xbf16>, %b: memref<24x16x2xbf16>, %c: memref<16x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<16x24x2xbf16>, memref<24x16x2xbf16>) outs(%c : memref<16x16xf32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %y : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// 24 columns are not whole 16-column tiles: left to the loop lowering.
// CHECK-LABEL: func.func @partial_columns
// CHECK-NOT: amx.
// CHECK: linalg.generic
func.func @partial_columns(%a: memref<16x16x2xbf16>, %b: memref<16x24x2xbf16>, %c: memref<16x24xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<16x16x2xbf16>, memref<16x24x2xbf16>) outs(%c : memref<16x24xf32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %y : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// An accumulator that starts at zero (its fill dropped by the schedule):
// tilezero instead of loading the tiles, the rest as @bf16_tile.
// CHECK-LABEL: func.func @zero_accumulator
// CHECK-NOT: amx.tile_load %arg2
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: scf.for
// CHECK-COUNT-4: amx.tile_mulf
// CHECK: scf.yield
// CHECK-COUNT-4: amx.tile_store %arg2
// ASM-LABEL: zero_accumulator:
// ASM-COUNT-4: tilezero
// ASM-NOT: tileloadd {{.*}}%tmm{{[0-3]}}
// ASM: tdpbf16ps
func.func @zero_accumulator(%a: memref<32x128x2xbf16>, %b: memref<128x32x2xbf16>,
                            %c: memref<32x32xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<32x128x2xbf16>, memref<128x32x2xbf16>) outs(%c : memref<32x32xf32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>,
               mithril.zero_accumulator} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %y : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// Left to the loop lowering (not whole tiles), it gets its zeros back.
// CHECK-LABEL: func.func @zero_accumulator_off_tiles
// CHECK-NOT: amx.
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs(%arg2 : memref<8x16xf32>)
// CHECK: linalg.generic
// CHECK-NOT: mithril.zero_accumulator
func.func @zero_accumulator_off_tiles(%a: memref<8x16x2xbf16>, %b: memref<16x16x2xbf16>,
                                      %c: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<8x16x2xbf16>, memref<16x16x2xbf16>) outs(%c : memref<8x16xf32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_matmul>,
               mithril.zero_accumulator} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %y : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// A tile convolution: two output rows of 16 columns x 32 channels, a 3x3
// kernel over 64 input channels (two 64-byte steps a kernel position). The
// accumulators start from tilezero; at each step each row's A tile is 16
// rows of the input from column j, one row of 64 channels (128 bytes)
// apart, and the weight's B tiles are its groups at (i, j); the windows are
// never copied.
// CHECK-LABEL: func.func @bf16_conv_tile
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[ROW:.*]] = memref.subview %arg0[0, %{{.*}}, 0, 0, 0] [1, 1, 18, 32, 2] [1, 1, 1, 1, 1]
// CHECK: %[[ROWS:.*]] = memref.collapse_shape %[[ROW]] {{\[\[}}0, 1, 2], [3, 4]] : {{.*}} into memref<18x64xbf16, strided<[64, 1], offset: ?>>
// CHECK: amx.tile_load %[[ROWS]][%[[J]], %{{.*}}] : {{.*}} into !amx.tile<16x32xbf16>
// CHECK: memref.subview %arg1[%[[I]], %[[J]], 0, 0, 0] [1, 1, 32, 32, 2]
// CHECK-COUNT-2: amx.tile_load {{.*}}[%[[K]], %{{.*}}] : memref<32x64xbf16, {{.*}}> into !amx.tile<16x32xbf16>
// CHECK-COUNT-4: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store
// CHECK-NOT: linalg.generic
// ASM-LABEL: bf16_conv_tile:
// ASM: tilezero
// ASM: tileloadd
// ASM: tdpbf16ps
// ASM: tilestored
#x = affine_map<(n, oh, ow, f, kh, kw, cg, g) -> (n, oh + kh, ow + kw, cg, g)>
#w = affine_map<(n, oh, ow, f, kh, kw, cg, g) -> (kh, kw, cg, f, g)>
#y = affine_map<(n, oh, ow, f, kh, kw, cg, g) -> (n, oh, ow, f)>
func.func @bf16_conv_tile(%x: memref<1x4x18x32x2xbf16, strided<[36864, 2304, 64, 2, 1], offset: ?>>,
                          %w: memref<3x3x32x32x2xbf16, strided<[12288, 4096, 128, 2, 1], offset: ?>>,
                          %y: memref<1x2x16x32xf32, strided<[14336, 1024, 64, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#x, #w, #y],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "reduction", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x4x18x32x2xbf16, strided<[36864, 2304, 64, 2, 1], offset: ?>>,
                   memref<3x3x32x32x2xbf16, strided<[12288, 4096, 128, 2, 1], offset: ?>>)
      outs(%y : memref<1x2x16x32xf32, strided<[14336, 1024, 64, 1], offset: ?>>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_conv>, mithril.zero_accumulator} {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %0 = arith.extf %a : bf16 to f32
    %1 = arith.extf %b : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}
