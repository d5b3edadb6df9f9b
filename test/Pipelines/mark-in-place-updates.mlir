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
