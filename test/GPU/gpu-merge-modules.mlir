// Kernels outlined into separate gpu.modules move into the first one; a name
// that clashes is renamed, and every launch points at its kernel's new home.
// RUN: mithril-opt %s --mithril-gpu-merge-modules | FileCheck %s

// CHECK-LABEL: gpu.module @first
// CHECK: gpu.func @k(
// CHECK: gpu.func @other(
// CHECK: gpu.func @k_0(
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @host(
// CHECK: gpu.launch_func @first::@k blocks
// CHECK: gpu.launch_func @first::@other blocks
// CHECK: gpu.launch_func @first::@k_0 blocks
module attributes {gpu.container_module} {
  gpu.module @first {
    gpu.func @k(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @second {
    gpu.func @other(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @third {
    gpu.func @k(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @host(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @first::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @second::@other blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @third::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    return
  }
}
