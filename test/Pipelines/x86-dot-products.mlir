// RUN: mithril-opt %s --mithril-x86-dot-products | FileCheck %s

// One row's quad of unsigned bytes times 16 columns' quads of signed bytes,
// summed into 16 i32 lanes (what mithril-cpu-schedule writes for an int8
// register tile): one vpdpbusd, the quad broadcast to every lane.
// CHECK-LABEL: func.func @quad
// CHECK: %[[LANE:.*]] = vector.bitcast %arg0 : vector<4xi8> to vector<1xi32>
// CHECK: %[[Q:.*]] = vector.extract %[[LANE]][0] : i32 from vector<1xi32>
// CHECK: %[[B:.*]] = vector.broadcast %[[Q]] : i32 to vector<16xi32>
// CHECK: %[[A:.*]] = vector.bitcast %[[B]] : vector<16xi32> to vector<64xi8>
// CHECK: %[[W:.*]] = vector.shape_cast %arg1 : vector<16x4xi8> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%arg2, %[[A]], %[[W]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK-NOT: vector.contract
func.func @quad(%a: vector<4xi8>, %w: vector<16x4xi8>, %acc: vector<16xi32>) -> vector<16xi32> {
  %0 = arith.extui %a : vector<4xi8> to vector<4xi32>
  %1 = arith.extsi %w : vector<16x4xi8> to vector<16x4xi32>
  %2 = vector.contract {indexing_maps = [affine_map<(n, q) -> (q)>, affine_map<(n, q) -> (n, q)>,
                                         affine_map<(n, q) -> (n)>],
                        iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>}
       %0, %1, %acc : vector<4xi32>, vector<16x4xi32> into vector<16xi32>
  return %2 : vector<16xi32>
}

// Signed bytes on both sides are not vpdpbusd's product: left alone.
// CHECK-LABEL: func.func @signed_quad
// CHECK-NOT: llvm.call_intrinsic
// CHECK: vector.contract
func.func @signed_quad(%a: vector<4xi8>, %w: vector<16x4xi8>, %acc: vector<16xi32>) -> vector<16xi32> {
  %0 = arith.extsi %a : vector<4xi8> to vector<4xi32>
  %1 = arith.extsi %w : vector<16x4xi8> to vector<16x4xi32>
  %2 = vector.contract {indexing_maps = [affine_map<(n, q) -> (q)>, affine_map<(n, q) -> (n, q)>,
                                         affine_map<(n, q) -> (n)>],
                        iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>}
       %0, %1, %acc : vector<4xi32>, vector<16x4xi32> into vector<16xi32>
  return %2 : vector<16xi32>
}

// A matrix-vector product's step: 16 lanes of four unsigned bytes times
// 16 lanes of four signed bytes, lane by lane: one vpdpbusd on both as they
// are.
// CHECK-LABEL: func.func @lanewise
// CHECK: %[[U:.*]] = vector.shape_cast %arg0 : vector<16x4xi8> to vector<64xi8>
// CHECK: %[[S:.*]] = vector.shape_cast %arg1 : vector<16x4xi8> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%arg2, %[[U]], %[[S]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK-NOT: vector.contract
func.func @lanewise(%w: vector<16x4xi8>, %a: vector<16x4xi8>, %acc: vector<16xi32>) -> vector<16xi32> {
  %0 = arith.extui %w : vector<16x4xi8> to vector<16x4xi32>
  %1 = arith.extsi %a : vector<16x4xi8> to vector<16x4xi32>
  %2 = vector.contract {indexing_maps = [affine_map<(l, q) -> (l, q)>, affine_map<(l, q) -> (l, q)>,
                                         affine_map<(l, q) -> (l)>],
                        iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>}
       %0, %1, %acc : vector<16x4xi32>, vector<16x4xi32> into vector<16xi32>
  return %2 : vector<16xi32>
}

// Activations read as 64 bytes and flipped from signed to unsigned (xor
// 0x80) on the 16 x 4 tile: the flip moves onto the 64 bytes as read, and
// the shape casts fold away, so no 2-D vector is left for the LLVM lowering
// to unroll into rows.
// CHECK-LABEL: func.func @flipped_lanes
// CHECK: %[[FLIP:.*]] = arith.constant dense<-128> : vector<64xi8>
// CHECK: %[[U:.*]] = arith.xori %arg0, %[[FLIP]] : vector<64xi8>
// CHECK: %[[S:.*]] = vector.shape_cast %arg1 : vector<16x4xi8> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%arg2, %[[U]], %[[S]])
// CHECK-NOT: vector<16x4xi8> to vector<16x4xi32>
// CHECK: return
func.func @flipped_lanes(%bytes: vector<64xi8>, %w: vector<16x4xi8>, %acc: vector<16xi32>) -> vector<16xi32> {
  %sign = arith.constant dense<-128> : vector<16x4xi8>
  %tile = vector.shape_cast %bytes : vector<64xi8> to vector<16x4xi8>
  %flipped = arith.xori %tile, %sign : vector<16x4xi8>
  %0 = arith.extui %flipped : vector<16x4xi8> to vector<16x4xi32>
  %1 = arith.extsi %w : vector<16x4xi8> to vector<16x4xi32>
  %2 = vector.contract {indexing_maps = [affine_map<(l, q) -> (l, q)>, affine_map<(l, q) -> (l, q)>,
                                         affine_map<(l, q) -> (l)>],
                        iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>}
       %0, %1, %acc : vector<16x4xi32>, vector<16x4xi32> into vector<16xi32>
  return %2 : vector<16xi32>
}
