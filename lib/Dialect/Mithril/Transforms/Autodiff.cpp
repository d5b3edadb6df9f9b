//===- Autodiff.cpp - reverse-mode differentiation of models --------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Gradients are mithril ops appended to the model, so they go through the
// same shape rules, fusion, bufferization and code generation as the forward
// model, and reuse its values instead of recomputing them.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

namespace mithril {
#define GEN_PASS_DEF_MITHRILAUTODIFF
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

bool isDifferentiable(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// Builds the mithril ops of the backward pass; every helper infers its
/// result type from the dialect's shape rules.
class GradBuilder {
public:
  GradBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value cst(Type elementType, double v) {
    auto type = RankedTensorType::get({}, elementType);
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, v)));
  }
  Value cstLike(Value like, double v) { return cst(typeOf(like).getElementType(), v); }
  Value zerosLike(Value like) {
    RankedTensorType t = typeOf(like);
    if (t.hasStaticShape())
      return ConstantOp::create(
          b, loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
    return mul(like, cstLike(like, 0.0));
  }

  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubtractOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MultiplyOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivideOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegateOp::create(b, loc, x); }
  Value exp(Value x) { return ExpOp::create(b, loc, x); }
  Value log(Value x) { return LogOp::create(b, loc, x); }
  Value sign(Value x) { return SignOp::create(b, loc, x); }
  Value cast(Value x, Type elementType) {
    return CastOp::create(b, loc, x, TypeAttr::get(elementType));
  }
  /// A 0/1 float mask of a predicate.
  Value mask(Value predicate, Value like) {
    return cast(predicate, typeOf(like).getElementType());
  }
  Value where(Value c, Value x, Value y) { return WhereOp::create(b, loc, c, x, y); }
  Value gt(Value x, Value y) { return GreaterOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) { return LessOp::create(b, loc, x, y); }
  Value eq(Value x, Value y) { return EqualOp::create(b, loc, x, y); }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (typeOf(x).getShape() == shape)
      return x;
    return ReshapeOp::create(b, loc, x, b.getDenseI64ArrayAttr(shape));
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr(perm));
  }
  Value sum(Value x, ArrayRef<int64_t> axes, bool keepdim) {
    return SumOp::create(b, loc, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdim));
  }
  Value matmul(Value x, Value y) { return MatmulOp::create(b, loc, x, y); }
  Value broadcastTo(Value x, ArrayRef<int64_t> shape) {
    if (typeOf(x).getShape() == shape)
      return x;
    return BroadcastToOp::create(b, loc, x, b.getDenseI64ArrayAttr(shape));
  }
  /// Swaps the last two axes.
  Value transposeLast2(Value x) {
    int64_t r = typeOf(x).getRank();
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < r; ++i)
      perm.push_back(i);
    std::swap(perm[r - 1], perm[r - 2]);
    return transpose(x, perm);
  }

  /// Sums `g` (of a broadcast result's shape) back to `target`'s shape.
  Value unbroadcast(Value g, RankedTensorType target) {
    RankedTensorType gt = typeOf(g);
    if (gt.getShape() == target.getShape())
      return g;
    int64_t lead = gt.getRank() - target.getRank();
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < gt.getRank(); ++i)
      if (i < lead || (target.getDimSize(i - lead) == 1 && gt.getDimSize(i) != 1))
        axes.push_back(i);
    Value r = axes.empty() ? g : sum(g, axes, /*keepdim=*/true);
    return reshape(r, target.getShape());
  }

  /// Re-inserts the axes a reduction removed, as size 1, so that a reduced
  /// value broadcasts against the reduction's input.
  Value keepAxes(Value reduced, RankedTensorType input, ArrayRef<int64_t> axes, bool keepdim) {
    if (keepdim)
      return reduced;
    SmallVector<int64_t> shape(input.getShape());
    for (int64_t a : axes)
      shape[a] = 1;
    return reshape(reduced, shape);
  }

  OpBuilder &b;
  Location loc;
};

struct AutodiffPass : public mithril::impl::MithrilAutodiffBase<AutodiffPass> {
  using MithrilAutodiffBase::MithrilAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    // layer_norm keeps its own gradient (backward() below).
    populateMithrilDecomposePatterns(patterns, /*layerNorm=*/false);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
    bool found = false;
    for (ModelOp model : module.getOps<ModelOp>()) {
      if (!entry.empty() && model.getSymName() != entry)
        continue;
      found = true;
      if (failed(differentiate(model)))
        return signalPassFailure();
    }
    if (!entry.empty() && !found) {
      module.emitError("mithril-autodiff: no model named '") << entry << "'";
      signalPassFailure();
    }
  }

  LogicalResult differentiate(ModelOp model) {
    if (!model.getBodyBlock().getOps<InstanceOp>().empty())
      return model.emitOpError("must be flattened before mithril-autodiff");
    Block &body = model.getBodyBlock();
    // The gradient rules rebuild shapes (reshape, broadcast, sum back to an
    // operand's shape) from static types; a dynamic one would make them guess.
    for (BlockArgument arg : body.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (type && !type.hasStaticShape())
        return model.emitOpError("mithril-autodiff needs static shapes, but input terminal '")
               << model.getInputName(arg.getArgNumber()) << "' has type " << type
               << "; give the input shapes first (mithril-infer-shapes{shapes=...})";
    }
    for (Operation &op : body.without_terminator())
      for (Type type : op.getResultTypes())
        if (auto tensor = dyn_cast<RankedTensorType>(type); tensor && !tensor.hasStaticShape())
          return op.emitOpError("mithril-autodiff needs static shapes, but this result has type ")
                 << tensor << "; give the input shapes first (mithril-infer-shapes{shapes=...})";
    OutputOp output = model.getOutputOp();

    // The inputs to differentiate and the outputs to seed.
    SmallVector<unsigned> wrtInputs, seedOutputs;
    for (const std::string &name : wrt) {
      std::optional<unsigned> i = model.lookupInput(name);
      if (!i)
        return model.emitOpError("mithril-autodiff: no input terminal '") << name << "'";
      if (!isDifferentiable(body.getArgument(*i)))
        return model.emitOpError("mithril-autodiff: input terminal '")
               << name << "' is not floating-point and has no gradient";
      wrtInputs.push_back(*i);
    }
    if (wrt.empty())
      for (unsigned i = 0, e = model.getNumInputs(); i < e; ++i)
        if (model.getInputKind(i) == InputKind::Param && isDifferentiable(body.getArgument(i)))
          wrtInputs.push_back(i);
    for (const std::string &name : seeds) {
      std::optional<unsigned> i = model.lookupOutput(name);
      if (!i)
        return model.emitOpError("mithril-autodiff: no output terminal '") << name << "'";
      seedOutputs.push_back(*i);
    }
    if (seeds.empty())
      for (unsigned i = 0, e = model.getNumOutputs(); i < e; ++i)
        if (isDifferentiable(output.getValues()[i]))
          seedOutputs.push_back(i);

    // Values that depend on a differentiated input: only they need adjoints.
    active.clear();
    for (unsigned i : wrtInputs)
      active.insert(body.getArgument(i));
    for (Operation &op : body.without_terminator()) {
      if (isa<StopGradientOp>(op))
        continue;
      if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
        for (Value r : op.getResults())
          if (isDifferentiable(r))
            active.insert(r);
    }

    OpBuilder b(output);
    GradBuilder g(b, model.getLoc());
    llvm::DenseMap<Value, Value> adjoint;
    auto accumulate = [&](Value v, Value grad) {
      if (!grad || !active.contains(v))
        return;
      auto it = adjoint.find(v);
      if (it == adjoint.end())
        adjoint[v] = grad;
      else
        it->second = g.add(it->second, grad);
    };

    // Seed gradients arrive as new data inputs.
    SmallVector<std::pair<unsigned, Value>> seedArgs;
    for (unsigned i : seedOutputs) {
      Value out = output.getValues()[i];
      std::string name = ("grad:" + model.getOutputName(i)).str();
      if (model.lookupInput(name))
        return model.emitOpError("already has an input named '") << name << "'";
      unsigned index = model.getNumInputs();
      auto attrs = b.getDictionaryAttr(
          {b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(name)),
           b.getNamedAttr(kInputKindAttr, InputKindAttr::get(b.getContext(), InputKind::Data))});
      if (failed(model.insertArgument(index, out.getType(), attrs,
                                      NameLoc::get(b.getStringAttr(name)))))
        return failure();
      accumulate(out, body.getArgument(index));
    }

    // Walk the ops backwards, turning each result's adjoint into adjoints of
    // its operands.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      if (op->getNumResults() != 1)
        continue;
      auto it = adjoint.find(op->getResult(0));
      if (it == adjoint.end())
        continue;
      g.loc = op->getLoc();
      if (failed(backward(op, it->second, g, accumulate)))
        return failure();
    }

    if (checkpointSegments > 0)
      recomputeInSegments(ops, output, checkpointSegments);

    // Gradients leave through new outputs.
    SmallVector<Value> outputs(output.getValues());
    SmallVector<Attribute> resAttrs(model.getResAttrsAttr().getValue());
    for (unsigned i : wrtInputs) {
      Value arg = body.getArgument(i);
      Value grad = adjoint.lookup(arg);
      if (!grad)
        grad = g.zerosLike(arg);
      std::string name = ("grad:" + model.getInputName(i)).str();
      if (model.lookupOutput(name))
        return model.emitOpError("already has an output named '") << name << "'";
      outputs.push_back(grad);
      resAttrs.push_back(
          b.getDictionaryAttr({b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(name))}));
    }
    output.getValuesMutable().assign(outputs);
    model.setResAttrsAttr(b.getArrayAttr(resAttrs));
    model.syncFunctionType();
    return success();
  }

  /// Gradient checkpointing: the forward ops (`forward`, in order), split
  /// into `segments` runs, keep alive only the values that cross a run's
  /// boundary, the model's outputs and inputs. A backward op that needs any
  /// other forward value gets it from a copy of its run's ops, made just
  /// before the first backward op that needs one: the forward values then
  /// die during the forward pass, and a run's are alive again only while its
  /// backward ops run.
  void recomputeInSegments(ArrayRef<Operation *> forward, OutputOp output, unsigned segments) {
    SmallVector<Operation *> work;
    for (Operation *op : forward)
      if (!isa<ConstantOp>(op))
        work.push_back(op);
    if (work.size() < 2)
      return;
    unsigned runs = std::min<unsigned>(segments, work.size());
    llvm::DenseMap<Operation *, unsigned> runOf;
    for (size_t i = 0; i < work.size(); ++i)
      runOf[work[i]] = static_cast<unsigned>(i * runs / work.size());
    auto crossesBoundary = [&](Value v, unsigned run) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        if (user == output.getOperation())
          return true;
        auto it = runOf.find(user);
        return it != runOf.end() && it->second > run;
      });
    };
    for (unsigned run = 0; run < runs; ++run) {
      SmallVector<Operation *> runOps;
      for (Operation *op : work)
        if (runOf[op] == run)
          runOps.push_back(op);
      // The backward uses of the run's values that do not cross its boundary.
      SmallVector<OpOperand *> uses;
      Operation *first = nullptr;
      for (Operation *op : runOps)
        for (Value result : op->getResults()) {
          if (crossesBoundary(result, run))
            continue;
          for (OpOperand &use : result.getUses()) {
            Operation *user = use.getOwner();
            if (runOf.count(user) || isa<ConstantOp>(user))
              continue;
            uses.push_back(&use);
            if (!first || user->isBeforeInBlock(first))
              first = user;
          }
        }
      if (uses.empty())
        continue;
      OpBuilder rb(first);
      IRMapping copies;
      for (Operation *op : runOps) {
        Operation *copy = rb.clone(*op, copies);
        copy->setAttr("mithril.recompute", rb.getI64IntegerAttr(run));
      }
      for (OpOperand *use : uses)
        use->set(copies.lookup(use->get()));
    }
  }

  using Accumulate = function_ref<void(Value, Value)>;

  /// The vector-Jacobian product of one op.
  LogicalResult backward(Operation *op, Value grad, GradBuilder &g, Accumulate acc) {
    Value y = op->getResult(0);
    auto ub = [&](Value operand, Value d) { acc(operand, g.unbroadcast(d, typeOf(operand))); };
    auto x = [&](unsigned i) { return op->getOperand(i); };
    return TypeSwitch<Operation *, LogicalResult>(op)
        // Arithmetic.
        .Case([&](AddOp) {
          ub(x(0), grad);
          ub(x(1), grad);
          return success();
        })
        .Case([&](SubtractOp) {
          ub(x(0), grad);
          ub(x(1), g.neg(grad));
          return success();
        })
        .Case([&](MultiplyOp) {
          ub(x(0), g.mul(grad, x(1)));
          ub(x(1), g.mul(grad, x(0)));
          return success();
        })
        .Case([&](DivideOp) {
          ub(x(0), g.div(grad, x(1)));
          ub(x(1), g.neg(g.div(g.mul(grad, y), x(1))));
          return success();
        })
        .Case([&](PowerOp) {
          // d/da a^b = b a^(b-1); d/db a^b = a^b log(a)
          Value bm1 = g.sub(x(1), g.cstLike(x(1), 1.0));
          ub(x(0), g.mul(grad, g.mul(x(1), PowerOp::create(g.b, g.loc, x(0), bm1))));
          // a^b log(a), taken as 0 where a^b is 0 (a = 0 < b, or underflow)
          // rather than 0 * -inf.
          if (active.contains(x(1))) {
            Value isZero = g.eq(y, g.cstLike(y, 0.0));
            ub(x(1), g.mul(grad, g.where(isZero, g.cstLike(y, 0.0), g.mul(y, g.log(x(0))))));
          }
          return success();
        })
        .Case<MinimumOp, MaximumOp>([&](Operation *) {
          // Ties share the gradient equally.
          bool isMax = isa<MaximumOp>(op);
          Value first = g.mask(isMax ? g.gt(x(0), x(1)) : g.lt(x(0), x(1)), grad);
          Value tie = g.mul(g.mask(g.eq(x(0), x(1)), grad), g.cstLike(grad, 0.5));
          Value w0 = g.add(first, tie);
          Value w1 = g.sub(g.cstLike(grad, 1.0), w0);
          ub(x(0), g.mul(grad, w0));
          ub(x(1), g.mul(grad, w1));
          return success();
        })
        .Case([&](NegateOp) {
          acc(x(0), g.neg(grad));
          return success();
        })
        .Case([&](AbsOp) {
          acc(x(0), g.mul(grad, g.sign(x(0))));
          return success();
        })
        .Case([&](SquareOp) {
          acc(x(0), g.mul(grad, g.mul(x(0), g.cstLike(grad, 2.0))));
          return success();
        })
        .Case([&](ExpOp) {
          acc(x(0), g.mul(grad, y));
          return success();
        })
        .Case([&](LogOp) {
          acc(x(0), g.div(grad, x(0)));
          return success();
        })
        .Case([&](SqrtOp) {
          acc(x(0), g.div(grad, g.mul(y, g.cstLike(grad, 2.0))));
          return success();
        })
        .Case([&](SinOp) {
          acc(x(0), g.mul(grad, CosOp::create(g.b, g.loc, x(0))));
          return success();
        })
        .Case([&](CosOp) {
          acc(x(0), g.neg(g.mul(grad, SinOp::create(g.b, g.loc, x(0)))));
          return success();
        })
        .Case([&](ReciprocalOp) {
          acc(x(0), g.neg(g.mul(grad, g.mul(y, y))));
          return success();
        })
        .Case([&](ErfOp) {
          // 2/sqrt(pi) exp(-x^2)
          Value e = g.exp(g.neg(g.mul(x(0), x(0))));
          acc(x(0), g.mul(grad, g.mul(e, g.cstLike(grad, 2.0 / std::sqrt(M_PI)))));
          return success();
        })
        // Piecewise constant: zero gradient.
        .Case<SignOp, StopGradientOp, EyeLikeOp, FloorDivideOp>(
            [&](Operation *) { return success(); })
        .Case([&](CastOp c) {
          if (isDifferentiable(x(0)))
            acc(x(0), g.cast(grad, typeOf(x(0)).getElementType()));
          return success();
        })
        // Activations.
        .Case([&](ReluOp) {
          acc(x(0), g.mul(grad, g.mask(g.gt(x(0), g.cstLike(x(0), 0.0)), grad)));
          return success();
        })
        .Case([&](LeakyReluOp lr) {
          Value slope = g.cstLike(grad, lr.getSlope().convertToDouble());
          Value pos = g.gt(x(0), g.cstLike(x(0), 0.0));
          acc(x(0), g.mul(grad, g.where(pos, g.cstLike(grad, 1.0), slope)));
          return success();
        })
        .Case([&](SigmoidOp) {
          acc(x(0), g.mul(grad, g.mul(y, g.sub(g.cstLike(y, 1.0), y))));
          return success();
        })
        .Case([&](TanhOp) {
          acc(x(0), g.mul(grad, g.sub(g.cstLike(y, 1.0), g.mul(y, y))));
          return success();
        })
        .Case([&](SoftplusOp) {
          acc(x(0), g.mul(grad, SigmoidOp::create(g.b, g.loc, x(0))));
          return success();
        })
        .Case([&](GeluOp gelu) {
          Value a = x(0);
          Value d;
          if (gelu.getApproximate()) {
            // 0.5 (1 + t) + 0.5 a (1 - t^2) c (1 + 3k a^2), t = tanh(c (a + k a^3))
            double c = std::sqrt(2.0 / M_PI), k = 0.044715;
            Value a2 = g.mul(a, a);
            Value inner = g.mul(g.add(a, g.mul(g.mul(a2, a), g.cstLike(a, k))), g.cstLike(a, c));
            Value t = TanhOp::create(g.b, g.loc, inner);
            Value dInner = g.mul(g.add(g.cstLike(a, 1.0), g.mul(a2, g.cstLike(a, 3 * k))),
                                 g.cstLike(a, c));
            Value left = g.mul(g.add(g.cstLike(a, 1.0), t), g.cstLike(a, 0.5));
            Value right = g.mul(g.mul(g.mul(a, g.cstLike(a, 0.5)),
                                      g.sub(g.cstLike(a, 1.0), g.mul(t, t))),
                                dInner);
            d = g.add(left, right);
          } else {
            // Phi(a) + a phi(a)
            Value phi = g.mul(g.exp(g.mul(g.mul(a, a), g.cstLike(a, -0.5))),
                              g.cstLike(a, 1.0 / std::sqrt(2.0 * M_PI)));
            Value cdf = g.mul(g.add(g.cstLike(a, 1.0),
                                    ErfOp::create(g.b, g.loc, g.mul(a, g.cstLike(a, M_SQRT1_2)))),
                              g.cstLike(a, 0.5));
            d = g.add(cdf, g.mul(a, phi));
          }
          acc(a, g.mul(grad, d));
          return success();
        })
        .Case([&](WhereOp) {
          Value zero = g.cstLike(grad, 0.0);
          ub(x(1), g.where(x(0), grad, zero));
          ub(x(2), g.where(x(0), zero, grad));
          return success();
        })
        // Linear algebra.
        .Case([&](MatmulOp) { return backwardMatmul(x(0), x(1), grad, g, acc); })
        // Reductions.
        .Case([&](SumOp s) {
          auto in = typeOf(x(0));
          auto axes = reductionAxes(s.getAxes(), in.getRank());
          acc(x(0), g.broadcastTo(g.keepAxes(grad, in, axes, s.getKeepdim()), in.getShape()));
          return success();
        })
        .Case([&](LayerNormOp ln) {
          // One expression, as torch's: (g - mean(g) - xhat mean(g xhat)) /
          // stddev, g the gradient times the weight. Differentiating the
          // decomposition instead adds up contributions that cancel (all of
          // them over one normalized element) in an order that leaves their
          // rounding behind, amplified by 1 / stddev.
          int64_t rank = typeOf(x(0)).getRank();
          SmallVector<int64_t> axes;
          for (int64_t i = rank - static_cast<int64_t>(ln.getNumAxes()); i < rank; ++i)
            axes.push_back(i);
          auto mean = [&](Value v) -> Value {
            return MeanOp::create(g.b, g.loc, v, g.b.getDenseI64ArrayAttr(axes),
                                  g.b.getBoolAttr(true));
          };
          Value centered = g.sub(x(0), mean(x(0)));
          Value var = mean(SquareOp::create(g.b, g.loc, centered));
          Value stddev = SqrtOp::create(g.b, g.loc,
                                        g.add(var, g.cstLike(x(0), ln.getEps().convertToDouble())));
          Value xhat = g.div(centered, stddev);
          ValueRange affine = ln.getAffine();
          Value gw = ln.getScaled() ? g.mul(grad, affine.front()) : grad;
          Value inner = g.sub(g.sub(gw, mean(gw)), g.mul(xhat, mean(g.mul(gw, xhat))));
          acc(x(0), g.div(inner, stddev));
          if (ln.getScaled())
            ub(affine.front(), g.mul(grad, xhat));
          if (ln.getShifted())
            ub(affine.back(), grad);
          return success();
        })
        .Case([&](MeanOp m) {
          auto in = typeOf(x(0));
          auto axes = reductionAxes(m.getAxes(), in.getRank());
          int64_t count = 1;
          for (int64_t a : axes)
            count *= in.getDimSize(a);
          Value scaled = g.div(grad, g.cstLike(grad, count));
          acc(x(0), g.broadcastTo(g.keepAxes(scaled, in, axes, m.getKeepdim()), in.getShape()));
          return success();
        })
        .Case<MaxOp, MinOp>([&](Operation *) {
          // The gradient goes to the extreme elements, shared among ties.
          auto in = typeOf(x(0));
          std::optional<ArrayRef<int64_t>> a;
          bool keepdim;
          if (auto m = dyn_cast<MaxOp>(op)) {
            a = m.getAxes();
            keepdim = m.getKeepdim();
          } else {
            auto n = cast<MinOp>(op);
            a = n.getAxes();
            keepdim = n.getKeepdim();
          }
          auto axes = reductionAxes(a, in.getRank());
          Value yk = g.keepAxes(y, in, axes, keepdim);
          Value hit = g.mask(g.eq(x(0), yk), grad);
          Value count = g.sum(hit, axes, /*keepdim=*/true);
          Value gk = g.keepAxes(grad, in, axes, keepdim);
          acc(x(0), g.div(g.mul(hit, gk), count));
          return success();
        })
        .Case([&](ProdOp p) {
          auto in = typeOf(x(0));
          auto axes = reductionAxes(p.getAxes(), in.getRank());
          // d prod / d x_i is the product of the others: prod / x_i without
          // zeros; with one zero, the product of the nonzero elements at the
          // zero and 0 elsewhere; with two or more, 0 everywhere.
          Value zero = g.eq(x(0), g.cstLike(x(0), 0.0));
          Value nonzero = g.where(zero, g.cstLike(x(0), 1.0), x(0));
          Value prodNonzero = ProdOp::create(g.b, g.loc, nonzero, g.b.getDenseI64ArrayAttr(axes),
                                             g.b.getBoolAttr(true));
          Value zeros = g.sum(g.mask(zero, x(0)), axes, /*keepdim=*/true);
          Value none = g.eq(zeros, g.cstLike(zeros, 0.0));
          Value one = g.eq(zeros, g.cstLike(zeros, 1.0));
          Value others = g.where(none, g.div(prodNonzero, nonzero),
                                 g.where(zero, g.where(one, prodNonzero, g.cstLike(x(0), 0.0)),
                                         g.cstLike(x(0), 0.0)));
          Value gk = g.keepAxes(grad, in, axes, p.getKeepdim());
          acc(x(0), g.mul(gk, others));
          return success();
        })
        .Case([&](VarianceOp v) {
          auto in = typeOf(x(0));
          auto axes = reductionAxes(v.getAxes(), in.getRank());
          int64_t count = 1;
          for (int64_t a : axes)
            count *= in.getDimSize(a);
          Value mean = MeanOp::create(g.b, g.loc, x(0), g.b.getDenseI64ArrayAttr(axes),
                                      g.b.getBoolAttr(true));
          double scale = 2.0 / (count - v.getCorrection().convertToDouble());
          Value gk = g.keepAxes(grad, in, axes, v.getKeepdim());
          acc(x(0), g.mul(g.mul(gk, g.sub(x(0), mean)), g.cstLike(grad, scale)));
          return success();
        })
        // Shape manipulation.
        .Case<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>([&](Operation *) {
          acc(x(0), g.reshape(grad, typeOf(x(0)).getShape()));
          return success();
        })
        .Case([&](TransposeOp t) {
          SmallVector<int64_t> perm = t.getPermutationOrDefault(), inverse(perm.size());
          for (auto [i, p] : llvm::enumerate(perm))
            inverse[p] = i;
          acc(x(0), g.transpose(grad, inverse));
          return success();
        })
        .Case([&](BroadcastToOp) {
          ub(x(0), grad);
          return success();
        })
        .Case([&](ConcatOp c) {
          int64_t rank = typeOf(y).getRank();
          int64_t axis = normalizeAxis(c.getAxis(), rank);
          int64_t offset = 0;
          for (Value in : c.getInputs()) {
            int64_t size = typeOf(in).getDimSize(axis);
            int64_t axes[] = {axis}, start[] = {offset}, stop[] = {offset + size}, step[] = {1};
            acc(in, SliceOp::create(g.b, g.loc, grad, g.b.getDenseI64ArrayAttr(axes),
                                    g.b.getDenseI64ArrayAttr(start),
                                    g.b.getDenseI64ArrayAttr(stop),
                                    g.b.getDenseI64ArrayAttr(step)));
            offset += size;
          }
          return success();
        })
        // Convolution, pooling, embedding and slicing: dedicated gradient
        // primitives.
        .Case<Conv1DOp, Conv2DOp>([&](Operation *) {
          auto attr = [&](StringRef n) { return cast<DenseI64ArrayAttr>(op->getAttr(n)); };
          auto groups = cast<IntegerAttr>(op->getAttr("groups"));
          RankedTensorType in = typeOf(x(0)), w = typeOf(x(1));
          if (active.contains(x(0))) {
            if (Value viaConv = inputGradientAsConvolution(op, grad, g))
              acc(x(0), viaConv);
            else
              acc(x(0), ConvGradInputOp::create(
                            g.b, g.loc, grad, x(1),
                            g.b.getDenseI64ArrayAttr(in.getShape().drop_front(2)),
                            attr("stride"), attr("padding"), attr("dilation"), groups));
          }
          if (active.contains(x(1))) {
            if (Value viaConv = weightGradientAsConvolution(op, grad, g))
              acc(x(1), viaConv);
            else
              acc(x(1), ConvGradWeightOp::create(
                            g.b, g.loc, x(0), grad,
                            g.b.getDenseI64ArrayAttr(w.getShape().drop_front(2)), attr("stride"),
                            attr("padding"), attr("dilation"), groups));
          }
          if (op->getNumOperands() == 3 && active.contains(x(2))) {
            SmallVector<int64_t> axes = {0};
            for (int64_t i = 2; i < typeOf(grad).getRank(); ++i)
              axes.push_back(i);
            acc(x(2), g.sum(grad, axes, /*keepdim=*/false));
          }
          return success();
        })
        .Case([&](ReverseOp r) {
          acc(x(0), ReverseOp::create(g.b, g.loc, grad, r.getAxesAttr()));
          return success();
        })
        .Case<MaxPool1DOp, MaxPool2DOp>([&](Operation *) {
          auto attr = [&](StringRef n) { return cast<DenseI64ArrayAttr>(op->getAttr(n)); };
          acc(x(0), MaxPoolGradOp::create(g.b, g.loc, x(0), y, grad, attr("kernel_size"),
                                          attr("stride"), attr("padding"), attr("dilation")));
          return success();
        })
        .Case([&](AvgPool2DOp p) {
          RankedTensorType in = typeOf(x(0));
          int64_t spatial = p.getKernelSize().size();
          acc(x(0), AvgPoolGradOp::create(
                        g.b, g.loc, grad,
                        g.b.getDenseI64ArrayAttr(in.getShape().take_back(spatial)),
                        p.getKernelSizeAttr(), p.getStrideAttr(), p.getPaddingAttr(),
                        p.getDilationAttr()));
          return success();
        })
        .Case([&](EmbeddingOp e) {
          acc(e.getWeight(),
              EmbeddingGradOp::create(g.b, g.loc, e.getIndices(), grad,
                                      g.b.getI64IntegerAttr(typeOf(e.getWeight()).getDimSize(0))));
          return success();
        })
        .Case([&](SliceOp sl) {
          acc(x(0), SliceGradOp::create(g.b, g.loc, grad,
                                        g.b.getDenseI64ArrayAttr(typeOf(x(0)).getShape()),
                                        sl.getAxesAttr(), sl.getStartAttr(), sl.getStopAttr(),
                                        sl.getStepAttr()));
          return success();
        })
        // Losses.
        .Case([&](SquaredErrorOp) {
          Value d = g.mul(g.mul(grad, g.sub(x(0), x(1))), g.cstLike(grad, 2.0));
          ub(x(0), d);
          ub(x(1), g.neg(d));
          return success();
        })
        .Case([&](AbsoluteErrorOp) {
          Value d = g.mul(grad, g.sign(g.sub(x(0), x(1))));
          ub(x(0), d);
          ub(x(1), g.neg(d));
          return success();
        })
        .Case<HingeOp, QuadHingeOp>([&](Operation *) {
          // At the kink (margin 0) the subgradient is the average of the two
          // sides, as Mithril's backends compute it.
          Value margin = g.sub(g.cstLike(grad, 1.0), g.mul(x(0), x(1)));
          Value on = g.add(g.mask(g.gt(margin, g.cstLike(margin, 0.0)), grad),
                           g.mul(g.mask(g.eq(margin, g.cstLike(margin, 0.0)), grad),
                                 g.cstLike(grad, 0.5)));
          Value factor = isa<HingeOp>(op)
                             ? on
                             : g.mul(g.mul(on, margin), g.cstLike(grad, 2.0));
          ub(x(0), g.neg(g.mul(grad, g.mul(factor, x(1)))));
          ub(x(1), g.neg(g.mul(grad, g.mul(factor, x(0)))));
          return success();
        })
        .Case([&](KLDivergenceOp) {
          // -target / input, 0 where the target is 0 (whatever the input).
          Value positive = g.gt(x(1), g.cstLike(x(1), 0.0));
          Value safeInput = g.where(positive, x(0), g.cstLike(x(0), 1.0));
          ub(x(0), g.neg(g.mul(grad, g.where(positive, g.div(x(1), safeInput),
                                             g.cstLike(grad, 0.0)))));
          Value dt = g.add(g.sub(g.log(x(1)), g.log(x(0))), g.cstLike(grad, 1.0));
          ub(x(1), g.mul(grad, g.where(g.gt(x(1), g.cstLike(x(1), 0.0)), dt,
                                       g.cstLike(grad, 0.0))));
          return success();
        })
        .Case([&](QuantileOp q) {
          double qv = q.getQuantile().convertToDouble();
          Value d = g.sub(x(1), x(0));
          // d/dinput max(q d, (q-1) d) = -q where d > 0, 1 - q elsewhere.
          // At d == 0 the subgradient is the average of the two sides.
          Value w = g.where(g.gt(d, g.cstLike(d, 0.0)), g.cstLike(grad, -qv),
                            g.where(g.eq(d, g.cstLike(d, 0.0)), g.cstLike(grad, 0.5 - qv),
                                    g.cstLike(grad, 1.0 - qv)));
          ub(x(0), g.mul(grad, w));
          ub(x(1), g.neg(g.mul(grad, w)));
          return success();
        })
        .Case([&](BinaryCrossEntropyOp bce) {
          Value p = x(0), t = x(1);
          if (bce.getFromLogits()) {
            Value s = SigmoidOp::create(g.b, g.loc, p);
            ub(p, g.mul(grad, g.sub(s, t)));
            ub(t, g.neg(g.mul(grad, p)));
          } else {
            Value one = g.cstLike(p, 1.0);
            Value denom = g.mul(p, g.sub(one, p));
            ub(p, g.mul(grad, g.div(g.sub(p, t), denom)));
            ub(t, g.neg(g.mul(grad, g.sub(g.log(p), g.log(g.sub(one, p))))));
          }
          return success();
        })
        .Case([&](CrossEntropyOp ce) { return backwardCrossEntropy(ce, grad, g, acc); })
        .Case([&](ConstantOp) { return success(); })
        .Default([&](Operation *) -> LogicalResult {
          if (llvm::none_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
            return success();
          return op->emitOpError("has no gradient rule yet; mithril-autodiff cannot "
                                 "differentiate through it");
        });
  }

  /// Whether a convolution has unit stride and dilation, one group and
  /// static shapes: its gradients are then convolutions too.
  static bool isPlainConvolution(Operation *op) {
    auto ints = [&](StringRef n) { return cast<DenseI64ArrayAttr>(op->getAttr(n)).asArrayRef(); };
    auto isOne = [](int64_t v) { return v == 1; };
    return cast<IntegerAttr>(op->getAttr("groups")).getInt() == 1 &&
           llvm::all_of(ints("stride"), isOne) && llvm::all_of(ints("dilation"), isOne) &&
           llvm::all_of(op->getOperandTypes(),
                        [](Type t) {
                          // Empty tensors keep the gradient ops, which know
                          // them; as a convolution the window could be
                          // longer than the padded gradient.
                          auto type = cast<RankedTensorType>(t);
                          return type.hasStaticShape() && type.getNumElements() > 0;
                        }) &&
           cast<RankedTensorType>(op->getResult(0).getType()).getNumElements() > 0;
  }

  static Value convolve(Operation *like, GradBuilder &g, Value input, Value weight,
                        ArrayRef<int64_t> padding) {
    SmallVector<int64_t> ones(padding.size() / 2, 1);
    auto unit = g.b.getDenseI64ArrayAttr(ones), pads = g.b.getDenseI64ArrayAttr(padding);
    auto groups = g.b.getI64IntegerAttr(1);
    if (isa<Conv1DOp>(like))
      return Conv1DOp::create(g.b, g.loc, input, weight, Value(), unit, pads, unit, groups);
    return Conv2DOp::create(g.b, g.loc, input, weight, Value(), unit, pads, unit, groups);
  }

  /// Swaps the first two axes (batch and channels, or the kernel's output
  /// and input channels).
  static Value swapLeadingAxes(GradBuilder &g, Value v) {
    SmallVector<int64_t> perm = {1, 0};
    for (int64_t i = 2, e = cast<RankedTensorType>(v.getType()).getRank(); i < e; ++i)
      perm.push_back(i);
    return TransposeOp::create(g.b, g.loc, v, g.b.getDenseI64ArrayAttr(perm));
  }

  /// The weight gradient of a plain convolution (see isPlainConvolution) is
  /// a convolution of the input, channels and batch swapped, by the output
  /// gradient, likewise swapped, with the forward padding:
  /// dW[f, c, k] = sum_{n, o} x[n, c, o + k] g[n, f, o]. Null when it does
  /// not qualify.
  Value weightGradientAsConvolution(Operation *op, Value grad, GradBuilder &g) {
    // A plain 2-D convolution keeps conv_grad_weight, whose lowering sums
    // over flat rows (a 3x3 "output" would not fill a register tile).
    if (!isPlainConvolution(op) || isa<Conv2DOp>(op))
      return Value();
    ArrayRef<int64_t> padding = cast<DenseI64ArrayAttr>(op->getAttr("padding")).asArrayRef();
    Value perChannel = convolve(op, g, swapLeadingAxes(g, op->getOperand(0)),
                                swapLeadingAxes(g, grad), padding);
    return swapLeadingAxes(g, perChannel);
  }

  /// The input gradient of a convolution with unit stride and dilation and
  /// one group is itself a convolution: of the output gradient, padded by
  /// kernel - 1 - padding, with the kernel flipped and its channels swapped.
  /// It then gets the forward convolution's schedule, where the general
  /// conv_grad_input (a gather per element) does not vectorize. Null when
  /// the convolution does not qualify.
  Value inputGradientAsConvolution(Operation *op, Value grad, GradBuilder &g) {
    if (!isPlainConvolution(op))
      return Value();
    auto weight = cast<RankedTensorType>(op->getOperand(1).getType());
    ArrayRef<int64_t> forward = cast<DenseI64ArrayAttr>(op->getAttr("padding")).asArrayRef();
    int64_t spatial = weight.getRank() - 2;
    SmallVector<int64_t> padding, axes;
    for (int64_t i = 0; i < 2 * spatial; ++i) {
      int64_t pad = weight.getDimSize(2 + i / 2) - 1 - forward[i];
      if (pad < 0)
        return Value();
      padding.push_back(pad);
    }
    for (int64_t i = 2; i < weight.getRank(); ++i)
      axes.push_back(i);
    Value flipped = ReverseOp::create(g.b, g.loc, swapLeadingAxes(g, op->getOperand(1)),
                                      g.b.getDenseI64ArrayAttr(axes));
    return convolve(op, g, grad, flipped, padding);
  }

  LogicalResult backwardMatmul(Value a, Value bv, Value grad, GradBuilder &g, Accumulate acc) {
    // Promote vectors to matrices as numpy.matmul does, differentiate the
    // matrix product, and drop the promoted axes again.
    RankedTensorType at = typeOf(a), bt = typeOf(bv);
    bool aVec = at.getRank() == 1, bVec = bt.getRank() == 1;
    Value a2 = aVec ? g.reshape(a, {1, at.getDimSize(0)}) : a;
    Value b2 = bVec ? g.reshape(bv, {bt.getDimSize(0), 1}) : bv;
    SmallVector<int64_t> gShape(typeOf(grad).getShape());
    if (aVec)
      gShape.insert(gShape.end() - (bVec ? 0 : 1), 1);
    if (bVec)
      gShape.push_back(1);
    Value g2 = g.reshape(grad, gShape);
    if (active.contains(a)) {
      Value da = g.matmul(g2, g.transposeLast2(b2));
      da = g.unbroadcast(da, typeOf(a2));
      acc(a, g.reshape(da, at.getShape()));
    }
    if (active.contains(bv)) {
      Value db = g.matmul(g.transposeLast2(a2), g2);
      db = g.unbroadcast(db, typeOf(b2));
      acc(bv, g.reshape(db, bt.getShape()));
    }
    return success();
  }

  LogicalResult backwardCrossEntropy(CrossEntropyOp ce, Value grad, GradBuilder &g,
                                     Accumulate acc) {
    if (!ce.getFromLogProbs())
      return ce.emitOpError("must be decomposed before differentiation");
    Value logp = ce.getInput(), target = ce.getTarget();
    RankedTensorType in = typeOf(logp);
    int64_t classAxis = in.getRank() == 1 ? 0 : 1;
    // Per-sample seeds broadcast over the class axis.
    Value gk = UnsqueezeOp::create(g.b, g.loc, grad, g.b.getI64IntegerAttr(classAxis));
    Value weights;
    if (isa<IntegerType>(typeOf(target).getElementType())) {
      weights = OneHotOp::create(g.b, g.loc, target,
                                 g.b.getI64IntegerAttr(in.getDimSize(classAxis)),
                                 g.b.getI64IntegerAttr(classAxis),
                                 TypeAttr::get(in.getElementType()));
    } else {
      weights = target;
      acc(target, g.neg(g.mul(gk, logp)));
    }
    acc(logp, g.neg(g.mul(gk, weights)));
    return success();
  }

  /// The values of the model being differentiated that depend on an input
  /// in `wrt`.
  llvm::DenseSet<Value> active;
};
} // namespace
