// The stages of mithril-gpu-pipeline, without a GPU: loops become outlined
// kernels launched from host code that allocates device memory.
// RUN: mithril-opt %s --pass-pipeline='builtin.module(mithril-gpu-pipeline{shapes=x:8x16 stop-after=kernels})' | FileCheck %s --check-prefix=KERNELS
// RUN: mithril-opt %s --pass-pipeline='builtin.module(mithril-gpu-pipeline{shapes=x:8x16})' | FileCheck %s --check-prefix=BINARY
// RUN: mithril-run %s --target=cuda --emit=ptx --shape=x:8x16 | FileCheck %s --check-prefix=PTX

mithril.model @Net(data %x: tensor<?x16xf32>, param %w: tensor<16x16xf32>) -> (y: tensor<?x16xf32>) {
  %wt = mithril.transpose %w : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = mithril.matmul %x, %wt : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %r = mithril.relu %mm : (tensor<?x16xf32>) -> tensor<?x16xf32>
  mithril.output %r : tensor<?x16xf32>
}

// KERNELS-LABEL: func.func @Net(
// KERNELS: gpu.alloc
// KERNELS: gpu.launch_func @Net_kernel::@Net_kernel blocks in
// KERNELS: gpu.dealloc
// KERNELS: gpu.module @Net_kernel
// KERNELS: gpu.func @Net_kernel(
// KERNELS-SAME: kernel
// The matmul's kernel: 16x16 tiles of both operands in shared memory
// (mithril-gpu-tile-contractions), each thread's sum in private memory, a
// barrier after each stage.
// KERNELS: gpu.func @Net_kernel_{{[0-9]+}}({{.*}}) workgroup(%{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>) private(%{{.*}} : memref<1x1xf32, #gpu.address_space<private>>) kernel
// KERNELS: gpu.barrier
// KERNELS: arith.mulf {{.*}} fastmath<contract>
// KERNELS: gpu.barrier

// BINARY: gpu.binary @Net_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80"{{.*}}>

// PTX: // kernel module @Net_kernel for sm_90
// PTX: .version 8.0
// PTX: .target sm_90
// PTX: .entry Net_kernel(

