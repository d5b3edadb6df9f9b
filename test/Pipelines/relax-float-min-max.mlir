// RUN: mithril-opt %s --mithril-relax-float-min-max | FileCheck %s
// RUN: mithril-opt %s --mithril-relax-float-min-max --convert-vector-to-llvm --convert-arith-to-llvm --convert-func-to-llvm --reconcile-unrealized-casts | mlir-translate --mlir-to-llvmir | llc -mcpu=znver4 | FileCheck %s --check-prefix=ASM

// Float minimum and maximum, elementwise and reduced, get nsz (their other
// flags kept); integer ones and other reductions are left alone.
// CHECK-LABEL: func.func @min_max
// CHECK: arith.maximumf %{{.+}}, %{{.+}} fastmath<nsz> : vector<16xf32>
// CHECK: arith.minimumf %{{.+}}, %{{.+}} fastmath<nnan,nsz> : vector<16xf32>
// CHECK: vector.reduction <maximumf>, %{{.+}} fastmath<nsz> : vector<16xf32> into f32
// CHECK: vector.reduction <add>, %{{.+}} : vector<16xf32> into f32
// CHECK: arith.maxsi %{{.+}}, %{{.+}} : vector<16xi32>
// On x86 the maximum of two vectors is then vmaxps and a NaN fix-up, with no
// sign masks (vpmovd2m) and blends to order the zeros.
// ASM-LABEL: min_max:
// ASM-NOT: vpmovd2m
// ASM: vmaxps
// ASM: vcmpunordps
func.func @min_max(%a: vector<16xf32>, %b: vector<16xf32>, %i: vector<16xi32>, %j: vector<16xi32>)
    -> (vector<16xf32>, vector<16xf32>, f32, f32, vector<16xi32>) {
  %max = arith.maximumf %a, %b : vector<16xf32>
  %min = arith.minimumf %a, %b fastmath<nnan> : vector<16xf32>
  %rmax = vector.reduction <maximumf>, %a : vector<16xf32> into f32
  %sum = vector.reduction <add>, %a : vector<16xf32> into f32
  %imax = arith.maxsi %i, %j : vector<16xi32>
  return %max, %min, %rmax, %sum, %imax : vector<16xf32>, vector<16xf32>, f32, f32, vector<16xi32>
}
