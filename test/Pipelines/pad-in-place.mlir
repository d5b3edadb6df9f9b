// RUN: mithril-opt %s -split-input-file --mithril-pad-in-place | FileCheck %s
// RUN: mithril-opt %s -split-input-file --mithril-pad-in-place --one-shot-bufferize="bufferize-function-boundaries" --cse --canonicalize | FileCheck %s --check-prefix=BUF
// RUN: mithril-opt %s -split-input-file --mithril-pad-in-place="vector-runs=false" | FileCheck %s --check-prefix=SLAB

// A padded value computed from an empty tensor: only the padding is written,
// as the runs of memory between the interior's rows through a flat view (the
// first and last runs, one loop of the 19-element runs between planes, a
// nest of the 3-element runs between rows: a row's right padding and the
// next row's left), the value is computed in the interior's slice, and the
// padded tensor is that slice inserted back (bufferized in place: no copy,
// the flat view folded into the buffer).
// CHECK-LABEL: func.func @Computed(
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x7x8xf32>
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[E]] {{\[}}[0, 1, 2]] : tensor<4x7x8xf32> into tensor<224xf32>
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[FIRST:.+]] = vector.transfer_write %{{.+}}, %[[FLAT]][%[[C0]]] {in_bounds = [true]} : vector<9xf32>, tensor<224xf32>
// CHECK: %[[C214:.+]] = arith.constant 214 : index
// CHECK: %[[LAST:.+]] = vector.transfer_write %{{.+}}, %[[FIRST]][%[[C214]]] {{.*}} : vector<10xf32>, tensor<224xf32>
// CHECK: %[[PLANES:.+]] = scf.for %{{.+}} = %c1 to %c4 {{.*}} iter_args(%{{.+}} = %[[LAST]])
// CHECK: vector.transfer_write {{.*}} : vector<19xf32>, tensor<224xf32>
// CHECK: %[[ROWS:.+]] = scf.for %{{.+}} iter_args(%{{.+}} = %[[PLANES]])
// CHECK: scf.for
// CHECK: vector.transfer_write {{.*}} : vector<3xf32>, tensor<224xf32>
// CHECK: %[[P:.+]] = tensor.expand_shape %[[ROWS]] {{\[}}[0, 1, 2]] output_shape [4, 7, 8]
// CHECK: %[[IN:.+]] = tensor.extract_slice %[[P]][0, 1, 1] [4, 5, 5] [1, 1, 1] : tensor<4x7x8xf32> to tensor<4x5x5xf32>
// CHECK: %[[V:.+]] = linalg.generic {{.*}} outs(%[[IN]] : tensor<4x5x5xf32>)
// CHECK-NOT: tensor.pad
// CHECK: tensor.insert_slice %[[V]] into %[[P]][0, 1, 1] [4, 5, 5] [1, 1, 1]
// Without vector runs (the GPU pipeline's), one fill a slab a side, each
// slab the interior of the dimensions before it.
// SLAB-LABEL: func.func @Computed(
// SLAB: %[[E:.+]] = tensor.empty() : tensor<4x7x8xf32>
// SLAB: %[[T:.+]] = tensor.extract_slice %[[E]][0, 0, 0] [4, 1, 8]
// SLAB: linalg.fill ins(%{{.+}} : f32) outs(%[[T]] : tensor<4x1x8xf32>)
// SLAB: tensor.extract_slice %{{.+}}[0, 6, 0] [4, 1, 8]
// SLAB: tensor.extract_slice %{{.+}}[0, 1, 0] [4, 5, 1]
// SLAB: tensor.extract_slice %{{.+}}[0, 1, 6] [4, 5, 2]
// SLAB-NOT: vector.transfer_write
// SLAB: linalg.generic
// BUF-LABEL: func.func @Computed(
// BUF: %[[BUF:.+]] = memref.alloc() {{.*}} : memref<4x7x8xf32>
// BUF: %[[FLAT:.+]] = memref.collapse_shape %[[BUF]]
// BUF: vector.transfer_write {{.*}}, %[[FLAT]]
// BUF: %[[INTERIOR:.+]] = memref.subview %[[BUF]][0, 1, 1] [4, 5, 5] [1, 1, 1]
// BUF: linalg.generic {{.*}} outs(%[[INTERIOR]] :
// BUF-NOT: memref.copy
// BUF: return %[[BUF]]
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @Computed(%x: tensor<4x5x5xf32>) -> tensor<4x7x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x5x5xf32>) outs(%e : tensor<4x5x5xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x5x5xf32>
  %p = tensor.pad %r low[0, 1, 1] high[0, 1, 2] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x5x5xf32> to tensor<4x7x8xf32>
  return %p : tensor<4x7x8xf32>
}

// -----

// A function argument cannot be computed in place: the padding is written
// (a run before the first row, then one between each two) and the argument
// copied into the interior (not the whole tensor filled first).
// CHECK-LABEL: func.func @Argument(
// CHECK: vector.transfer_write {{.*}} : vector<2xf32>, tensor<18xf32>
// CHECK: scf.for %{{.+}} = %c1 to %c3
// CHECK: vector.transfer_write {{.*}} : vector<2xf32>, tensor<18xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: tensor.insert_slice %arg0 into %{{.+}}[0, 2] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x6xf32>
func.func @Argument(%x: tensor<3x4xf32>) -> tensor<3x6xf32> {
  %one = arith.constant 1.0 : f32
  %p = tensor.pad %x low[0, 2] high[0, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %one : f32
  } : tensor<3x4xf32> to tensor<3x6xf32>
  return %p : tensor<3x6xf32>
}
// BUF-LABEL: func.func @Argument(
// BUF: memref.copy

// -----

// Dimensions padded by nothing merge with the one before them (a batch and
// channels: one loop over their 12 planes), and runs longer than a vector
// store takes (296 floats, 9,472 bits, past the 8,192) are filled as slices.
// CHECK-LABEL: func.func @Runs(
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0, 1, 2, 3]] : tensor<2x6x3x300xf32> into tensor<10800xf32>
// CHECK: %[[FIRST:.+]] = tensor.extract_slice %{{.+}}[0] [296] [1]
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[FIRST]] : tensor<296xf32>)
// CHECK: %[[LAST:.+]] = tensor.extract_slice %{{.+}}[10500] [300] [1]
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[LAST]] : tensor<300xf32>)
// CHECK: scf.for %{{.+}} = %c1 to %c12
// CHECK: tensor.extract_slice %{{.+}}[%{{.+}}] [596] [1]
// CHECK: scf.for %{{.+}} = %c0 to %c12
// CHECK: tensor.extract_slice %{{.+}}[%{{.+}}] [296] [1]
// CHECK-NOT: vector.transfer_write
// CHECK: tensor.insert_slice %arg0 into %{{.+}}[0, 0, 0, 296] [2, 6, 2, 4]
func.func @Runs(%x: tensor<2x6x2x4xf32>) -> tensor<2x6x3x300xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 0, 296] high[0, 0, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x6x2x4xf32> to tensor<2x6x3x300xf32>
  return %p : tensor<2x6x3x300xf32>
}
