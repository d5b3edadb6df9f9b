// RUN: mithril-opt %s -split-input-file --mithril-pad-in-place | FileCheck %s
// RUN: mithril-opt %s -split-input-file --mithril-pad-in-place --one-shot-bufferize="bufferize-function-boundaries" --cse --canonicalize | FileCheck %s --check-prefix=BUF

// A padded value computed from an empty tensor: only the padding is filled
// (one slab per side, each slab the interior of the dimensions before it),
// the value is computed in the interior's slice, and the padded tensor is
// that slice inserted back (bufferized in place: no copy).
// CHECK-LABEL: func.func @Computed(
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x7x8xf32>
// CHECK: %[[T:.+]] = tensor.extract_slice %[[E]][0, 0, 0] [4, 1, 8]
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[T]] : tensor<4x1x8xf32>)
// CHECK: tensor.insert_slice
// CHECK: tensor.extract_slice %{{.+}}[0, 6, 0] [4, 1, 8]
// CHECK: tensor.extract_slice %{{.+}}[0, 1, 0] [4, 5, 1]
// CHECK: tensor.extract_slice %{{.+}}[0, 1, 6] [4, 5, 2]
// CHECK: %[[P:.+]] = tensor.insert_slice
// CHECK: %[[IN:.+]] = tensor.extract_slice %[[P]][0, 1, 1] [4, 5, 5] [1, 1, 1] : tensor<4x7x8xf32> to tensor<4x5x5xf32>
// CHECK: %[[V:.+]] = linalg.generic {{.*}} outs(%[[IN]] : tensor<4x5x5xf32>)
// CHECK-NOT: tensor.pad
// CHECK: tensor.insert_slice %[[V]] into %[[P]][0, 1, 1] [4, 5, 5] [1, 1, 1]
// BUF-LABEL: func.func @Computed(
// BUF: %[[BUF:.+]] = memref.alloc() {{.*}} : memref<4x7x8xf32>
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

// A function argument cannot be computed in place: the padding is filled
// and the argument copied into the interior (not the whole tensor filled
// first).
// CHECK-LABEL: func.func @Argument(
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<3x2xf32>)
// CHECK-NOT: linalg.fill
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
