//===- Passes.td - conversions out of the mithril dialect ---*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CONVERSION_PASSES_TD
#define MITHRIL_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertMithrilToLinalg : Pass<"convert-mithril-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower flattened mithril models to func, linalg, tensor and arith";
  let description = [{
    Turns every flattened `mithril.model` into a `func.func` of the same name
    (terminal names and roles stay as the argument attributes `mithril.name`
    and `mithril.kind`, output names as result attributes) and every
    primitive into linalg on tensors: named ops where they exist
    (`linalg.matmul`, `linalg.batch_matmul`, `linalg.transpose`),
    `linalg.generic` for elementwise ops with broadcasting, reductions,
    convolutions and pooling, and tensor ops for reshapes, slices and
    concatenation. Dynamic dimensions are supported; a dynamic dimension is
    assumed not to broadcast (it has the size of the other operand's).
    A model that still contains instances is an error: run mithril-flatten
    first.

    Ops that index by data (embedding rows, cross-entropy class indices)
    clamp each index into range so that no read leaves the tensor. With
    `index-errors`, the code also reports the first index out of range by
    calling `mithrilIndexError(value, bound, message)` (i64, i64, and a
    pointer to a NUL-terminated message naming the op and the indices'
    terminal), which the host provides: mithril's JIT turns the report into
    an error of the run.
  }];
  let options = [
    Option<"indexErrors", "index-errors", "bool", /*default=*/"false",
           "Report indices out of range through mithrilIndexError (the host provides it)">,
    Option<"bf16Products", "bf16-products", "bool", /*default=*/"false",
           "Multiply the transformed inputs and filters of Winograd convolutions in bf16 "
           "(rounded, f32 sums), and the bf16 operands of flat weight gradients in pairs "
           "of images, for a bf16 dot-product kernel: for models computed in bf16 on CPUs "
           "that have one">,
    Option<"bf16Tiles", "bf16-tiles", "bool", /*default=*/"false",
           "Lower the stride-1 convolutions of models computed in bf16 to one bf16 "
           "matrix product of the input's windows (im2col, channels innermost) for AMX "
           "tiles: for CPUs that have them">,
    Option<"windowRanks", "window-ranks", "unsigned", /*default=*/"0",
           "The data group's ranks share one machine's window of all-reduce operands, "
           "this many segments: each rank adds the ranks' operands where they lie "
           "itself, in code that fuses with the sum's users (the optimizer's update), "
           "between barriers (mithrilCollectiveBarrier); 0 or 1: the runtime sums them">,
    Option<"threads", "threads", "unsigned", /*default=*/"0",
           "For a CPU schedule of that many threads (the CPU pipeline sets it): a pooled "
           "Winograd convolution's products and output transform run in blocks of tiles "
           "that stay in the cache, one scf.for of them per thread's chunk (an "
           "scf.forall above 1); 0: whole ops, as the GPU pipeline maps them">
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::func::FuncDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect"
  ];
}

def MithrilUniqueResults : Pass<"mithril-unique-results", "mlir::func::FuncOp"> {
  let summary = "Give every returned tensor its own buffer";
  let description = [{
    A value that feeds two output terminals must fill two caller buffers.
    Run right before bufferization: it copies each repeated operand of
    `func.return` into a fresh tensor (upstream's
    `buffer-results-to-out-params` does not handle a repeated result, and
    canonicalization would fold the copy away if run earlier).

    An update of a parameter or optimizer state (a result `new:X` for an
    argument `X`) gets a `tensor.empty` of its own: CSE merges the empty
    tensors of one shape, and bufferization would otherwise compute another
    value (the gradient) in the caller's buffer for `new:X` first, which
    keeps `mithril-mark-in-place-updates` from letting that buffer be `X`'s.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

#endif // MITHRIL_CONVERSION_PASSES_TD
