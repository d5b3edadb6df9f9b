// RUN: mithril-opt %s --one-shot-bufferize="bufferize-function-boundaries" --split-input-file | FileCheck %s

// mithril-opt registers mithril's SubsetOpInterface models of the tensor
// slices (SliceSubsetModels.cpp: the terms compared before any constraint
// set). A loop that reads a slice and writes it back to the same offsets
// bufferizes in place: no buffer.
// CHECK-LABEL: func.func @same_slice
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @same_slice(%t: tensor<64xf32>, %v: f32) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %r = scf.for %i = %c0 to %c64 step %c8 iter_args(%acc = %t) -> tensor<64xf32> {
    %s = tensor.extract_slice %acc[%i] [8] [1] : tensor<64xf32> to tensor<8xf32>
    %f = linalg.fill ins(%v : f32) outs(%s : tensor<8xf32>) -> tensor<8xf32>
    %w = tensor.insert_slice %f into %acc[%i] [8] [1] : tensor<8xf32> into tensor<64xf32>
    scf.yield %w : tensor<64xf32>
  }
  return %r : tensor<64xf32>
}

// -----

// Offsets that differ as SSA values but are equal (the constraint sets
// prove it, after the terms differ): in place too.
// CHECK-LABEL: func.func @equal_offsets
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @equal_offsets(%t: tensor<64xf32>, %v: f32) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %r = scf.for %i = %c0 to %c64 step %c8 iter_args(%acc = %t) -> tensor<64xf32> {
    %j = arith.addi %i, %c0 : index
    %s = tensor.extract_slice %acc[%i] [8] [1] : tensor<64xf32> to tensor<8xf32>
    %f = linalg.fill ins(%v : f32) outs(%s : tensor<8xf32>) -> tensor<8xf32>
    %w = tensor.insert_slice %f into %acc[%j] [8] [1] : tensor<8xf32> into tensor<64xf32>
    scf.yield %w : tensor<64xf32>
  }
  return %r : tensor<64xf32>
}

// -----

// A slice written to other offsets than it was read from, while the old
// values are still read: the write goes to a copy.
// CHECK-LABEL: func.func @other_slice
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @other_slice(%t: tensor<64xf32>, %v: f32, %i: index, %k: index) -> (tensor<64xf32>, f32) {
  %c0 = arith.constant 0 : index
  %s = tensor.extract_slice %t[%i] [8] [1] : tensor<64xf32> to tensor<8xf32>
  %f = linalg.fill ins(%v : f32) outs(%s : tensor<8xf32>) -> tensor<8xf32>
  %w = tensor.insert_slice %f into %t[%k] [8] [1] : tensor<8xf32> into tensor<64xf32>
  %x = tensor.extract %t[%i] : tensor<64xf32>
  return %w, %x : tensor<64xf32>, f32
}
