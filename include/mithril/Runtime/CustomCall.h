/*===- CustomCall.h - C functions as mithril primitives -----------*- C -*-===*\
|*                                                                            *|
|* Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM  *|
|* Exceptions. See LICENSE for license information.                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
/*
 * The calling convention of `mithril.custom_call` (docs/custom-primitives.md):
 * compiled code calls a user's primitive with an array of tensor records,
 *
 *   void my_op(const MithrilTensor *tensors, int64_t count);
 *   void my_op_grad(const MithrilTensor *tensors, int64_t count, int64_t index);
 *
 * `my_op` gets its inputs in order, then its output, to write. `my_op_grad`
 * gets the inputs, the output, the output's gradient, then the gradient of
 * input `index`, to write. Each tensor is dense and row-major; the output's
 * buffer is fresh (its contents undefined) and shares no memory with the
 * inputs. The element type is the model's (double for float64 models).
 */

#ifndef MITHRIL_RUNTIME_CUSTOMCALL_H
#define MITHRIL_RUNTIME_CUSTOMCALL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MithrilTensor {
  void *data;
  int64_t rank;
  const int64_t *sizes;
} MithrilTensor;

/* The number of elements of `t`. */
static inline int64_t mithrilNumElements(const MithrilTensor *t) {
  int64_t n = 1;
  for (int64_t i = 0; i < t->rank; ++i)
    n *= t->sizes[i];
  return n;
}

#ifdef __cplusplus
}
#endif

#endif /* MITHRIL_RUNTIME_CUSTOMCALL_H */
