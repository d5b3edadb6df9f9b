// RUN: mithril-opt %s -mithril-mark-in-place-updates | FileCheck %s

// An SGD update: each tile of the weight read, then the same tile of its next
// value written, by one iteration: new:w may be w's buffer; new:b, read by
// nothing but written from a copy of b made before, too.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: mithril.in_place_outputs = ["new:w", "new:b"]
func.func @sgd(%w: memref<16x64xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
               %b: memref<64xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "b"},
               %g: memref<16x64xf32> {mithril.kind = #mithril.input_kind<data>, mithril.name = "g"},
               %new_w: memref<16x64xf32> {mithril.name = "new:w"},
               %new_b: memref<64xf32> {mithril.name = "new:b"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c4 = arith.constant 4 : index
  %pad = arith.constant 0.0 : f32
  %lr = arith.constant dense<0.1> : vector<4x16xf32>
  %tmp = memref.alloc() : memref<64xf32>
  memref.copy %b, %tmp : memref<64xf32> to memref<64xf32>
  scf.for %i = %c0 to %c16 step %c4 {
    scf.for %j = %c0 to %c64 step %c16 {
      %old = vector.transfer_read %w[%i, %j], %pad {in_bounds = [true, true]} : memref<16x64xf32>, vector<4x16xf32>
      %grad = vector.transfer_read %g[%i, %j], %pad {in_bounds = [true, true]} : memref<16x64xf32>, vector<4x16xf32>
      %step = arith.mulf %grad, %lr : vector<4x16xf32>
      %next = arith.subf %old, %step : vector<4x16xf32>
      vector.transfer_write %next, %new_w[%i, %j] {in_bounds = [true, true]} : vector<4x16xf32>, memref<16x64xf32>
    }
  }
  memref.copy %tmp, %new_b : memref<64xf32> to memref<64xf32>
  memref.dealloc %tmp : memref<64xf32>
  return
}

// The weight is read again after the update (a later product): writing over
// it would feed the product the new values.
// CHECK-LABEL: func.func @read_after
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @read_after(%w: memref<64xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                      %new_w: memref<64xf32> {mithril.name = "new:w"},
                      %out: memref<64xf32> {mithril.name = "y"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c16 {
    %old = vector.transfer_read %w[%i], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
    %next = arith.addf %old, %old : vector<16xf32>
    vector.transfer_write %next, %new_w[%i] {in_bounds = [true]} : vector<16xf32>, memref<64xf32>
  }
  memref.copy %w, %out : memref<64xf32> to memref<64xf32>
  return
}

// Read one tile ahead of the write: the next iteration would read an element
// this one overwrote.
// CHECK-LABEL: func.func @shifted
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @shifted(%w: memref<80xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                   %new_w: memref<80xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c16 {
    %ahead = arith.addi %i, %c16 : index
    %old = vector.transfer_read %w[%ahead], %pad {in_bounds = [true]} : memref<80xf32>, vector<16xf32>
    vector.transfer_write %old, %new_w[%i] {in_bounds = [true]} : vector<16xf32>, memref<80xf32>
  }
  return
}

// Vectors of 16 on a step of 8 overlap: an iteration reads what the one
// before wrote.
// CHECK-LABEL: func.func @overlapping_tiles
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @overlapping_tiles(%w: memref<72xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                             %new_w: memref<72xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c56 = arith.constant 56 : index
  %c8 = arith.constant 8 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c56 step %c8 {
    %old = vector.transfer_read %w[%i], %pad {in_bounds = [true]} : memref<72xf32>, vector<16xf32>
    vector.transfer_write %old, %new_w[%i] {in_bounds = [true]} : vector<16xf32>, memref<72xf32>
  }
  return
}

// A loop whose induction variable picks no element (an accumulation over
// steps) reads each element again after the first pass wrote it.
// CHECK-LABEL: func.func @repeated
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @repeated(%w: memref<64xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                    %new_w: memref<64xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c3 step %c1 {
    scf.for %i = %c0 to %c64 step %c16 {
      %old = vector.transfer_read %w[%i], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
      %next = arith.addf %old, %old : vector<16xf32>
      vector.transfer_write %next, %new_w[%i] {in_bounds = [true]} : vector<16xf32>, memref<64xf32>
    }
  }
  return
}

// The weight's address goes to a call after the update: whatever the callee
// reads, it may be the old values.
// CHECK-LABEL: func.func @address_taken
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func private @consume(i64)
func.func @address_taken(%w: memref<64xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                         %new_w: memref<64xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c16 {
    %old = vector.transfer_read %w[%i], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
    vector.transfer_write %old, %new_w[%i] {in_bounds = [true]} : vector<16xf32>, memref<64xf32>
  }
  %address = memref.extract_aligned_pointer_as_index %w : memref<64xf32> -> index
  %int = arith.index_cast %address : index to i64
  func.call @consume(%int) : (i64) -> ()
  return
}

// Only an output named new:<an input> of the input's type pairs with it.
// CHECK-LABEL: func.func @unpaired
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @unpaired(%w: memref<64xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                    %next: memref<64xf32> {mithril.name = "w_next"},
                    %new_v: memref<64xf32> {mithril.name = "new:v"}) {
  memref.copy %w, %next : memref<64xf32> to memref<64xf32>
  memref.copy %w, %new_v : memref<64xf32> to memref<64xf32>
  return
}

// The update in a product's epilogue (a single process's SGD step): tiles of
// 128 rows by 256 columns of the output, each written through subviews at
// offsets the loops add up (affine.apply), the weight read at the sum; the
// last 16 columns by a second loop nest, whose reads lie apart from what
// the first one wrote.
// CHECK-LABEL: func.func @epilogue
// CHECK-SAME: mithril.in_place_outputs = ["new:w"]
#sum = affine_map<()[s0, s1] -> (s0 + s1)>
func.func @epilogue(%w: memref<512x784xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                    %g: memref<512x784xf32> {mithril.kind = #mithril.input_kind<data>, mithril.name = "g"},
                    %new_w: memref<512x784xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %c768 = arith.constant 768 : index
  %pad = arith.constant 0.0 : f32
  %main = memref.subview %new_w[0, 0] [512, 768] [1, 1] : memref<512x784xf32> to memref<512x768xf32, strided<[784, 1]>>
  scf.for %j0 = %c0 to %c768 step %c256 {
    scf.for %i0 = %c0 to %c512 step %c128 {
      %tile = memref.subview %main[%i0, %j0] [128, 256] [1, 1] : memref<512x768xf32, strided<[784, 1]>> to memref<128x256xf32, strided<[784, 1], offset: ?>>
      scf.for %i = %c0 to %c128 step %c8 {
        scf.for %j = %c0 to %c256 step %c32 {
          %row = affine.apply #sum()[%i0, %i]
          %col = affine.apply #sum()[%j0, %j]
          %old = vector.transfer_read %w[%row, %col], %pad {in_bounds = [true, true]} : memref<512x784xf32>, vector<8x32xf32>
          %grad = vector.transfer_read %g[%row, %col], %pad {in_bounds = [true, true]} : memref<512x784xf32>, vector<8x32xf32>
          %next = arith.subf %old, %grad : vector<8x32xf32>
          vector.transfer_write %next, %tile[%i, %j] {in_bounds = [true, true]} : vector<8x32xf32>, memref<128x256xf32, strided<[784, 1], offset: ?>>
        }
      }
    }
  }
  %rest = memref.subview %new_w[0, 768] [512, 16] [1, 1] : memref<512x784xf32> to memref<512x16xf32, strided<[784, 1], offset: 768>>
  scf.for %i = %c0 to %c512 step %c8 {
    %old = vector.transfer_read %w[%i, %c768], %pad {in_bounds = [true, true]} : memref<512x784xf32>, vector<8x16xf32>
    %grad = vector.transfer_read %g[%i, %c768], %pad {in_bounds = [true, true]} : memref<512x784xf32>, vector<8x16xf32>
    %next = arith.subf %old, %grad : vector<8x16xf32>
    vector.transfer_write %next, %rest[%i, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, memref<512x16xf32, strided<[784, 1], offset: 768>>
  }
  return
}

// An inner loop that reaches past the outer loop's step (rows 0-255 from
// each outer step of 128): the second outer step reads rows the first wrote.
// CHECK-LABEL: func.func @inner_reaches_past_step
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @inner_reaches_past_step(%w: memref<512x32xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                                   %new_w: memref<512x32xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c384 = arith.constant 384 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i0 = %c0 to %c384 step %c128 {
    scf.for %i = %c0 to %c256 step %c8 {
      %row = affine.apply #sum()[%i0, %i]
      %old = vector.transfer_read %w[%row, %c0], %pad {in_bounds = [true, true]} : memref<512x32xf32>, vector<8x32xf32>
      %next = arith.addf %old, %old : vector<8x32xf32>
      vector.transfer_write %next, %new_w[%row, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<512x32xf32>
    }
  }
  return
}

// A later loop reads columns 16-47 of the weight after an earlier one wrote
// columns 0-31 of its next value: the boxes meet.
// CHECK-LABEL: func.func @later_read_overlaps
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @later_read_overlaps(%w: memref<64x64xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                               %new_w: memref<64x64xf32> {mithril.name = "new:w"},
                               %y: memref<64x32xf32> {mithril.name = "y"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %old = vector.transfer_read %w[%i, %c0], %pad {in_bounds = [true]} : memref<64x64xf32>, vector<32xf32>
    vector.transfer_write %old, %new_w[%i, %c0] {in_bounds = [true]} : vector<32xf32>, memref<64x64xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    %old = vector.transfer_read %w[%i, %c16], %pad {in_bounds = [true]} : memref<64x64xf32>, vector<32xf32>
    vector.transfer_write %old, %y[%i, %c0] {in_bounds = [true]} : vector<32xf32>, memref<64x32xf32>
  }
  return
}

// A convolution's 3x3 filters, one output channel an iteration: read as
// 1x1x3x3 vectors, written as 1x3x3 ones skipping the unit input-channel
// dimension (the same elements).
// CHECK-LABEL: func.func @filters
// CHECK-SAME: mithril.in_place_outputs = ["new:w"]
#skip_channel = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
func.func @filters(%w: memref<32x1x3x3xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                   %new_w: memref<32x1x3x3xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %pad = arith.constant 0.0 : f32
  scf.for %o = %c0 to %c32 step %c1 {
    %old = vector.transfer_read %w[%o, %c0, %c0, %c0], %pad {in_bounds = [true, true, true, true]} : memref<32x1x3x3xf32>, vector<1x1x3x3xf32>
    %flat = vector.shape_cast %old : vector<1x1x3x3xf32> to vector<1x3x3xf32>
    %next = arith.addf %flat, %flat : vector<1x3x3xf32>
    vector.transfer_write %next, %new_w[%o, %c0, %c0, %c0] {in_bounds = [true, true, true], permutation_map = #skip_channel} : vector<1x3x3xf32>, memref<32x1x3x3xf32>
  }
  return
}

// Each row read is written as a column: the second row's first element was
// overwritten by the first column before it is read.
// CHECK-LABEL: func.func @rows_to_columns
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
#column = affine_map<(d0, d1) -> (d0)>
func.func @rows_to_columns(%w: memref<16x16xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                           %new_w: memref<16x16xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    %row = vector.transfer_read %w[%i, %c0], %pad {in_bounds = [true]} : memref<16x16xf32>, vector<16xf32>
    vector.transfer_write %row, %new_w[%c0, %i] {in_bounds = [true], permutation_map = #column} : vector<16xf32>, memref<16x16xf32>
  }
  return
}

// A whole tile read before any of it is written may be written transposed.
// CHECK-LABEL: func.func @tile_read_whole
// CHECK-SAME: mithril.in_place_outputs = ["new:w"]
#swap = affine_map<(d0, d1) -> (d1, d0)>
func.func @tile_read_whole(%w: memref<16x16xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                           %new_w: memref<16x16xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %old = vector.transfer_read %w[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
  vector.transfer_write %old, %new_w[%c0, %c0] {in_bounds = [true, true], permutation_map = #swap} : vector<16x16xf32>, memref<16x16xf32>
  return
}

// A weight gradient's rows past its register tiles, updated outside any loop
// (rows 12-15 after a loop over rows 0-11): the straight-line read is of rows
// no earlier op wrote, the write after it. (It was taken for a read of
// unknown rows, and such a training step kept no weight in place.)
// CHECK-LABEL: func.func @straight_line_rest
// CHECK-SAME: mithril.in_place_outputs = ["new:w"]
func.func @straight_line_rest(%w: memref<16x16xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                              %g: memref<16x16xf32> {mithril.kind = #mithril.input_kind<data>, mithril.name = "g"},
                              %new_w: memref<16x16xf32> {mithril.name = "new:w"}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c12 = arith.constant 12 : index
  %pad = arith.constant 0.0 : f32
  %head = memref.subview %new_w[0, 0] [12, 16] [1, 1] : memref<16x16xf32> to memref<12x16xf32, strided<[16, 1]>>
  scf.for %i = %c0 to %c12 step %c4 {
    %old = vector.transfer_read %w[%i, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<4x16xf32>
    %grad = vector.transfer_read %g[%i, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<4x16xf32>
    %next = arith.subf %old, %grad : vector<4x16xf32>
    vector.transfer_write %next, %head[%i, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, memref<12x16xf32, strided<[16, 1]>>
  }
  %old = vector.transfer_read %w[%c12, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<4x16xf32>
  %grad = vector.transfer_read %g[%c12, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<4x16xf32>
  %next = arith.subf %old, %grad : vector<4x16xf32>
  vector.transfer_write %next, %new_w[%c12, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, memref<16x16xf32>
  return
}

// The same straight-line read, of rows the loop has already written.
// CHECK-LABEL: func.func @straight_line_overwritten
// CHECK-NOT: mithril.in_place_outputs
// CHECK: return
func.func @straight_line_overwritten(%w: memref<16x16xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"},
                                     %new_w: memref<16x16xf32> {mithril.name = "new:w"},
                                     %out: memref<4x16xf32> {mithril.name = "y"}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c16 step %c4 {
    %old = vector.transfer_read %w[%i, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<4x16xf32>
    %next = arith.addf %old, %old : vector<4x16xf32>
    vector.transfer_write %next, %new_w[%i, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, memref<16x16xf32>
  }
  %again = vector.transfer_read %w[%c8, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<4x16xf32>
  vector.transfer_write %again, %out[%c0, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, memref<4x16xf32>
  return
}
