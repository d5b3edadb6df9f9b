//===- CudaRuntime.cpp - the mgpu* functions over the CUDA driver API -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Host code lowered by mithril-gpu-pipeline (gpu-to-llvm and the NVVM
// offloading translation) calls these functions to load kernels, launch them
// and manage device memory. Debian ships no MLIR CUDA runtime wrappers, so
// this library provides them; it is built only when a CUDA toolkit is found.
//
// The functions have a C ABI and cannot return errors: the first failing
// driver call is recorded, later calls become no-ops, and the caller reads
// the error with mithrilCudaTakeError().
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace {
thread_local std::string lastError;

bool check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return true;
  if (lastError.empty()) {
    const char *name = nullptr;
    cuGetErrorName(result, &name);
    lastError = std::string(call) + " failed: " + (name ? name : "unknown CUDA error");
  }
  return false;
}

int32_t defaultDevice = 0;

/// Makes a context current on this thread, initializing the driver once.
bool ensureContext() {
  if (!lastError.empty())
    return false;
  static std::once_flag once;
  static CUresult initResult = CUDA_SUCCESS;
  std::call_once(once, [] { initResult = cuInit(0); });
  if (!check(initResult, "cuInit"))
    return false;
  CUcontext current = nullptr;
  if (!check(cuCtxGetCurrent(&current), "cuCtxGetCurrent"))
    return false;
  if (current)
    return true;
  CUdevice device;
  if (!check(cuDeviceGet(&device, defaultDevice), "cuDeviceGet"))
    return false;
  CUcontext primary;
  return check(cuDevicePrimaryCtxRetain(&primary, device), "cuDevicePrimaryCtxRetain") &&
         check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
}
} // namespace

extern "C" {

/// The first error since the last call, or an empty string; clears it.
const char *mithrilCudaTakeError() {
  static thread_local std::string taken;
  taken = lastError;
  lastError.clear();
  return taken.c_str();
}

/// The number of CUDA devices (0 when there is no driver or no device).
int32_t mithrilCudaDeviceCount() {
  if (cuInit(0) != CUDA_SUCCESS)
    return 0;
  int count = 0;
  return cuDeviceGetCount(&count) == CUDA_SUCCESS ? count : 0;
}

/// The default device's compute capability as major * 10 + minor (90 for
/// sm_90), or 0 when there is none.
int32_t mithrilCudaDeviceArch() {
  CUdevice device;
  int major = 0, minor = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, defaultDevice) != CUDA_SUCCESS ||
      cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) !=
          CUDA_SUCCESS ||
      cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) !=
          CUDA_SUCCESS)
    return 0;
  return major * 10 + minor;
}

// For the host code that calls a compiled model (mithril's JIT): device
// buffers for its arguments and synchronous copies to and from them.

void *mithrilCudaAlloc(uint64_t sizeBytes) {
  CUdeviceptr ptr = 0;
  if (sizeBytes && ensureContext())
    check(cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}

void mithrilCudaFree(void *ptr) {
  if (ptr)
    check(cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

/// Returns once the data is on the device (a pageable copy may otherwise
/// still be in flight when a kernel on another stream reads it).
void mithrilCudaCopyToDevice(void *dst, const void *src, uint64_t sizeBytes) {
  if (sizeBytes && ensureContext())
    check(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, sizeBytes), "cuMemcpyHtoD") &&
        check(cuCtxSynchronize(), "cuCtxSynchronize");
}

void mithrilCudaCopyToHost(void *dst, const void *src, uint64_t sizeBytes) {
  if (sizeBytes && ensureContext())
    check(cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), sizeBytes), "cuMemcpyDtoH");
}

void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

CUmodule mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  CUmodule module = nullptr;
  if (ensureContext())
    check(cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

/// PTX (format=isa) is compiled by the driver at load time.
CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  CUmodule module = nullptr;
  if (!ensureContext())
    return module;
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  check(cuModuleLoadDataEx(&module, data, 1, options, values), "cuModuleLoadDataEx");
  return module;
}

void mgpuModuleUnload(CUmodule module) {
  if (module)
    check(cuModuleUnload(module), "cuModuleUnload");
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  CUfunction function = nullptr;
  if (module)
    check(cuModuleGetFunction(&function, module, name), "cuModuleGetFunction");
  return function;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                      intptr_t blockX, intptr_t blockY, intptr_t blockZ, int32_t smem,
                      CUstream stream, void **params, void **extra, size_t /*paramsCount*/) {
  if (!function || !lastError.empty())
    return;
  check(cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, smem, stream,
                       params, extra),
        "cuLaunchKernel");
}

CUstream mgpuStreamCreate() {
  CUstream stream = nullptr;
  if (ensureContext())
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return stream;
}

void mgpuStreamDestroy(CUstream stream) {
  if (stream)
    check(cuStreamDestroy(stream), "cuStreamDestroy");
}

void mgpuStreamSynchronize(CUstream stream) {
  if (stream)
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  if (stream && event)
    check(cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

CUevent mgpuEventCreate() {
  CUevent event = nullptr;
  if (ensureContext())
    check(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return event;
}

void mgpuEventDestroy(CUevent event) {
  if (event)
    check(cuEventDestroy(event), "cuEventDestroy");
}

void mgpuEventSynchronize(CUevent event) {
  if (event)
    check(cuEventSynchronize(event), "cuEventSynchronize");
}

void mgpuEventRecord(CUevent event, CUstream stream) {
  if (event)
    check(cuEventRecord(event, stream), "cuEventRecord");
}

/// Plain device memory: managed memory is never asked for, even when the
/// IR requests host-shared memory, since oversubscribing it can hang a GPU.
/// With a stream, allocation and release are ordered on it: the host code
/// frees its temporaries before it waits for the kernels that use them.
void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream, bool /*isHostShared*/) {
  CUdeviceptr ptr = 0;
  if (sizeBytes && ensureContext()) {
    if (stream)
      check(cuMemAllocAsync(&ptr, sizeBytes, stream), "cuMemAllocAsync");
    else
      check(cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc");
  }
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, CUstream stream) {
  if (!ptr)
    return;
  if (stream)
    check(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), stream), "cuMemFreeAsync");
  else
    check(cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, CUstream stream) {
  if (sizeBytes && lastError.empty())
    check(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                        sizeBytes, stream),
          "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, CUstream stream) {
  if (count && lastError.empty())
    check(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count, stream),
          "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, CUstream stream) {
  if (count && lastError.empty())
    check(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count, stream),
          "cuMemsetD16Async");
}

} // extern "C"
