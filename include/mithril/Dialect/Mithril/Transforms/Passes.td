//===- Passes.td - mithril dialect transformations ----------*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_TRANSFORMS_PASSES_TD
#define MITHRIL_DIALECT_MITHRIL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MithrilFlatten : Pass<"mithril-flatten", "mlir::ModuleOp"> {
  let summary = "Inline the model hierarchy into its root models";
  let description = [{
    Replaces every `mithril.instance` in a root model by the body of the
    model it instantiates, recursively. Inputs an instance leaves unbound are
    lifted into the root as new input terminals named by instance path
    (`block1.conv.weight`), keeping their role; an instance named "" adds no
    path component. Locations of inlined ops are
    prefixed with the instance path so that diagnostics name them. Roots are
    the model named by `entry`, or every model that no instance refers to;
    the other models are erased. A model that instantiates itself, directly
    or not, is an error.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The root model (default: every model that is not instantiated)">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilInferShapes : Pass<"mithril-infer-shapes", "mlir::ModuleOp"> {
  let summary = "Propagate input shapes through flattened models";
  let description = [{
    Gives input terminals the shapes in `shapes` (`name:4x8`, `?` for a
    dynamic dimension), then refines every value's type from the shape rules
    of the ops, forwards from operands to results and backwards where an op
    fixes an operand dimension (the contraction dimension of a matmul, the
    channels of a convolution weight), until nothing changes. A given shape
    that conflicts with a terminal's declared shape, or shapes that conflict
    inside the model, are errors that name the terminals and their shapes.
    Run it after `mithril-flatten`.
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "Input shapes as name:DxDxD (for example input:4x8)">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "Only this model (default: every model)">,
    Option<"dynamicData", "dynamic-data", "bool", /*default=*/"false",
           "Sizes of data inputs left dynamic, and of any input given a '?' size, "
           "stay dynamic: broadcasting against a static size does not fix them, "
           "since a size 1 may broadcast at run time">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilDCE : Pass<"mithril-dce", "mlir::ModuleOp"> {
  let summary = "Drop discarded outputs and everything that reaches no output";
  let description = [{
    Removes the output terminals named in `discard`, then every op (instances
    included) whose results reach no output terminal. A model that lost an
    output and that no instance refers to also loses the input terminals
    nothing reads any more (a weight only a discarded output needed).
  }];
  let options = [
    ListOption<"discard", "discard", "std::string",
               "Output terminals to drop before removing dead code">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilDecompose : Pass<"mithril-decompose", "mlir::ModuleOp"> {
  let summary = "Rewrite composite primitives into simpler ones";
  let description = [{
    Expresses softmax, log_softmax, variance, mean, layer_norm, batch_norm,
    gelu, softplus and the losses in terms of elementwise ops and
    reductions, so that lowering and differentiation see fewer ops and
    fusion sees long elementwise chains.
  }];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilAutodiff : Pass<"mithril-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of a flattened model";
  let description = [{
    Extends the model `entry` (every model when empty) so that it also
    returns gradients. For each output terminal named in `seeds` (default:
    every floating-point output) a data input `grad:<output>` carries the
    seed gradient; for each input named in `wrt` (default: every `param`
    input) an output `grad:<input>` returns its gradient. Composite
    primitives are decomposed first; broadcasting is undone by summation.
    Forward values the backward pass needs are reused, not recomputed,
    unless `checkpoint-segments` asks for gradient checkpointing: the forward
    ops are split into that many runs of equal length, and the values a
    backward op needs that do not cross a run's boundary (nor are model
    outputs) are computed again by a copy of their run's ops, made just
    before the first backward op that needs one; the copies carry
    `mithril.recompute`, so that CSE keeps them apart from the originals.
    Integer and boolean values carry no gradient.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The model to differentiate (default: every model)">,
    ListOption<"wrt", "wrt", "std::string",
               "Inputs to differentiate with respect to (default: the param inputs)">,
    ListOption<"seeds", "seeds", "std::string",
               "Outputs that receive a seed gradient (default: every float output)">,
    Option<"checkpointSegments", "checkpoint-segments", "unsigned", /*default=*/"0",
           "Gradient checkpointing: split the forward ops into this many runs and "
           "recompute, in the backward pass, the values that do not cross a run's "
           "boundary (0: keep every forward value)">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilBatchSharding : Pass<"mithril-batch-sharding", "mlir::ModuleOp"> {
  let summary = "Check that a model runs data-parallel; report its outputs' distribution";
  let description = [{
    Data parallelism runs the model on each rank's share of the batch. This
    analysis splits the data inputs named by `inputs` along their axis 0
    (which must be dynamic, `?`) and asks every op of the model `entry`
    (every model when empty), through BatchShardingOpInterface or its
    elementwise traits, how it computes on batch shards. Each output is then
    `sharded<axis>` (the ranks' results concatenate along that axis),
    `partial_sum` or `partial_mean` (they add up, or average weighted by the
    ranks' batch shares: a loss's mean over the batch) or `replicated`; the
    pass reports each as a remark. An op that needs rows of other ranks (a
    softmax along the batch axis, batch-norm statistics, a maximum over the
    batch) is an error naming it and why. The IR is unchanged.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The model (default: every model)">,
    ListOption<"inputs", "inputs", "std::string",
               "The data inputs split along their axis 0">
  ];
}

def MithrilTensorParallel : Pass<"mithril-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Split Linear layer pairs and attention heads across a tensor group (Megatron)";
  let description = [{
    Finds, in the model `entry` (every model when empty), pairs of Linear
    layers joined by elementwise ops: `matmul(x, transpose(W1))`, an optional
    `add` of a bias `b1`, unary elementwise ops (an activation), then
    `matmul(., transpose(W2))`, with W1, b1 and W2 parameters used nowhere
    else. Each rank of a tensor group of `size` ranks then holds W1's and
    b1's rows (the first layer's output columns) and W2's matching columns:
    the first layer needs no communication, the second's partial products
    are summed over the group (`mithril.all_reduce {group = "tensor"}`) before
    its bias. The pair's input goes through `mithril.replicate`, whose
    gradient sums the ranks' contributions. The parameters take their local
    shapes and carry `mithril.tensor_split` (the axis of the global parameter
    they slice); the hidden size must divide by `size`.

    Attention blocks split by heads: `matmul(x, transpose(Wqkv))` (+ bias)
    sliced into thirds (q, k, v) along the last axis, each reshaped into
    heads, ops that keep the heads apart (transposes, products of the block's
    own values, scaling, a [T, T] mask, a softmax along the last axis), the
    heads merged back and projected by `matmul(., transpose(Wo))`. Each rank
    keeps `heads / size` heads: its part of each of Wqkv's three row blocks
    (`mithril.tensor_blocks = 3`), the matching columns of Wo, and the
    reshapes' head counts; Wo's partial products are summed over the group.
    A model with neither a pair nor an attention block is an error.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The model (default: every model)">,
    Option<"size", "size", "unsigned", /*default=*/"2", "The ranks of a tensor group">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilAllReduceGradients : Pass<"mithril-all-reduce-gradients", "mlir::ModuleOp"> {
  let summary = "Sum the parameter gradients over the ranks (data parallelism)";
  let description = [{
    After mithril-autodiff, each output `grad:<input>` of the model `entry`
    (every model when empty) is replaced by `mithril.all_reduce` of it, placed
    right after the op that computes it, so that the sum over ranks of the
    gradients of the first layers' parameters can start while the backward
    pass is still running for the others. mithril-optimizer, run after this
    pass, then updates every rank's parameters with the same summed
    gradient. Each rank feeds its share of the seed (its batch share of a
    mean), so the sums are the gradients over the whole batch.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The model (default: every model)">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilMixedPrecision : Pass<"mithril-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Compute a float32 model in float16 or bfloat16";
  let description = [{
    Every float32 value of the model `entry` (every model when empty)
    becomes `type` (f16 or bf16): constants are rounded to it, element-type
    attributes that name float32 (a cast to the model's float type) name it
    instead, and every op's result type is inferred again. The terminals
    keep float32 (mixed precision: float32 parameters, the master weights an
    optimizer updates, and float32 data in and out, with casts at the model's
    edges, so gradients come back in float32) unless `terminals` is set, which
    makes them `type` too (a model that is low precision throughout). Later,
    mithril-widen-low-precision computes each op in float32 and rounds its
    result once.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The model to convert (default: every model)">,
    Option<"type", "type", "std::string", /*default=*/"\"bf16\"",
           "The compute type: bf16 or f16">,
    Option<"terminals", "terminals", "bool", /*default=*/"false",
           "Convert the terminals too (default: they keep float32)">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilExposeSizes : Pass<"mithril-expose-sizes", "mlir::ModuleOp"> {
  let summary = "Outputs whose size depends on the data get their size as an output";
  let description = [{
    A `mithril.unique` computes its distinct values into a tensor of the
    input's size and counts them. After flattening, for each output terminal
    `<name>` those values reach, this pass adds the count as the output
    `<name>:size`; the runtime (Python's PhysicalModel, mithril-run) returns
    the first `<name>:size` elements as `<name>` and no `:size` output.
  }];
}

def MithrilQuantizeInt8 : Pass<"mithril-quantize-int8", "mlir::ModuleOp"> {
  let summary = "Int8 inference: matrix products and convolutions of weights in 8-bit integers";
  let description = [{
    Post-training dynamic quantization, as ONNX Runtime's: every `matmul`
    whose right operand is a parameter (or a transposed one, a Linear
    layer's weight) takes its weight per output column to symmetric 8-bit
    integers, `q = round(w / s)` with `s = max|w| / 127` (rounding half away
    from zero), and its activation per tensor to unsigned 8 bits with a
    zero point, as `DynamicQuantizeLinear`: over `[lo, hi]` (its min and
    max, zero included) `s_x = (hi - lo) / 255`, `z = round(-lo / s_x)`,
    `q = clamp(round(x / s_x) + z, 0, 255)`, stored as `q - 128` in a signed
    byte. The integer matmul accumulates exactly in 32 bits, plus `(128 - z)`
    times each column's sum of weight levels, and the sums are scaled back:
    `y = acc * s_x * s_w[n]`. The activation's scale and zero point are
    computed on each call from the data. The result is the product of the
    8-bit operands, which an int8 kernel would compute; for inference only
    (the rounding has no useful gradient).

    A `conv2d` or `conv1d` of a weight (ungrouped, static but for the batch,
    with windows of at least 32 elements: an image model's first layer over 1
    or 3 channels stays float) is the same product over its windows (im2col;
    a 1-D convolution as the 2-D one of height 1):
    the input is zero-padded first, so that the padding takes the zero
    point's level as the input's own zeros do, then quantized per tensor and
    its bytes moved channels last; one strided `slice` per kernel position
    gathers the windows into rows `[N OH OW, KH KW C]`; the weight
    `[F, C, KH, KW]` is read as the `[KH KW C, F]` matrix, symmetric per
    output channel; the result goes back to `[N, F, OH, OW]` and the bias is
    added in float.

    Static activations (calibration, as ONNX Runtime's static quantization):
    with `observe`, nothing is quantized and each product's or convolution's
    activation range `[min x, max x]` becomes an output named
    `calibration:<i>` (numbered in program order, the order this pass visits
    them); run on calibration data, the smallest minimum and largest maximum
    of each give `activation-ranges` (a `lo, hi` pair per op, in that order), which
    replace the per-call ranges: the same unsigned 8-bit activations with a
    zero point, their scale and zero point constants, values beyond the
    calibrated range clamped. `activation-scales` instead gives symmetric
    int8 activations (`s = max|x| / 127`, one scale per op, levels beyond it
    clamped to +-127).
  }];
  let options = [
    Option<"observe", "observe", "bool", /*default=*/"false",
           "Quantize nothing: output each quantized op's activation range [min x, max x] as "
           "calibration:<i> (for activation-ranges)">,
    ListOption<"activationScales", "activation-scales", "double",
               "Static symmetric activation scales, one per quantized op in order "
               "(default: unsigned activations over the range of each call's data)">,
    ListOption<"activationRanges", "activation-ranges", "double",
               "Static activation ranges, a lo, hi pair per quantized op in order "
               "(unsigned 8-bit activations with a zero point, values beyond clamped)">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilWidenLowPrecision : Pass<"mithril-widen-low-precision", "mlir::ModuleOp"> {
  let summary = "Compute float16 and bfloat16 ops in float32, rounding once per op";
  let description = [{
    Every op that computes with float16 or bfloat16 values gets its operands
    cast to float32, computes in float32 (so sums, matrix products and
    convolutions accumulate in float32, or wider where float32 does), and
    has its result cast back to the op's type: the values between ops, the
    terminals and the memory they take keep the low-precision type, and each
    op's result is rounded once. Ops with the `Mithril_DataMovement` trait
    (reshapes, transposes, slices, gathers) are exact in any type and keep
    theirs. Fusion then puts each widening, the computation and the rounding
    in one loop.
  }];
  let dependentDialects = ["mithril::MithrilDialect"];
}

def MithrilOptimizer : Pass<"mithril-optimizer", "mlir::ModuleOp"> {
  let summary = "Append an optimizer's parameter update after mithril-autodiff";
  let description = [{
    For every gradient output `grad:<p>` of the model `entry` (every model
    when empty), computes the updated parameter as the output `new:<p>` and
    drops the gradient output. The learning rate is the scalar data input
    `optimizer.lr`, so schedules need no recompilation.

    * `sgd`: `v = momentum * v + g + weight_decay * p; p -= lr * v` (without
      momentum, no state). The velocity is the input `state:<p>.velocity`
      and the output `new:state:<p>.velocity`.
    * `adam`: `m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
      p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`, with the
      step `t` the scalar input `optimizer.step` (from 1) and the moments as
      `state:<p>.m` and `state:<p>.v`.

    With `loss-scaling` (float16 training): the caller seeds the loss with
    the scalar input `optimizer.loss_scale`; every gradient is divided by it,
    and unless all of them are finite the parameters and the state keep
    their values. The scalar bool output `optimizer.finite` tells the caller
    whether the step was taken (to lower the scale when it was not).
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"", "The model">,
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"sgd\"", "sgd or adam">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0", "SGD momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0", "L2 weight decay">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam's first-moment decay">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam's second-moment decay">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8", "Adam's epsilon">,
    Option<"lossScaling", "loss-scaling", "bool", /*default=*/"false",
           "Dynamic loss scaling: the gradients come scaled by the input "
           "optimizer.loss_scale (the loss's seed), are divided by it, and the "
           "step changes nothing unless every one is finite (the output "
           "optimizer.finite)">
  ];
  let dependentDialects = ["mithril::MithrilDialect"];
}

#endif // MITHRIL_DIALECT_MITHRIL_TRANSFORMS_PASSES_TD
