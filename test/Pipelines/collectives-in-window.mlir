// RUN: mithril-opt %s -split-input-file --mithril-collectives-in-window | FileCheck %s
// RUN: mithril-opt %s -split-input-file --mithril-collectives-in-window --one-shot-bufferize="bufferize-function-boundaries" --canonicalize | FileCheck %s --check-prefix=BUF

// A product summed over the ranks is computed in its place in the window:
// its zero fill's empty tensor becomes the window's view, and bufferized,
// the product writes the window and nothing is copied there.
// CHECK-LABEL: func.func @Product(
// CHECK: %[[WINDOW:.+]] = mithril.collective_window : memref<4096xi8>
// CHECK: %[[PLACE:.+]] = bufferization.to_tensor %{{.+}} restrict writable
// CHECK-NOT: tensor.empty
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[PLACE]] : tensor<16x64xf32>)
// CHECK: %[[PRODUCT:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<16x8xf32>, tensor<8x64xf32>) outs(%[[ZERO]] : tensor<16x64xf32>)
// CHECK: bufferization.materialize_in_destination %[[PRODUCT]] in %[[PLACE]]
// BUF-LABEL: func.func @Product(
// BUF: %[[WINDOW:.+]] = mithril.collective_window : memref<4096xi8>
// BUF: %[[PLACE:.+]] = memref.view %[[WINDOW]]
// BUF: linalg.fill ins(%{{.+}} : f32) outs(%[[PLACE]] : memref<16x64xf32>)
// BUF: linalg.matmul ins(%{{.+}}, %{{.+}} : {{.+}}) outs(%[[PLACE]] : memref<16x64xf32>)
// BUF-NOT: memref.copy
// BUF: call @sum(%[[PLACE]])
func.func private @sum(memref<16x64xf32>)
func.func @Product(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>) {
  %window = mithril.collective_window : memref<4096xi8>
  %c0 = arith.constant 0 : index
  %view = memref.view %window[%c0][] : memref<4096xi8> to memref<16x64xf32>
  %place = bufferization.to_tensor %view restrict writable : memref<16x64xf32> to tensor<16x64xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x64xf32>) -> tensor<16x64xf32>
  %product = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%init : tensor<16x64xf32>) -> tensor<16x64xf32>
  %staged = bufferization.materialize_in_destination %product in %place : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %buffer = bufferization.to_buffer %staged read_only : tensor<16x64xf32> to memref<16x64xf32>
  func.call @sum(%buffer) : (memref<16x64xf32>) -> ()
  return
}

// -----

// A value that does not come from an empty tensor (an argument) is copied
// into its place; and a materialization into anything but a window keeps
// its empty tensor.
// CHECK-LABEL: func.func @Argument(
// CHECK: bufferization.materialize_in_destination %{{.+}} in
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<4xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[EMPTY]] : tensor<4xf32>)
// BUF-LABEL: func.func @Argument(
// BUF: memref.copy
func.func private @sum4(memref<4xf32>)
func.func @Argument(%g: tensor<4xf32>, %out: memref<4xf32>) {
  %window = mithril.collective_window : memref<64xi8>
  %c0 = arith.constant 0 : index
  %view = memref.view %window[%c0][] : memref<64xi8> to memref<4xf32>
  %place = bufferization.to_tensor %view restrict writable : memref<4xf32> to tensor<4xf32>
  %staged = bufferization.materialize_in_destination %g in %place : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %buffer = bufferization.to_buffer %staged read_only : tensor<4xf32> to memref<4xf32>
  func.call @sum4(%buffer) : (memref<4xf32>) -> ()
  %other = bufferization.to_tensor %out restrict writable : memref<4xf32> to tensor<4xf32>
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<4xf32>
  %filled = linalg.fill ins(%one : f32) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  %kept = bufferization.materialize_in_destination %filled in %other : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %kept_buffer = bufferization.to_buffer %kept read_only : tensor<4xf32> to memref<4xf32>
  func.call @sum4(%kept_buffer) : (memref<4xf32>) -> ()
  return
}

// -----

// A product computed in two parts (split at its register tiles' remainder,
// 48 = 32 + 16 columns), each from a fill of its own, into slices of one
// whole: both parts are computed in their slices of the window, not into
// a tensor of their own copied there (what copies remain copy a slice onto
// itself, which the pipeline's canonicalization after bufferization drops).
// CHECK-LABEL: func.func @Parts(
// CHECK-NOT: tensor.empty
// CHECK: bufferization.materialize_in_destination
// BUF-LABEL: func.func @Parts(
// BUF: %[[WINDOW:.+]] = mithril.collective_window : memref<4096xi8>
// BUF: %[[PLACE:.+]] = memref.view %[[WINDOW]]
// BUF-NOT: memref.alloc
// BUF: %[[LEFT:.+]] = memref.subview %[[PLACE]][0, 0] [16, 32] [1, 1]
// BUF: linalg.fill ins(%{{.+}} : f32) outs(%[[LEFT]] :
// BUF: linalg.matmul ins(%{{.+}}, %{{.+}} : {{.+}}) outs(%[[LEFT]] :
// BUF: %[[RIGHT:.+]] = memref.subview %[[PLACE]][0, 32] [16, 16] [1, 1]
// BUF: linalg.fill ins(%{{.+}} : f32) outs(%[[RIGHT]] :
// BUF: linalg.matmul ins(%{{.+}}, %{{.+}} : {{.+}}) outs(%[[RIGHT]] :
// BUF-NOT: memref.alloc
// BUF: call @sum48(%[[PLACE]])
func.func private @sum48(memref<16x48xf32>)
func.func @Parts(%a: tensor<16x8xf32>, %b: tensor<8x48xf32>) {
  %window = mithril.collective_window : memref<4096xi8>
  %c0 = arith.constant 0 : index
  %view = memref.view %window[%c0][] : memref<4096xi8> to memref<16x48xf32>
  %place = bufferization.to_tensor %view restrict writable : memref<16x48xf32> to tensor<16x48xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x48xf32>
  %left_init = tensor.empty() : tensor<16x32xf32>
  %left_zero = linalg.fill ins(%zero : f32) outs(%left_init : tensor<16x32xf32>) -> tensor<16x32xf32>
  %b_left = tensor.extract_slice %b[0, 0] [8, 32] [1, 1] : tensor<8x48xf32> to tensor<8x32xf32>
  %left = linalg.matmul ins(%a, %b_left : tensor<16x8xf32>, tensor<8x32xf32>) outs(%left_zero : tensor<16x32xf32>) -> tensor<16x32xf32>
  %with_left = tensor.insert_slice %left into %empty[0, 0] [16, 32] [1, 1] : tensor<16x32xf32> into tensor<16x48xf32>
  %right_init = tensor.extract_slice %with_left[0, 32] [16, 16] [1, 1] : tensor<16x48xf32> to tensor<16x16xf32>
  %right_zero = linalg.fill ins(%zero : f32) outs(%right_init : tensor<16x16xf32>) -> tensor<16x16xf32>
  %b_right = tensor.extract_slice %b[0, 32] [8, 16] [1, 1] : tensor<8x48xf32> to tensor<8x16xf32>
  %right = linalg.matmul ins(%a, %b_right : tensor<16x8xf32>, tensor<8x16xf32>) outs(%right_zero : tensor<16x16xf32>) -> tensor<16x16xf32>
  %whole = tensor.insert_slice %right into %with_left[0, 32] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<16x48xf32>
  %staged = bufferization.materialize_in_destination %whole in %place : (tensor<16x48xf32>, tensor<16x48xf32>) -> tensor<16x48xf32>
  %buffer = bufferization.to_buffer %staged read_only : tensor<16x48xf32> to memref<16x48xf32>
  func.call @sum48(%buffer) : (memref<16x48xf32>) -> ()
  return
}

// -----

// A zero fill that two products of one shape share (CSE merges their fills):
// the operand's product is not computed in the window from it, which would
// put the other product's accumulators in the window too, written after the
// operand's sum started (MPI may read the window until it waits).
// CHECK-LABEL: func.func @SharedFill(
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<6x8xf32>
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[EMPTY]] :
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<6x4xf32>, tensor<4x8xf32>) outs(%[[ZERO]] :
// CHECK: bufferization.materialize_in_destination
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<6x4xf32>, tensor<4x8xf32>) outs(%[[ZERO]] :
func.func private @sum68(memref<6x8xf32>)
func.func @SharedFill(%a: tensor<6x4xf32>, %b: tensor<4x8xf32>, %c: tensor<6x4xf32>) -> tensor<6x8xf32> {
  %window = mithril.collective_window : memref<4096xi8>
  %c0 = arith.constant 0 : index
  %view = memref.view %window[%c0][] : memref<4096xi8> to memref<6x8xf32>
  %place = bufferization.to_tensor %view restrict writable : memref<6x8xf32> to tensor<6x8xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<6x8xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<6x8xf32>) -> tensor<6x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%filled : tensor<6x8xf32>) -> tensor<6x8xf32>
  %staged = bufferization.materialize_in_destination %p in %place : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %buffer = bufferization.to_buffer %staged read_only : tensor<6x8xf32> to memref<6x8xf32>
  func.call @sum68(%buffer) : (memref<6x8xf32>) -> ()
  %q = linalg.matmul ins(%c, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%filled : tensor<6x8xf32>) -> tensor<6x8xf32>
  return %q : tensor<6x8xf32>
}
