//===- BufferizableOpInterfaceImpl.h - bufferizing mithril ops --*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// The mithril ops that reach One-Shot Bufferize: `mithril.custom_call`, which
// the linalg lowering keeps, bufferizes into a call of its C function.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define MITHRIL_DIALECT_MITHRIL_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mithril {
void registerBufferizableOpInterfaceExternalModels(mlir::DialectRegistry &registry);

/// The name prefix of the private functions through which bufferized custom
/// calls call their C function (mithril-profile-kernels times each call).
inline constexpr const char kCustomCallWrapperPrefix[] = "__mithril_custom_call_";
} // namespace mithril

#endif // MITHRIL_DIALECT_MITHRIL_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
