//===- ModelBuilder.cpp - build mithril models programmatically -----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Builder/ModelBuilder.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace mithril;

ModelBuilder::ModelBuilder(ModuleOp module, StringRef name, std::optional<Location> loc)
    : builder(module.getContext()) {
  builder.setInsertionPointToEnd(module.getBody());
  Location where = loc ? *loc : NameLoc::get(builder.getStringAttr(name));
  model = ModelOp::create(builder, where, name, ArrayRef<TerminalSpec>{},
                          ArrayRef<TerminalSpec>{});
  builder.setInsertionPointToEnd(&model.getBodyBlock());
}

Location ModelBuilder::locFor(StringRef name) {
  if (name.empty())
    return model.getLoc();
  return NameLoc::get(builder.getStringAttr(name));
}

FailureOr<Value> ModelBuilder::addInput(StringRef name, InputKind kind,
                                        RankedTensorType type) {
  if (model.lookupInput(name)) {
    emitError(locFor(name)) << "model @" << model.getSymName()
                            << " already has an input terminal named '" << name << "'";
    return failure();
  }
  unsigned index = model.getNumInputs();
  auto attrs = builder.getDictionaryAttr(
      {builder.getNamedAttr(kTerminalNameAttr, builder.getStringAttr(name)),
       builder.getNamedAttr(kInputKindAttr, InputKindAttr::get(getContext(), kind))});
  if (failed(model.insertArgument(index, type, attrs, locFor(name))))
    return failure();
  return model.getBodyBlock().getArgument(index);
}

FailureOr<SmallVector<Value>> ModelBuilder::addOp(StringRef opName, ValueRange operands,
                                                  ArrayRef<NamedAttribute> attributes,
                                                  StringRef name) {
  std::string fullName = opName.starts_with("mithril.") ? opName.str()
                                                        : ("mithril." + opName).str();
  Location loc = locFor(name);
  std::optional<RegisteredOperationName> info =
      RegisteredOperationName::lookup(fullName, getContext());
  if (!info || !info->hasInterface<InferTypeOpInterface>() ||
      fullName == "mithril.instance" || fullName == "mithril.output" ||
      fullName == "mithril.model") {
    emitError(loc) << "unknown mithril primitive '" << opName << "'";
    return failure();
  }
  // Create the op with a placeholder result so that its attributes become
  // properties, then ask its shape rules for the real result type.
  OperationState state(loc, *info);
  state.addOperands(operands);
  state.addAttributes(attributes);
  state.addTypes(builder.getNoneType());
  Operation *op = builder.create(state);
  SmallVector<Type> types;
  auto infer = cast<InferTypeOpInterface>(op);
  if (failed(infer.inferReturnTypes(getContext(), loc, op->getOperands(),
                                    op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                    op->getRegions(), types)) ||
      types.empty()) {
    op->erase();
    return failure();
  }
  if (types.size() == 1) {
    op->getResult(0).setType(types[0]);
  } else {
    // An op of several results (mithril.unique's values and count): made
    // again with all of them.
    OperationState again(loc, *info);
    again.addOperands(op->getOperands());
    again.addTypes(types);
    again.propertiesAttr = op->getPropertiesAsAttribute();
    again.addAttributes(llvm::to_vector(op->getDiscardableAttrs()));
    Operation *full = builder.create(again);
    op->erase();
    op = full;
  }
  if (failed(verify(op))) {
    op->erase();
    return failure();
  }
  return SmallVector<Value>(op->getResults());
}

Value ModelBuilder::addConstant(DenseElementsAttr value, StringRef name) {
  return ConstantOp::create(builder, locFor(name), value);
}

FailureOr<SmallVector<Value>>
ModelBuilder::addInstance(StringRef instanceName, ModelOp callee,
                          ArrayRef<std::pair<std::string, Value>> bindings) {
  Location loc = locFor(instanceName);
  SmallVector<Attribute> terminals;
  SmallVector<Value> values;
  for (const auto &[terminal, value] : bindings) {
    terminals.push_back(builder.getStringAttr(terminal));
    values.push_back(value);
  }
  auto inst = InstanceOp::create(builder, loc, callee.getFunctionType().getResults(),
                                 builder.getStringAttr(instanceName),
                                 FlatSymbolRefAttr::get(callee.getSymNameAttr()),
                                 builder.getArrayAttr(terminals), values);
  SymbolTableCollection symbols;
  if (failed(inst.verifySymbolUses(symbols)) || failed(verify(inst))) {
    inst.erase();
    return failure();
  }
  return SmallVector<Value>(inst.getResults());
}

LogicalResult ModelBuilder::addOutput(StringRef name, Value value) {
  for (auto &[existing, _] : outputs)
    if (existing == name)
      return emitError(locFor(name)) << "model @" << model.getSymName()
                                     << " already has an output terminal named '" << name
                                     << "'";
  outputs.emplace_back(name.str(), value);
  return success();
}

FailureOr<ModelOp> ModelBuilder::finish() {
  SmallVector<Value> values;
  SmallVector<Attribute> resAttrs;
  for (auto &[name, value] : outputs) {
    values.push_back(value);
    resAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(kTerminalNameAttr, builder.getStringAttr(name))}));
  }
  OutputOp::create(builder, model.getLoc(), values);
  model.setResAttrsAttr(builder.getArrayAttr(resAttrs));
  model.syncFunctionType();
  if (failed(verify(model)))
    return failure();
  return model;
}
