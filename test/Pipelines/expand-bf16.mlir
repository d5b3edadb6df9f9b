// RUN: mithril-opt %s -mithril-expand-bf16 | FileCheck %s
// Without the expansion, an AVX2 CPU (and an AVX-512 one without BF16) gets
// one __truncsfbf2 call per element; with it, vector integer arithmetic on
// every x86 CPU.
// RUN: mithril-opt %s -mithril-expand-bf16 -convert-to-llvm -reconcile-unrealized-casts \
// RUN:   | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-linux-gnu -mcpu=znver2 \
// RUN:   | FileCheck %s --check-prefix=ZEN2
// RUN: mithril-opt %s -mithril-expand-bf16 -convert-to-llvm -reconcile-unrealized-casts \
// RUN:   | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 \
// RUN:   | FileCheck %s --check-prefix=SKX
// With AVX512-BF16 (native-truncation, as the CPU pipeline sets it for
// znver4 or sapphirerapids) truncations stay, for one vcvtneps2bf16 each;
// widenings are still shifts.
// RUN: mithril-opt %s -mithril-expand-bf16=native-truncation | FileCheck %s --check-prefix=NATIVE
// RUN: mithril-opt %s -mithril-expand-bf16=native-truncation -convert-to-llvm -reconcile-unrealized-casts \
// RUN:   | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-linux-gnu -mcpu=znver4 \
// RUN:   | FileCheck %s --check-prefix=ZEN4

// CHECK-LABEL: func.func @round
// CHECK-NOT: arith.truncf
// CHECK: arith.shrui
// ZEN2-LABEL: round:
// ZEN2-NOT: __truncsfbf2
// ZEN2: vpsrld
// SKX-LABEL: round:
// SKX-NOT: __truncsfbf2
// SKX: vpsrld
// NATIVE-LABEL: func.func @round
// NATIVE: arith.truncf
// ZEN4-LABEL: round:
// ZEN4-NOT: vpsrld
// ZEN4: vcvtneps2bf16
// ZEN4-NOT: vpsrld
// ZEN4-LABEL: widen:
// NATIVE-LABEL: func.func @widen
// NATIVE-NOT: arith.extf
// NATIVE: arith.shli
func.func @round(%x: vector<8xf32>) -> vector<8xbf16> {
  %0 = arith.truncf %x : vector<8xf32> to vector<8xbf16>
  return %0 : vector<8xbf16>
}

// CHECK-LABEL: func.func @widen
// CHECK-NOT: arith.extf
// CHECK: arith.shli
func.func @widen(%x: vector<8xbf16>) -> vector<8xf32> {
  %0 = arith.extf %x : vector<8xbf16> to vector<8xf32>
  return %0 : vector<8xf32>
}
