// RUN: mithril-opt %s --pass-pipeline='builtin.module(func.func(mithril-gpu-reductions-inner))' | FileCheck %s

// The sum over rows of a [256, 64] gradient: the row loop (a reduction) came
// first, which made 256 kernel launches; with the column loop first it is one
// kernel of 64 threads that each loop over the rows.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @column_sums
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
func.func @column_sums(%g: memref<256x64xf32>, %sum: memref<64xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<256x64xf32>) outs(%sum : memref<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  return
}

// Parallel loops already first: unchanged.
// CHECK-LABEL: func.func @row_sums
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}} : memref<256x64xf32>)
#rows = affine_map<(d0, d1) -> (d0)>
func.func @row_sums(%g: memref<256x64xf32>, %sum: memref<256xf32>) {
  linalg.generic {indexing_maps = [#in, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%g : memref<256x64xf32>) outs(%sum : memref<256xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  return
}
