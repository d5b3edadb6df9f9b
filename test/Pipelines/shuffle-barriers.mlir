// RUN: mithril-opt %s --mithril-shuffle-barriers=vector-bits=512 | FileCheck %s
// RUN: mithril-opt %s --mithril-shuffle-barriers=vector-bits=256 | FileCheck %s --check-prefix=AVX2
// RUN: mithril-opt %s --mithril-shuffle-barriers=vector-bits=512 --convert-vector-to-llvm --convert-func-to-llvm --reconcile-unrealized-casts | mlir-translate --mlir-to-llvmir | llc -mcpu=znver4 | FileCheck %s --check-prefix=ASM

// Four rounds of two-source shuffles (a transpose's): each shuffle of the
// second round reads two of the first and is read by the third, so it gets
// an empty inline-asm copy, which the third round reads; the first round
// (reading no shuffles) and the last (read by no shuffle) get none.
// CHECK-LABEL: func.func @rounds
// CHECK-COUNT-2: vector.shuffle %arg0, %arg1
// CHECK: %[[S2:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 1, 16, 17
// CHECK-NEXT: %[[C2:.+]] = llvm.inline_asm "", "=v,0" %[[S2]] : (vector<16xf32>) -> vector<16xf32>
// CHECK: %[[T2:.+]] = vector.shuffle %{{.+}}, %{{.+}} [2, 3, 18, 19
// CHECK-NEXT: %[[D2:.+]] = llvm.inline_asm "", "=v,0" %[[T2]]
// CHECK: %[[S3:.+]] = vector.shuffle %[[C2]], %[[D2]]
// CHECK-NOT: llvm.inline_asm
// CHECK: return
// With 256-bit registers a vector of 16 floats fills two: no copies.
// AVX2-LABEL: func.func @rounds
// AVX2-NOT: llvm.inline_asm
// The instructions stay those of the shuffles, with the copies as markers.
// ASM-LABEL: rounds:
// ASM: #APP
// ASM: #NO_APP
// ASM: ret
func.func @rounds(%a: vector<16xf32>, %b: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>) {
  %s1 = vector.shuffle %a, %b [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
  %t1 = vector.shuffle %a, %b [2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31] : vector<16xf32>, vector<16xf32>
  %s2 = vector.shuffle %s1, %t1 [0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29] : vector<16xf32>, vector<16xf32>
  %t2 = vector.shuffle %s1, %t1 [2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31] : vector<16xf32>, vector<16xf32>
  %s3 = vector.shuffle %s2, %t2 [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27] : vector<16xf32>, vector<16xf32>
  %t3 = vector.shuffle %s2, %t2 [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31] : vector<16xf32>, vector<16xf32>
  %s4 = vector.shuffle %s3, %t3 [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27] : vector<16xf32>, vector<16xf32>
  %t4 = vector.shuffle %s3, %t3 [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31] : vector<16xf32>, vector<16xf32>
  return %s4, %t4 : vector<16xf32>, vector<16xf32>
}

// 256-bit vectors fill a register of either width; a shuffle of one
// shuffle and an argument, or one no shuffle reads, gets no copy.
// CHECK-LABEL: func.func @ymm
// CHECK-COUNT-1: llvm.inline_asm "", "=v,0" %{{.+}} : (vector<8xf32>) -> vector<8xf32>
// CHECK-NOT: llvm.inline_asm
// CHECK: return
// AVX2-LABEL: func.func @ymm
// AVX2-COUNT-1: llvm.inline_asm "", "=v,0"
// AVX2-NOT: llvm.inline_asm
func.func @ymm(%a: vector<8xf32>, %b: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>) {
  %s1 = vector.shuffle %a, %b [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xf32>, vector<8xf32>
  %t1 = vector.shuffle %a, %b [2, 10, 3, 11, 6, 14, 7, 15] : vector<8xf32>, vector<8xf32>
  %s2 = vector.shuffle %s1, %t1 [0, 1, 8, 9, 4, 5, 12, 13] : vector<8xf32>, vector<8xf32>
  %mixed = vector.shuffle %s2, %a [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
  %s3 = vector.shuffle %mixed, %b [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
  %last = vector.shuffle %s1, %t1 [1, 0, 9, 8, 5, 4, 13, 12] : vector<8xf32>, vector<8xf32>
  return %s3, %last : vector<8xf32>, vector<8xf32>
}
