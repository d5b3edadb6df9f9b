//===- MithrilOps.td - mithril dialect operations -----------*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_MITHRILOPS_TD
#define MITHRIL_DIALECT_MITHRIL_IR_MITHRILOPS_TD

include "mithril/Dialect/Mithril/IR/MithrilDialect.td"
include "mithril/Dialect/Mithril/IR/MithrilInterfaces.td"
include "mithril/Dialect/Mithril/IR/MithrilLoweringConfig.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

// Every op rejects attributes it does not define (typos such as `axs`).
def Mithril_NoUnknownAttributes : NativeOpTrait<"NoUnknownAttributes"> {
  let cppNamespace = "::mithril::traits";
}

// Each result element computed from the operands' elements at its (broadcast)
// index by a scalar body: the linalg lowering builds one linalg.generic, and
// shape inference keeps a single operand's shape (mithril::traits).
def Mithril_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::mithril::traits";
}

// Two operands, numpy broadcasting, elementwise (mithril::traits).
def Mithril_BroadcastingElementwise : NativeOpTrait<"BroadcastingElementwise"> {
  let cppNamespace = "::mithril::traits";
}

// Moves, copies or selects elements without computing with their values
// (reshapes, transposes, slices, gathers): exact in any element type, so
// mithril-widen-low-precision leaves it in its storage type.
def Mithril_DataMovement : NativeOpTrait<"DataMovement"> {
  let cppNamespace = "::mithril::traits";
}

class Mithril_Op<string mnemonic, list<Trait> traits = []>
    : Op<Mithril_Dialect, mnemonic, !listconcat([Mithril_NoUnknownAttributes], traits)>;

//===----------------------------------------------------------------------===//
// Models, instances and terminals
//===----------------------------------------------------------------------===//

def Mithril_ModelOp : Mithril_Op<"model", [
    IsolatedFromAbove, FunctionOpInterface, OpAsmOpInterface, SingleBlock,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>
  ]> {
  let summary = "A logical model: named input and output terminals around a graph";
  let description = [{
    A model is a symbol whose single block computes its output terminals from
    its input terminals. Each input has a name and a role: `data` (fed at run
    time), `param` (a trainable parameter, differentiable by default) or
    `const` (known at compile time). Each output has a name.

    ```mlir
    mithril.model @Linear(data %input: tensor<?x8xf32>,
                          param %weight: tensor<32x8xf32>,
                          param %bias: tensor<32xf32>) -> (output: tensor<?x32xf32>) {
      %wt = mithril.transpose %weight : (tensor<32x8xf32>) -> tensor<8x32xf32>
      %mm = mithril.matmul %input, %wt : (tensor<?x8xf32>, tensor<8x32xf32>) -> tensor<?x32xf32>
      %y = mithril.add %mm, %bias : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
      mithril.output %y : tensor<?x32xf32>
    }
    ```

    The terminal name is the SSA name of the argument; a name that is not a
    valid identifier is written as a string after it (`data %0 "my input"`).
    Names and roles are stored as the argument attributes `mithril.name` and
    `mithril.kind`, and output names as the result attribute `mithril.name`.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<StrAttr>:$sym_visibility,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name,
                   "::llvm::ArrayRef<::mithril::TerminalSpec>":$inputs,
                   "::llvm::ArrayRef<::mithril::TerminalSpec>":$outputs)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }

    /// Terminal names and roles.
    unsigned getNumInputs() { return getFunctionType().getNumInputs(); }
    unsigned getNumOutputs() { return getFunctionType().getNumResults(); }
    ::llvm::StringRef getInputName(unsigned i);
    ::mithril::InputKind getInputKind(unsigned i);
    ::llvm::StringRef getOutputName(unsigned i);
    /// Index of the input or output terminal with this name, if any.
    std::optional<unsigned> lookupInput(::llvm::StringRef name);
    std::optional<unsigned> lookupOutput(::llvm::StringRef name);
    /// The value that feeds the output terminals.
    ::mithril::OutputOp getOutputOp();
    /// Change an input's type, keeping the block argument in step.
    void setInputType(unsigned i, ::mlir::Type type);
    /// Recompute the function type from the block arguments and the outputs.
    void syncFunctionType();
    static ::llvm::StringRef getDefaultDialect() { return "mithril"; }
  }];
}

def Mithril_OutputOp : Mithril_Op<"output", [
    Pure, HasParent<"ModelOp">, Terminator, ReturnLike
  ]> {
  let summary = "Feeds the output terminals of the enclosing model";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins), [{ }]>];
}

def Mithril_InstanceOp : Mithril_Op<"instance", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>
  ]> {
  let summary = "Instantiates a model, binding its terminals by name";
  let description = [{
    Instantiates the model `callee` under the instance name `name`. Each
    operand binds the callee input terminal named at the same position of
    `terminals`. Inputs left unbound belong to this instance: flattening
    lifts them into the enclosing root model, named by instance path
    (`block1.weight`), with the role they have in the callee. The results are
    the callee's output terminals, in order.

    ```mlir
    %h = mithril.instance "layer1" @Linear(input = %x) : (tensor<4x8xf32>) -> tensor<4x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, FlatSymbolRefAttr:$callee,
                       StrArrayAttr:$terminals,
                       Variadic<AnyRankedTensor>:$bindings);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The operand bound to the callee input called `terminal`, if any.
    ::mlir::Value getBinding(::llvm::StringRef terminal);
  }];
}

//===----------------------------------------------------------------------===//
// Base classes for the tensor primitives
//===----------------------------------------------------------------------===//

defvar compatibleReturnTypes = [{
  bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
    return ::mithril::areCompatibleTypes(l, r);
  }
}];

// A value-semantic tensor op whose result types follow from its operands.
class Mithril_TensorOp<string mnemonic, list<Trait> traits = []>
    : Mithril_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptorWithIsCompatible], traits)> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = compatibleReturnTypes;
}

// Op of one operand whose result has the operand's type; elementwise unless
// `elementwise` is 0.
class Mithril_UnaryOp<string mnemonic, string doc, list<Trait> traits = [],
                      bit elementwise = 1>
    : Mithril_TensorOp<mnemonic,
        !listconcat(!if(elementwise, [Mithril_Elementwise], []<Trait>), traits)> {
  let summary = doc;
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDefinition = compatibleReturnTypes # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mithril::inferUnaryElementwise(loc, adaptor.getInput(), types);
    }
  }];
}

// Elementwise float op of one operand.
class Mithril_UnaryFloatOp<string mnemonic, string doc, list<Trait> traits = [],
                           bit elementwise = 1>
    : Mithril_UnaryOp<mnemonic, doc, traits, elementwise> {
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input);
}

// Elementwise op of two operands with numpy broadcasting.
class Mithril_BinaryOp<string mnemonic, string doc, string kind = "Arith",
                       list<Trait> traits = [], bit elementwise = 1>
    : Mithril_TensorOp<mnemonic, !listconcat([Mithril_BroadcastingElementwise],
        !if(elementwise, [Mithril_Elementwise], []<Trait>), traits)> {
  let summary = doc;
  let description = [{
    Elementwise with numpy broadcasting: shapes are aligned on the right and a
    dimension of size 1 stretches to the other operand's.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDefinition = compatibleReturnTypes # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *ctx,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mithril::inferBroadcastBinary(ctx, loc, getOperationName(),
          adaptor.getLhs(), adaptor.getRhs(),
          ::mithril::BinaryResultKind::}] # kind # [{, types);
    }
  }];
}

// Elementwise loss of a prediction and a target, with broadcasting.
class Mithril_LossOp<string mnemonic, string doc, list<Trait> traits = []>
    : Mithril_TensorOp<mnemonic,
        !listconcat([Mithril_BroadcastingElementwise, Mithril_Elementwise,
                     Mithril_Differentiable], traits)> {
  let summary = doc;
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$target);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDefinition = compatibleReturnTypes # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *ctx,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mithril::inferBroadcastBinary(ctx, loc, getOperationName(),
          adaptor.getInput(), adaptor.getTarget(),
          ::mithril::BinaryResultKind::Arith, types);
    }
  }];
}

// Reduction over `axes` (all axes when absent), optionally keeping them.
class Mithril_ReduceOp<string mnemonic, string doc, list<Trait> traits = []>
    : Mithril_TensorOp<mnemonic, !listconcat([Mithril_Differentiable, Mithril_BatchParallel], traits)> {
  let summary = doc;
  let description = [{
    Reduces `input` over `axes` (every axis when `axes` is absent; negative
    axes count from the end). With `keepdim` the reduced axes stay as size 1.
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       OptionalAttr<DenseI64ArrayAttr>:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDefinition = compatibleReturnTypes # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *ctx,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mithril::inferReduction(ctx, loc, getOperationName(), adaptor.getInput(),
          adaptor.getAxes(), adaptor.getKeepdim(), /*resultElementType=*/nullptr, types);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Mithril_ConstantOp : Mithril_Op<"constant", [
    ConstantLike, Pure, InferTypeOpAdaptorWithIsCompatible,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>
  ]> {
  let summary = "A constant tensor";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let extraClassDefinition = compatibleReturnTypes;
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

def Mithril_AddOp : Mithril_BinaryOp<"add", "Elementwise addition", "Arith",
    [Commutative, Mithril_Differentiable, Mithril_BatchParallel]> {
  let hasFolder = 1;
}
def Mithril_SubtractOp : Mithril_BinaryOp<"subtract", "Elementwise subtraction", "Arith",
    [Mithril_Differentiable, Mithril_BatchParallel]> {
  let hasFolder = 1;
}
def Mithril_MultiplyOp : Mithril_BinaryOp<"multiply", "Elementwise multiplication", "Arith",
    [Commutative, Mithril_Differentiable, Mithril_BatchParallel]> {
  let hasFolder = 1;
}
def Mithril_DivideOp : Mithril_BinaryOp<"divide", "Elementwise true division", "Arith",
    [Mithril_Differentiable, Mithril_BatchParallel]> {
  let description = [{
    Elementwise with numpy broadcasting: shapes are aligned on the right and a
    dimension of size 1 stretches to the other operand's.

    With `reciprocal`, lhs * (1 / rhs) may stand for lhs / rhs (within an ulp
    or two): the divisor's reciprocal never overflows, as a softmax's sum (at
    least 1) or a norm's sqrt(var + eps). A divisor broadcast along a row is
    then inverted once per row instead of dividing every element (the
    lowering's `arcp`). Without it, 1 / rhs of a divisor below 2^-126 would
    be infinite where lhs / rhs is not.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs, UnitAttr:$reciprocal);
  let hasFolder = 1;
}
def Mithril_FloorDivideOp : Mithril_BinaryOp<"floor_divide", "Elementwise division rounded towards minus infinity",
    "Arith", [Mithril_ZeroGradient]>;
def Mithril_PowerOp : Mithril_BinaryOp<"power", "Elementwise power lhs ** rhs", "Arith",
    [Mithril_Differentiable]> {
  let hasFolder = 1;
}
def Mithril_MinimumOp : Mithril_BinaryOp<"minimum", "Elementwise minimum", "Arith",
    [Commutative, Mithril_Differentiable]>;
def Mithril_MaximumOp : Mithril_BinaryOp<"maximum", "Elementwise maximum", "Arith",
    [Commutative, Mithril_Differentiable]>;

def Mithril_EqualOp : Mithril_BinaryOp<"equal", "Elementwise ==, giving i1", "Compare", [Commutative]>;
def Mithril_NotEqualOp : Mithril_BinaryOp<"not_equal", "Elementwise !=, giving i1", "Compare", [Commutative]>;
def Mithril_LessOp : Mithril_BinaryOp<"less", "Elementwise <, giving i1", "Compare">;
def Mithril_LessEqualOp : Mithril_BinaryOp<"less_equal", "Elementwise <=, giving i1", "Compare">;
def Mithril_GreaterOp : Mithril_BinaryOp<"greater", "Elementwise >, giving i1", "Compare">;
def Mithril_GreaterEqualOp : Mithril_BinaryOp<"greater_equal", "Elementwise >=, giving i1", "Compare">;
def Mithril_LogicalAndOp : Mithril_BinaryOp<"logical_and", "Elementwise and of i1 tensors", "Logical", [Commutative]>;
def Mithril_LogicalOrOp : Mithril_BinaryOp<"logical_or", "Elementwise or of i1 tensors", "Logical", [Commutative]>;
def Mithril_LogicalXorOp : Mithril_BinaryOp<"logical_xor", "Elementwise xor of i1 tensors", "Logical", [Commutative]>;

def Mithril_NegateOp : Mithril_UnaryOp<"negate", "Elementwise negation",
    [Mithril_Differentiable, Mithril_BatchParallel]> {
  let hasFolder = 1;
}
def Mithril_AbsOp : Mithril_UnaryOp<"abs", "Elementwise absolute value",
    [Mithril_Differentiable]>;
def Mithril_SignOp : Mithril_UnaryOp<"sign", "Elementwise sign: -1, 0 or 1",
    [Mithril_ZeroGradient]>;
def Mithril_SquareOp : Mithril_UnaryOp<"square", "Elementwise x * x",
    [Mithril_Differentiable]>;
def Mithril_LogicalNotOp : Mithril_UnaryOp<"logical_not", "Elementwise not of an i1 tensor">;
def Mithril_StopGradientOp : Mithril_UnaryOp<"stop_gradient",
    "Identity whose gradient is zero", [Mithril_ZeroGradient, Mithril_BatchParallel]>;
def Mithril_ExpOp : Mithril_UnaryFloatOp<"exp", "Elementwise e ** x",
    [Mithril_Differentiable]>;
def Mithril_LogOp : Mithril_UnaryFloatOp<"log", "Elementwise natural logarithm",
    [Mithril_Differentiable]>;
def Mithril_SqrtOp : Mithril_UnaryFloatOp<"sqrt", "Elementwise square root",
    [Mithril_Differentiable]>;
def Mithril_SinOp : Mithril_UnaryFloatOp<"sin", "Elementwise sine",
    [Mithril_Differentiable]>;
def Mithril_CosOp : Mithril_UnaryFloatOp<"cos", "Elementwise cosine",
    [Mithril_Differentiable]>;
def Mithril_ReciprocalOp : Mithril_UnaryFloatOp<"reciprocal", "Elementwise 1 / x",
    [Mithril_Differentiable]>;
def Mithril_ErfOp : Mithril_UnaryFloatOp<"erf", "Elementwise error function",
    [Mithril_Differentiable]>;

def Mithril_ShiftLeftOp : Mithril_BinaryOp<"shift_left", "Elementwise integer lhs << rhs"> {
  let arguments = (ins RankedTensorOf<[AnySignlessInteger]>:$lhs,
                       RankedTensorOf<[AnySignlessInteger]>:$rhs);
}
def Mithril_ShiftRightOp : Mithril_BinaryOp<"shift_right",
    "Elementwise integer lhs >> rhs, keeping the sign (arithmetic shift)"> {
  let arguments = (ins RankedTensorOf<[AnySignlessInteger]>:$lhs,
                       RankedTensorOf<[AnySignlessInteger]>:$rhs);
}

//===----------------------------------------------------------------------===//
// Numerically robust functions
//===----------------------------------------------------------------------===//

// A robust function of one operand; `threshold` defaults to a per-type
// constant (see the op descriptions).
class Mithril_RobustUnaryOp<string mnemonic, string doc>
    : Mithril_UnaryFloatOp<mnemonic, doc, [], /*elementwise=*/0> {
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, OptionalAttr<F64Attr>:$threshold);
  let hasVerifier = 1;
}

def Mithril_RobustSqrtOp : Mithril_RobustUnaryOp<"robust_sqrt",
    "sqrt(|x|), linear below a threshold so that its gradient stays finite"> {
  let description = [{
    `sqrt(|x|)` where `|x| >= t`, and `|x| / sqrt(t)` below, with `t` the
    `threshold` attribute or the smallest positive normal number of the
    element type. Mithril's `Sqrt(robust=True)`. mithril-decompose expands it
    into elementwise ops (before autodiff, so its gradient follows).
  }];
}

def Mithril_RobustLogOp : Mithril_RobustUnaryOp<"robust_log",
    "log(|x|), linear below a threshold so that it stays finite at 0"> {
  let description = [{
    `log(|x|)` where `|x| >= t`, and its tangent at `t`, `log(t) + |x| / t - 1`,
    below; `t` is the `threshold` attribute or the smallest positive normal
    number of the element type. Mithril's `Log(robust=True)`.
  }];
}

def Mithril_StableReciprocalOp : Mithril_RobustUnaryOp<"stable_reciprocal",
    "1 / x, linear near 0 so that it stays finite"> {
  let description = [{
    `1 / x` where `|x| >= t`; below, `2 s / t - x / t^2` with `s` the sign of
    `x` (1 at 0), a line that meets `1 / x` at `t`. `t` is the `threshold`
    attribute or a per-type default (the square root of the smallest positive
    normal number, times ten, for f64; Mithril's STABLE_RECIPROCAL_THRESHOLD).
  }];
}

def Mithril_RobustPowerOp : Mithril_BinaryOp<"robust_power",
    "|lhs| ** rhs, linear near 0 where the power's gradient would be infinite", "Arith", [],
    /*elementwise=*/0> {
  let description = [{
    `|b| ** e`, except where `|b| < t` and `e < 1 - log(t) / log(|b|)`: there
    the result is `|b| / t`, which keeps the gradient finite at 0 for
    exponents below 1. `t` is the `threshold` attribute or the smallest
    positive normal number of the element type. Operands broadcast as numpy's
    do. Mithril's `Power(robust=True)`.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$lhs, RankedTensorOf<[AnyFloat]>:$rhs,
                       OptionalAttr<F64Attr>:$threshold);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Feature maps
//===----------------------------------------------------------------------===//

def Mithril_PolynomialFeaturesOp : Mithril_TensorOp<"polynomial_features", [Mithril_BatchParallel]> {
  let summary = "Every monomial of the input columns up to a degree";
  let description = [{
    For an input `[N, d]`, the monomials of degree 1 to `degree` of the `d`
    columns, in the order of scikit-learn's and Mithril's PolynomialFeatures
    without the bias column: combinations with replacement of
    `[1, x0, ..., x(d-1)]` taken `degree` at a time, the all-ones one left
    out. The result is `[N, C(d + degree, degree) - 1]`; `d` must be static to
    know it. mithril-decompose expands it into slices, products and a concat.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, I64Attr:$degree);
  let results = (outs AnyRankedTensor:$result);
}

def Mithril_ReverseOp : Mithril_UnaryOp<"reverse",
    "Reverses the order of the elements along axes",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel],
    /*elementwise=*/0> {
  let description = [{
    `input[..., n - 1 - i, ...]` along each of `axes`, whose sizes must be
    static (a convolution's gradient flips its kernel this way).
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes);
  let hasVerifier = 1;
}

def Mithril_EyeLikeOp : Mithril_UnaryOp<"eye_like",
    "The identity matrix shaped like a matrix operand", [Mithril_ZeroGradient, Mithril_BatchParallel],
    /*elementwise=*/0> {
  let description = [{
    Ones on the main diagonal and zeros elsewhere, with the type of its 2-D
    operand, whose values are not read; its gradient is zero.
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

def Mithril_ReluOp : Mithril_UnaryFloatOp<"relu", "max(x, 0)",
    [Mithril_Differentiable]>;
def Mithril_SigmoidOp : Mithril_UnaryFloatOp<"sigmoid", "1 / (1 + exp(-x))",
    [Mithril_Differentiable]>;
def Mithril_TanhOp : Mithril_UnaryFloatOp<"tanh", "Hyperbolic tangent",
    [Mithril_Differentiable]>;
def Mithril_SoftplusOp : Mithril_UnaryFloatOp<"softplus", "log(1 + exp(x)), computed stably",
    [Mithril_Differentiable]>;
def Mithril_LeakyReluOp : Mithril_UnaryFloatOp<"leaky_relu", "x if x > 0 else slope * x",
    [Mithril_Differentiable]> {
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       DefaultValuedAttr<F64Attr, "0.01">:$slope);
}
def Mithril_GeluOp : Mithril_UnaryFloatOp<"gelu", "Gaussian error linear unit",
    [Mithril_Differentiable]> {
  let description = [{
    `x * Phi(x)` with the exact error function, or the tanh approximation
    when `approximate` is set.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       DefaultValuedAttr<BoolAttr, "false">:$approximate);
}
def Mithril_SoftmaxOp : Mithril_UnaryFloatOp<"softmax", "exp(x) / sum(exp(x)) along an axis",
                                              [SameOperandsAndResultShape, Mithril_BatchParallel], /*elementwise=*/0> {
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let hasVerifier = 1;
}
def Mithril_LogSoftmaxOp : Mithril_UnaryFloatOp<"log_softmax",
    "log(softmax(x)) along an axis, computed stably", [SameOperandsAndResultShape, Mithril_BatchParallel],
    /*elementwise=*/0> {
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let hasVerifier = 1;
}

def Mithril_WhereOp : Mithril_TensorOp<"where",
    [Mithril_Elementwise, Mithril_Differentiable]> {
  let summary = "Elementwise select: cond ? lhs : rhs, with broadcasting";
  let arguments = (ins RankedTensorOf<[I1]>:$cond, AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

def Mithril_OneHotOp : Mithril_TensorOp<"one_hot", [Mithril_BatchParallel]> {
  let summary = "One-hot encoding of integer indices along a new axis";
  let description = [{
    For indices of shape `[d0, ..., dn]` the result has a new axis of size
    `num_classes` at `axis`; it holds 1 where the position equals the index
    and 0 elsewhere, in `element_type`.
  }];
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$indices, I64Attr:$num_classes,
                       DefaultValuedAttr<I64Attr, "-1">:$axis, TypeAttr:$element_type);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Mithril_MatmulOp : Mithril_TensorOp<"matmul",
    [Mithril_Differentiable, Mithril_RefinesOperandShapes, Mithril_BatchParallel]> {
  let summary = "Matrix product with numpy batch broadcasting";
  let description = [{
    `numpy.matmul` semantics: 1-D operands are promoted to matrices and the
    promoted axis is dropped from the result; leading (batch) dimensions
    broadcast.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat, AnyInteger]>:$lhs,
                       RankedTensorOf<[AnyFloat, AnyInteger]>:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

def Mithril_CholeskyOp : Mithril_TensorOp<"cholesky",
    [Mithril_Differentiable, SameOperandsAndResultShape, Mithril_BatchParallel]> {
  let summary = "Lower Cholesky factor L of a symmetric positive-definite matrix: L L^T = A";
  let description = [{
    For a square matrix `A`, the lower-triangular `L` with a positive
    diagonal and `L L^T = A` (`torch.linalg.cholesky`). Only the lower
    triangle of `A` is read; the upper triangle of `L` is zero. A matrix that
    is not positive definite gives NaN from the first non-positive pivot on
    (square root of a negative number) rather than an error. The gradient
    treats `A` as symmetric, as torch's does:
    `sym(L^-T Phi(L^T dL) L^-1)` with `Phi` the lower triangle with its
    diagonal halved.

    ```mlir
    %l = mithril.cholesky %a : (tensor<4x4xf64>) -> tensor<4x4xf64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
}

def Mithril_TsnePJointOp : Mithril_TensorOp<"tsne_p_joint"> {
  let summary = "t-SNE's joint probabilities of squared distances at a perplexity";
  let description = [{
    For squared distances `D` (`[N, N]`), Mithril's `TsnePJoint`: for each
    row i a bandwidth sigma_i is searched by bisection in [0, 1001] (at most
    1001 steps, stopping where the row's perplexity equals
    `target_perplexity` exactly or the interval stops shrinking) so that the
    row's conditional probabilities `p_j|i = softmax_j(-D_ij / (2 sigma_i^2))`
    (the diagonal excluded) reach the target perplexity `2^H`, with
    `H = -sum_j p log2 p` over the probabilities clipped to
    `[threshold, 1 - threshold]`; the result is `(P + P^T) / (2 N)`.
    `target_perplexity` and `threshold` hold one element each; without
    `threshold`, the machine epsilon of the element type (Mithril's
    `Constant.EPSILON`). Computed in the element type, by sequential loops;
    it has no gradient (Mithril computes it once, before training).

    ```mlir
    %p = mithril.tsne_p_joint %d, %perplexity : (tensor<8x8xf64>, tensor<f64>) -> tensor<8x8xf64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, F64]>:$squared_distances,
                       RankedTensorOf<[F32, F64]>:$target_perplexity,
                       Optional<RankedTensorOf<[F32, F64]>>:$threshold);
  let results = (outs RankedTensorOf<[F32, F64]>:$result);
}

def Mithril_CustomCallOp : Mithril_TensorOp<"custom_call",
    [Mithril_Differentiable, Mithril_RefinesOperandShapes]> {
  let summary = "A user's primitive: a C function of the operands";
  let description = [{
    Calls the C function `callee` (a symbol of the process or of a shared
    library given to the compiler) with the operands and a fresh result
    buffer, as an array of tensor records (docs/custom-primitives.md,
    `include/mithril/Runtime/CustomCall.h`):

    ```c
    typedef struct { void *data; int64_t rank; const int64_t *sizes; } MithrilTensor;
    void callee(const MithrilTensor *tensors, int64_t count);           // operands, result
    void grad_callee(const MithrilTensor *tensors, int64_t count, int64_t index);
    ```

    Each record's data is dense and row-major. With `index`, the call is the
    gradient of another custom call: `index` is passed as the third argument.

    The result's shape rule: `result_shape` lists, for each result dimension,
    a pair `(operand, dim)` (the size of that operand dimension) or
    `(-1, size)` (a fixed size); without it, the result has the shape of
    operand `shape_of` (0 by default). Its element type is `element_type`,
    or that operand's (operand 0 with `result_shape`).

    `grad_callee` makes the op differentiable: operand i's adjoint is
    `custom_call @grad_callee(operands..., result, result_adjoint)` with
    `index = i` and operand i's shape. Without it, differentiating through
    the op is an error naming the callee. The call is taken as pure: the
    function reads its operands, writes its result, and nothing else.

    ```mlir
    %y = mithril.custom_call %x {callee = "swish", grad_callee = "swish_grad"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %z = mithril.custom_call %a, %b {callee = "outer", result_shape = array<i64: 0, 0, 1, 0>} : (tensor<4xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$operands, StrAttr:$callee,
                       OptionalAttr<StrAttr>:$grad_callee,
                       OptionalAttr<DenseI64ArrayAttr>:$result_shape,
                       DefaultValuedAttr<I64Attr, "0">:$shape_of,
                       OptionalAttr<TypeAttr>:$element_type,
                       OptionalAttr<I64Attr>:$index);
  let results = (outs AnyRankedTensor:$result);
}

def Mithril_UniqueOp : Mithril_TensorOp<"unique", [Mithril_ZeroGradient]> {
  let summary = "The distinct values of a tensor, sorted; their count";
  let description = [{
    `numpy.unique` of the flattened input: its distinct values in ascending
    order (NaNs last, all NaNs one value, as numpy's `equal_nan`), as the
    first `count` elements of `values`, which has one element per input
    element (the rest repeat the largest value). Because the number of
    distinct values depends on the data, `values` can only be an output of
    the model: `mithril-expose-sizes` adds `count` as the output
    `<name>:size`, by which the runtime trims it. Computed by comparing every
    pair of elements (quadratic in the input's size). No gradient.

    ```mlir
    %u, %n = mithril.unique %labels : (tensor<8xi64>) -> (tensor<8xi64>, tensor<i64>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$values, 0DTensorOf<[I64]>:$count);
  let hasVerifier = 1;
}

def Mithril_TriangularSolveOp : Mithril_TensorOp<"triangular_solve",
    [Mithril_Differentiable, Mithril_RefinesOperandShapes, Mithril_BatchParallel]> {
  let summary = "X with op(A) X = B, for a triangular A";
  let description = [{
    Solves `op(A) X = B` by substitution, where `A` (`matrix`, `[n, n]`) is
    lower triangular when `lower` is set and upper triangular otherwise (the
    other triangle is not read), `op(A)` is `A^T` when `transpose` is set and
    `A` otherwise, and `B` (`rhs`) is `[n, k]`; the result is `[n, k]`
    (`scipy.linalg.solve_triangular` with `trans`). A zero on the diagonal
    gives infinities or NaN, not an error.

    ```mlir
    %y = mithril.triangular_solve %l, %b {lower = true} : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
    %x = mithril.triangular_solve %l, %y {lower = true, transpose = true} : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$matrix, RankedTensorOf<[AnyFloat]>:$rhs,
                       DefaultValuedAttr<BoolAttr, "true">:$lower,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
}

def Mithril_TrilOp : Mithril_UnaryOp<"tril",
    "The lower triangle of the last two axes; zeros above it",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel],
    /*elementwise=*/0> {
  let description = [{
    Keeps the elements `[..., i, j]` with `j - i <= diagonal` and zeroes the
    others (`numpy.tril`): `diagonal = 0` keeps the main diagonal, `-1`
    starts below it. The input has rank 2 or more. The gradient is the same
    triangle of the result's gradient.
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "0">:$diagonal);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Mithril_SumOp : Mithril_ReduceOp<"sum", "Sum over axes">;
def Mithril_MeanOp : Mithril_ReduceOp<"mean", "Mean over axes">;
def Mithril_MaxOp : Mithril_ReduceOp<"max", "Maximum over axes">;
def Mithril_MinOp : Mithril_ReduceOp<"min", "Minimum over axes">;
def Mithril_ProdOp : Mithril_ReduceOp<"prod", "Product over axes">;
def Mithril_VarianceOp : Mithril_TensorOp<"variance", [Mithril_Differentiable, Mithril_BatchParallel]> {
  let summary = "Variance over axes, with a degrees-of-freedom correction";
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       OptionalAttr<DenseI64ArrayAttr>:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim,
                       DefaultValuedAttr<F64Attr, "0.0">:$correction);
  let results = (outs AnyRankedTensor:$result);
}
class Mithril_ArgReduceOp<string mnemonic, string doc>
    : Mithril_TensorOp<mnemonic, [Mithril_BatchParallel]> {
  let summary = doc;
  let description = [{
    Index (i64) of the first extreme element along `axis`, or in the
    flattened tensor when `axis` is absent.
  }];
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<I64Attr>:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs RankedTensorOf<[I64]>:$result);
}
def Mithril_ArgMaxOp : Mithril_ArgReduceOp<"argmax", "Index of the maximum along an axis">;
def Mithril_ArgMinOp : Mithril_ArgReduceOp<"argmin", "Index of the minimum along an axis">;

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Mithril_ReshapeOp : Mithril_TensorOp<"reshape",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Reshape to `shape`; one entry may be -1 (inferred)";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
}
def Mithril_TransposeOp : Mithril_TensorOp<"transpose",
    [Mithril_Differentiable, Mithril_RefinesOperandShapes, Mithril_DataMovement,
     Mithril_BatchParallel]> {
  let summary = "Permute axes (reverse them when `permutation` is absent)";
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<DenseI64ArrayAttr>:$permutation);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// The permutation, with the default (reversal) made explicit.
    ::llvm::SmallVector<int64_t> getPermutationOrDefault();
  }];
}
def Mithril_FlattenOp : Mithril_TensorOp<"flatten",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Merge axes start_dim..end_dim into one";
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$start_dim,
                       DefaultValuedAttr<I64Attr, "-1">:$end_dim);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_SqueezeOp : Mithril_TensorOp<"squeeze",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Drop size-1 axes (the given ones, or all)";
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<DenseI64ArrayAttr>:$axes);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_UnsqueezeOp : Mithril_TensorOp<"unsqueeze",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Insert a size-1 axis at `axis`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_ConcatOp : Mithril_TensorOp<"concat",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Join tensors along an existing axis";
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_BroadcastToOp : Mithril_TensorOp<"broadcast_to",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Broadcast to `shape` with numpy rules";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_SliceOp : Mithril_TensorOp<"slice",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Python-style slice start:stop:step along each given axis";
  let description = [{
    For each entry `i`, takes `start[i]:stop[i]:step[i]` along `axes[i]` with
    Python semantics (negative indices count from the end, bounds clamp).
    Steps must be positive.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$start, DenseI64ArrayAttr:$stop,
                       DenseI64ArrayAttr:$step);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_PadOp : Mithril_TensorOp<"pad",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Pad with a constant, numpy-style: (before, after) sizes per axis";
  let description = [{
    `pad_width` holds two sizes per axis of the input, `[before0, after0,
    before1, after1, ...]`, none negative; each axis grows by both, the new
    elements are `value` (numpy.pad's `mode="constant"`). The gradient is the
    slice of the output gradient that covers the input.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$pad_width,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_CastOp : Mithril_TensorOp<"cast",
    [Mithril_Elementwise, Mithril_Differentiable, Mithril_BatchParallel]> {
  let summary = "Convert the element type";
  let arguments = (ins AnyRankedTensor:$input, TypeAttr:$element_type);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
}
def Mithril_RandomNormalOp : Mithril_TensorOp<"random_normal", [Mithril_ZeroGradient]> {
  let summary = "Standard normal samples of `shape`, a function of an integer key";
  let description = [{
    Element `i` (in row-major order) of the result is a standard normal sample
    drawn from the 64-bit key alone: the splitmix64 stream seeded by the key
    gives the two uniforms at positions `2i` and `2i + 1`, and the Box-Muller
    transform makes them normal (computed in f64, rounded once to the result's
    type). The same key gives the same samples on every target and at every
    call; it is a pure function, so it has no gradient.

    ```mlir
    %z = mithril.random_normal %key {shape = array<i64: 2, 3>, element_type = f32}
        : (tensor<i64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$key, DenseI64ArrayAttr:$shape,
                       TypeAttr:$element_type);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
}
def Mithril_RandomUniformOp : Mithril_TensorOp<"random_uniform", [Mithril_ZeroGradient]> {
  let summary = "Uniform samples in [0, 1) of `shape`, a function of an integer key";
  let description = [{
    Element `i` (in row-major order) is the top 53 bits of the splitmix64
    stream seeded by the key at position `i`, times 2^-53 (computed in f64,
    rounded once to the result's type, so a narrow type may round up to 1).
    As `random_normal`, the same key gives the same samples everywhere.
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$key, DenseI64ArrayAttr:$shape,
                       TypeAttr:$element_type);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
}
def Mithril_ShapeOp : Mithril_TensorOp<"shape", [Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "The shape of a tensor as a 1-D i64 tensor";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// The ranks a collective runs over (see mithril::runtime::Group).
def Mithril_CollectiveGroupAttr : StringBasedAttr<
    And<[StrAttrPred, CPred<"::llvm::is_contained({\"data\", \"tensor\"}, "
                            "::llvm::cast<::mlir::StringAttr>($_self).getValue())">]>,
    "\"data\" or \"tensor\"">;

def Mithril_AllReduceOp : Mithril_Op<"all_reduce", [
    SameOperandsAndResultType, InferTypeOpInterface, Mithril_Differentiable,
    Mithril_BatchParallel]> {
  let summary = "Sum of a tensor over a group of ranks";
  let description = [{
    Every rank of `group` contributes its `input`; every rank gets their
    elementwise sum. `group = "data"` (the default) is the ranks that share
    the parameters and split the batch (all of them without tensor
    parallelism): mithril-all-reduce-gradients sums parameter gradients over
    it. `group = "tensor"` is the ranks that split the parameters of a layer
    pair (mithril-tensor-parallel): the row-parallel layer's partial products
    add up to its output there. Its gradient passes the (replicated)
    cotangent to every rank's partial product. Lowered to a call of the
    runtime's collective (MPI_Allreduce). Not pure: each rank must call the
    collectives in the same order, so it is never moved, merged or dropped.

    ```mlir
    %sum = mithril.all_reduce %grad : (tensor<512x784xf32>) -> tensor<512x784xf32>
    %out = mithril.all_reduce %partial {group = "tensor"} : (tensor<64x10xf32>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, F64]>:$input,
                       DefaultValuedAttr<Mithril_CollectiveGroupAttr, "\"data\"">:$group);
  let results = (outs RankedTensorOf<[F32, F64]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Mithril_CollectiveWindowOp : Mithril_Op<"collective_window", [MemoryEffects<[MemRead]>]> {
  let summary = "This rank's segment of its group's window of all-reduce operands";
  let description = [{
    The bytes where this rank computes the operands of the function's sums
    over `group` (convert-mithril-to-linalg lowers each all_reduce of a
    static shape to a view of it at its own offset). Where the group's ranks
    share a machine, every rank's segment is part of one MPI-3 shared-memory
    window, so each rank adds the others' operands where they lie and no
    operand is copied; elsewhere it is private memory summed with
    MPI_Allreduce. The runtime owns the memory: the op reads where it is
    and allocates nothing, and the function never frees it. Its contents are
    defined only between the write of an operand and its sum. Every rank of
    the group must ask for the same size, as they run the same function.
    With `rank`, the segment of that rank of the group instead, which only
    a window the group's ranks share has (convert-mithril-to-linalg's
    `window-ranks`): the code then reads every rank's operand where it lies
    and adds them itself. Lowered, after the buffer deallocation, to a call
    of the runtime (mithril-lower-collective-windows).

    ```mlir
    %w = mithril.collective_window {group = "data"} : memref<2674688xi8>
    %w1 = mithril.collective_window {group = "data", rank = 1} : memref<2674688xi8>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<Mithril_CollectiveGroupAttr, "\"data\"">:$group,
                       OptionalAttr<I64Attr>:$rank);
  let results = (outs MemRefRankOf<[I8], [1]>:$window);
  let assemblyFormat = "attr-dict `:` type($window)";
  let hasVerifier = 1;
}

def Mithril_ReplicateOp : Mithril_Op<"replicate", [
    Pure, SameOperandsAndResultType, InferTypeOpInterface, Mithril_Differentiable,
    Mithril_BatchParallel]> {
  let summary = "The input of a column-parallel layer: identity, summed in the backward pass";
  let description = [{
    Forward, the identity: every rank of the tensor group holds the same
    value. Its gradient is the sum over the group of the ranks' cotangents,
    each the contribution of the rank's columns of the layer it feeds
    (Megatron's `f` operator); mithril-tensor-parallel puts it before a
    column-parallel layer.
  }];
  let arguments = (ins RankedTensorOf<[F32, F64]>:$input,
                       DefaultValuedAttr<Mithril_CollectiveGroupAttr, "\"tensor\"">:$group);
  let results = (outs RankedTensorOf<[F32, F64]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and normalization
//===----------------------------------------------------------------------===//

class Mithril_ConvOp<string mnemonic, int rank>
    : Mithril_TensorOp<mnemonic, [Mithril_Differentiable, Mithril_RefinesOperandShapes,
                                  Mithril_BatchParallel]> {
  let summary = "Convolution over " # rank # " spatial dimensions, channels first";
  let description = [{
    `input` is `[N, C_in, spatial...]`, `weight` is
    `[C_out, C_in / groups, kernel...]` and the optional `bias` is `[C_out]`.
    `padding` gives the zero padding at each end of every spatial dimension
    (before and after: `[p0_lo, p0_hi, p1_lo, p1_hi]`).
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       RankedTensorOf<[AnyFloat]>:$weight,
                       Optional<RankedTensorOf<[AnyFloat]>>:$bias,
                       DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_Conv1DOp : Mithril_ConvOp<"conv1d", 1>;
def Mithril_Conv2DOp : Mithril_ConvOp<"conv2d", 2>;

class Mithril_PoolOp<string mnemonic, string doc>
    : Mithril_TensorOp<mnemonic, [Mithril_Differentiable, Mithril_BatchParallel]> {
  let summary = doc;
  let description = [{
    Pools `[N, C, spatial...]` (or `[C, spatial...]`) with a window of
    `kernel_size`, `stride`, `padding` (before and after each spatial
    dimension) and `dilation`. Max pooling pads with minus infinity; average
    pooling counts the padding as zeros.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_MaxPool1DOp : Mithril_PoolOp<"max_pool1d", "Max pooling over one spatial dimension">;
def Mithril_MaxPool2DOp : Mithril_PoolOp<"max_pool2d", "Max pooling over two spatial dimensions">;
def Mithril_AvgPool2DOp : Mithril_PoolOp<"avg_pool2d", "Average pooling over two spatial dimensions">;

def Mithril_EmbeddingOp : Mithril_TensorOp<"embedding",
    [Mithril_Differentiable, Mithril_DataMovement, Mithril_BatchParallel]> {
  let summary = "Gather rows of `weight` [V, D] at integer `indices`";
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$indices, RankedTensorOf<[AnyFloat]>:$weight);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_LayerNormOp : Mithril_TensorOp<"layer_norm",
    [Mithril_Differentiable, Mithril_RefinesOperandShapes, Mithril_BatchParallel]> {
  let summary = "Normalize over the last `num_axes` axes: (x - mean) / sqrt(var + eps)";
  let description = [{
    With `scaled`, the first of `affine` is a weight the result is multiplied
    by; with `shifted`, the last is a bias added to it. Both have the shape of
    the normalized (trailing) axes, which is what ties a parameter's size to
    the input's (a separate broadcasting multiply would let a weight of any
    size broadcast a last axis of 1).
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       Variadic<RankedTensorOf<[AnyFloat]>>:$affine,
                       DefaultValuedAttr<I64Attr, "1">:$num_axes,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps,
                       DefaultValuedAttr<BoolAttr, "false">:$scaled,
                       DefaultValuedAttr<BoolAttr, "false">:$shifted);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDeclaration = [{
    /// The normalized axes: the last `num_axes`.
    llvm::SmallVector<int64_t> getNormalizedAxes();
    /// The input less its mean over the normalized axes, the mean corrected
    /// once by the mean of what it leaves (its rounding error), so that a
    /// row of equal values centers to zeros exactly: what the decomposition
    /// and the gradient both normalize.
    mlir::Value buildCentered(mlir::OpBuilder &b, mlir::Location loc);
  }];
}
def Mithril_BatchNormOp : Mithril_TensorOp<"batch_norm", [Mithril_BatchParallel]> {
  let summary = "Inference batch normalization over axis 1 with running statistics";
  let description = [{
    `(x - mean) / sqrt(var + eps) * weight + bias`, where `mean`, `var`,
    `weight` and `bias` are 1-D over the channel axis (axis 1) of `input`.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       RankedTensorOf<[AnyFloat]>:$mean, RankedTensorOf<[AnyFloat]>:$variance,
                       RankedTensorOf<[AnyFloat]>:$weight, RankedTensorOf<[AnyFloat]>:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Gradient primitives (mithril-autodiff creates them)
//===----------------------------------------------------------------------===//

def Mithril_ConvGradInputOp : Mithril_TensorOp<"conv_grad_input"> {
  let summary = "Gradient of a convolution with respect to its input";
  let description = [{
    Given the gradient `grad` [N, C_out, O...] of a convolution's result and
    its `weight` [C_out, C_in / groups, K...], the gradient of its input,
    whose spatial sizes are `input_spatial`.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$grad, RankedTensorOf<[AnyFloat]>:$weight,
                       DenseI64ArrayAttr:$input_spatial, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_ConvGradWeightOp : Mithril_TensorOp<"conv_grad_weight"> {
  let summary = "Gradient of a convolution with respect to its weight";
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$grad,
                       DenseI64ArrayAttr:$kernel_size, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_MaxPoolGradOp : Mithril_TensorOp<"max_pool_grad"> {
  let summary = "Gradient of max pooling: to the elements equal to their window's maximum";
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$output,
                       RankedTensorOf<[AnyFloat]>:$grad, DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_AvgPoolGradOp : Mithril_TensorOp<"avg_pool_grad"> {
  let summary = "Gradient of average pooling";
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$grad, DenseI64ArrayAttr:$input_spatial,
                       DenseI64ArrayAttr:$kernel_size, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_EmbeddingGradOp : Mithril_TensorOp<"embedding_grad"> {
  let summary = "Gradient of an embedding table: rows accumulate their lookups' gradients";
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$indices, RankedTensorOf<[AnyFloat]>:$grad,
                       I64Attr:$num_embeddings);
  let results = (outs AnyRankedTensor:$result);
}
def Mithril_SliceGradOp : Mithril_TensorOp<"slice_grad", [Mithril_DataMovement]> {
  let summary = "Gradient of a slice: the slice's gradient placed into zeros";
  let arguments = (ins AnyRankedTensor:$grad, DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$stop, DenseI64ArrayAttr:$step);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Losses (elementwise; reduce them with sum or mean)
//===----------------------------------------------------------------------===//

def Mithril_SquaredErrorOp : Mithril_LossOp<"squared_error", "(input - target) ** 2">;
def Mithril_AbsoluteErrorOp : Mithril_LossOp<"absolute_error", "|input - target|">;
def Mithril_HingeOp : Mithril_LossOp<"hinge", "max(0, 1 - input * target)">;
def Mithril_QuadHingeOp : Mithril_LossOp<"quad_hinge", "max(0, 1 - input * target) ** 2">;
def Mithril_KLDivergenceOp : Mithril_LossOp<"kl_divergence",
    "target * (log(target) - log(input)), zero where target is zero">;
def Mithril_QuantileOp : Mithril_LossOp<"quantile",
    "max(q * (target - input), (q - 1) * (target - input))"> {
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$target,
                       DefaultValuedAttr<F64Attr, "0.5">:$quantile);
}
def Mithril_BinaryCrossEntropyOp : Mithril_LossOp<"binary_cross_entropy",
    "-(t * log(p) + (1 - t) * log(1 - p)), from probabilities or logits"> {
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$target,
                       DefaultValuedAttr<BoolAttr, "false">:$from_logits);
}
def Mithril_CrossEntropyOp : Mithril_TensorOp<"cross_entropy", [Mithril_Differentiable, Mithril_BatchParallel]> {
  let summary = "Cross entropy over the class axis (axis 1)";
  let description = [{
    `input` is `[N, C, ...]` holding probabilities, logits (`from_logits`) or
    log-probabilities (`from_log_probs`). With an integer `target` of shape
    `[N, ...]` it holds class indices; with a float `target` of the input's
    shape it holds class probabilities. The result is the per-sample loss,
    `[N, ...]`.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, AnyRankedTensor:$target,
                       DefaultValuedAttr<BoolAttr, "false">:$from_logits,
                       DefaultValuedAttr<BoolAttr, "false">:$from_log_probs);
  let results = (outs AnyRankedTensor:$result);
}

#endif // MITHRIL_DIALECT_MITHRIL_IR_MITHRILOPS_TD
