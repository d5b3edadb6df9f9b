//===- BFloat16.h - float32 to bfloat16 rounding ----------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// One rounding of float32 to bfloat16 (and its exact widening back) for the
// compiler (constants), the runtime and the Python bindings (arrays), so
// that all agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_SUPPORT_BFLOAT16_H
#define MITHRIL_SUPPORT_BFLOAT16_H

#include <cstdint>

namespace mithril {

/// The bfloat16 nearest to the float32 whose bits are `bits`, ties to even
/// (bf16 is float32's upper half), overflow to infinity; a NaN becomes the
/// quiet NaN of its sign and upper payload, as APFloat's conversion gives.
/// Without a branch, so that loops over arrays vectorize.
inline uint16_t bfloat16FromFloatBits(uint32_t bits) {
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t quietNan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
}

/// The float32 bits of the bfloat16 `bits`: exact, bf16 being float32's
/// upper half.
inline uint32_t floatBitsFromBFloat16(uint16_t bits) { return static_cast<uint32_t>(bits) << 16; }

} // namespace mithril

#endif // MITHRIL_SUPPORT_BFLOAT16_H
