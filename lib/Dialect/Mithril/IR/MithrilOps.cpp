//===- MithrilOps.cpp - models, instances and outputs ---------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mithril;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

bool mithril::isPlainIdentifier(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name[0]) || name[0] == '_' || name[0] == '$'))
    return false;
  return llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
  });
}

LogicalResult mithril::verifyNoUnknownAttributes(Operation *op) {
  std::optional<RegisteredOperationName> name = op->getRegisteredInfo();
  if (!name)
    return success();
  ArrayRef<StringAttr> known = name->getAttributeNames();
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    // Dialect attributes (`mithril.name`, `llvm.*`) are legitimate extras.
    if (attr.getName().getValue().contains('.'))
      continue;
    InFlightDiagnostic diag = op->emitOpError("has no attribute '")
                              << attr.getName().getValue() << "'";
    SmallVector<StringRef> names;
    for (StringAttr k : known)
      if (k.getValue() != "operandSegmentSizes" && k.getValue() != "resultSegmentSizes")
        names.push_back(k.getValue());
    if (names.empty())
      diag << " (it takes none)";
    else
      diag << " (it takes: " << llvm::join(names, ", ") << ")";
    return diag;
  }
  return success();
}

static StringAttr getStringAttrOf(DictionaryAttr dict, StringRef key) {
  if (!dict)
    return {};
  return dyn_cast_or_null<StringAttr>(dict.get(key));
}

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

void ModelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    ArrayRef<TerminalSpec> inputs,
                    ArrayRef<TerminalSpec> outputs) {
  MLIRContext *ctx = builder.getContext();
  SmallVector<Type> inputTypes, outputTypes;
  SmallVector<Attribute> argAttrs, resAttrs;
  for (const TerminalSpec &in : inputs) {
    inputTypes.push_back(in.type);
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(kTerminalNameAttr, builder.getStringAttr(in.name)),
         builder.getNamedAttr(kInputKindAttr, InputKindAttr::get(ctx, in.kind))}));
  }
  for (const TerminalSpec &out : outputs) {
    outputTypes.push_back(out.type);
    resAttrs.push_back(builder.getDictionaryAttr({builder.getNamedAttr(
        kTerminalNameAttr, builder.getStringAttr(out.name))}));
  }
  state.addAttribute(SymbolTable::getSymbolAttrName(), builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name),
                     TypeAttr::get(builder.getFunctionType(inputTypes, outputTypes)));
  state.addAttribute(getArgAttrsAttrName(state.name), builder.getArrayAttr(argAttrs));
  state.addAttribute(getResAttrsAttrName(state.name), builder.getArrayAttr(resAttrs));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Type t : inputTypes)
    block->addArgument(t, state.location);
}

StringRef ModelOp::getInputName(unsigned i) {
  if (StringAttr name = getStringAttrOf(getArgAttrDict(i), kTerminalNameAttr))
    return name.getValue();
  return {};
}

InputKind ModelOp::getInputKind(unsigned i) {
  if (DictionaryAttr dict = getArgAttrDict(i))
    if (auto kind = dyn_cast_or_null<InputKindAttr>(dict.get(kInputKindAttr)))
      return kind.getValue();
  return InputKind::Data;
}

StringRef ModelOp::getOutputName(unsigned i) {
  if (StringAttr name = getStringAttrOf(getResultAttrDict(i), kTerminalNameAttr))
    return name.getValue();
  return {};
}

std::optional<unsigned> ModelOp::lookupInput(StringRef name) {
  for (unsigned i = 0, e = getNumInputs(); i < e; ++i)
    if (getInputName(i) == name)
      return i;
  return std::nullopt;
}

std::optional<unsigned> ModelOp::lookupOutput(StringRef name) {
  for (unsigned i = 0, e = getNumOutputs(); i < e; ++i)
    if (getOutputName(i) == name)
      return i;
  return std::nullopt;
}

OutputOp ModelOp::getOutputOp() {
  if (getBody().empty() || getBodyBlock().empty())
    return {};
  return dyn_cast<OutputOp>(getBodyBlock().getTerminator());
}

void ModelOp::setInputType(unsigned i, Type type) {
  getBodyBlock().getArgument(i).setType(type);
  syncFunctionType();
}

void ModelOp::syncFunctionType() {
  SmallVector<Type> results;
  if (OutputOp out = getOutputOp())
    results = llvm::to_vector(out.getValues().getTypes());
  else
    results = llvm::to_vector(getFunctionType().getResults());
  setFunctionType(FunctionType::get(
      getContext(), getBodyBlock().getArgumentTypes(), results));
}

void ModelOp::getAsmBlockArgumentNames(Region &region,
                                       OpAsmSetValueNameFn setNameFn) {
  if (&region != &getBody() || region.empty())
    return;
  for (BlockArgument arg : region.front().getArguments()) {
    StringRef name = getInputName(arg.getArgNumber());
    if (isPlainIdentifier(name))
      setNameFn(arg, name);
  }
}

static ParseResult parseInputKind(OpAsmParser &parser, InputKind &kind) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<InputKind> parsed = symbolizeInputKind(keyword);
  if (!parsed)
    return parser.emitError(loc, "expected a terminal role (data, param or "
                                 "const), got '")
           << keyword << "'";
  kind = *parsed;
  return success();
}

ParseResult ModelOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  MLIRContext *ctx = builder.getContext();
  (void)impl::parseOptionalVisibilityKeyword(parser, result.attributes);
  StringAttr symName;
  if (parser.parseSymbolName(symName, SymbolTable::getSymbolAttrName(),
                             result.attributes))
    return failure();

  // Inputs: `role ["name"] %ssa : type [attr-dict]`.
  SmallVector<OpAsmParser::Argument> args;
  SmallVector<Attribute> argAttrs;
  llvm::StringSet<> seen;
  auto parseInput = [&]() -> ParseResult {
    InputKind kind = InputKind::Data;
    if (parseInputKind(parser, kind))
      return failure();
    std::string explicitName;
    bool hasExplicitName = succeeded(parser.parseOptionalString(&explicitName));
    OpAsmParser::Argument arg;
    SMLoc argLoc = parser.getCurrentLocation();
    if (parser.parseArgument(arg, /*allowType=*/true, /*allowAttrs=*/true))
      return failure();
    std::string name = hasExplicitName ? explicitName
                                       : arg.ssaName.name.drop_front().str();
    if (!seen.insert(name).second)
      return parser.emitError(argLoc, "duplicate input terminal '") << name << "'";
    NamedAttrList attrs;
    if (arg.attrs)
      attrs.append(arg.attrs.getValue());
    attrs.set(kTerminalNameAttr, builder.getStringAttr(name));
    attrs.set(kInputKindAttr, InputKindAttr::get(ctx, kind));
    argAttrs.push_back(attrs.getDictionary(ctx));
    arg.attrs = {};
    args.push_back(arg);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, parseInput))
    return failure();

  // Outputs: `-> (name : type [attr-dict], ...)`.
  SmallVector<Type> resultTypes;
  SmallVector<Attribute> resAttrs;
  llvm::StringSet<> seenOut;
  auto parseOutput = [&]() -> ParseResult {
    std::string name;
    SMLoc loc = parser.getCurrentLocation();
    if (failed(parser.parseOptionalString(&name))) {
      StringRef keyword;
      if (parser.parseKeyword(&keyword))
        return failure();
      name = keyword.str();
    }
    if (!seenOut.insert(name).second)
      return parser.emitError(loc, "duplicate output terminal '") << name << "'";
    Type type;
    NamedAttrList attrs;
    if (parser.parseColonType(type) || parser.parseOptionalAttrDict(attrs))
      return failure();
    attrs.set(kTerminalNameAttr, builder.getStringAttr(name));
    resultTypes.push_back(type);
    resAttrs.push_back(attrs.getDictionary(ctx));
    return success();
  };
  if (parser.parseArrow() ||
      parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, parseOutput))
    return failure();

  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();

  SmallVector<Type> argTypes = llvm::map_to_vector(args, [](auto &a) { return a.type; });
  result.addAttribute(getFunctionTypeAttrName(result.name),
                      TypeAttr::get(builder.getFunctionType(argTypes, resultTypes)));
  result.addAttribute(getArgAttrsAttrName(result.name), builder.getArrayAttr(argAttrs));
  result.addAttribute(getResAttrsAttrName(result.name), builder.getArrayAttr(resAttrs));
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, args, /*enableNameShadowing=*/false))
    return failure();
  if (body->empty())
    return parser.emitError(parser.getCurrentLocation(), "expected a model body");
  return success();
}

/// Prints the attributes of a terminal other than its name and role.
static void printExtraTerminalAttrs(OpAsmPrinter &p, DictionaryAttr dict) {
  if (!dict)
    return;
  SmallVector<NamedAttribute> extra;
  for (NamedAttribute attr : dict)
    if (attr.getName() != kTerminalNameAttr && attr.getName() != kInputKindAttr)
      extra.push_back(attr);
  if (!extra.empty()) {
    p << ' ';
    p.printOptionalAttrDict(extra);
  }
}

void ModelOp::print(OpAsmPrinter &p) {
  p << ' ';
  if (auto vis = getSymVisibility())
    p << *vis << ' ';
  p.printSymbolName(getSymName());
  p << '(';
  Block &block = getBodyBlock();
  for (unsigned i = 0, e = getNumInputs(); i < e; ++i) {
    if (i)
      p << ", ";
    p << stringifyInputKind(getInputKind(i)) << ' ';
    StringRef name = getInputName(i);
    if (!isPlainIdentifier(name)) {
      p.printString(name);
      p << ' ';
    }
    p.printRegionArgument(block.getArgument(i));
    printExtraTerminalAttrs(p, getArgAttrDict(i));
  }
  p << ") -> (";
  for (unsigned i = 0, e = getNumOutputs(); i < e; ++i) {
    if (i)
      p << ", ";
    StringRef name = getOutputName(i);
    if (isPlainIdentifier(name) && !name.contains('$'))
      p << name;
    else
      p.printString(name);
    p << ": " << getFunctionType().getResult(i);
    printExtraTerminalAttrs(p, getResultAttrDict(i));
  }
  p << ')';
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getFunctionTypeAttrName(), getSymVisibilityAttrName(),
       getArgAttrsAttrName(), getResAttrsAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

LogicalResult ModelOp::verify() {
  if (getBody().getNumArguments() != getNumInputs())
    return emitOpError("has ") << getBody().getNumArguments()
                               << " block arguments for " << getNumInputs()
                               << " input terminals";
  llvm::StringSet<> inputs, outputs;
  for (unsigned i = 0, e = getNumInputs(); i < e; ++i) {
    StringRef name = getInputName(i);
    if (name.empty())
      return emitOpError("input #") << i << " has no terminal name";
    if (!inputs.insert(name).second)
      return emitOpError("has two input terminals named '") << name << "'";
    if (getBodyBlock().getArgument(i).getType() != getFunctionType().getInput(i))
      return emitOpError("input terminal '")
             << name << "' has type " << getBodyBlock().getArgument(i).getType()
             << " in the body but " << getFunctionType().getInput(i)
             << " in the signature";
    if (!isa<RankedTensorType>(getFunctionType().getInput(i)))
      return emitOpError("input terminal '") << name << "' must be a ranked tensor";
  }
  for (unsigned i = 0, e = getNumOutputs(); i < e; ++i) {
    StringRef name = getOutputName(i);
    if (name.empty())
      return emitOpError("output #") << i << " has no terminal name";
    if (!outputs.insert(name).second)
      return emitOpError("has two output terminals named '") << name << "'";
  }
  return success();
}

LogicalResult ModelOp::verifyRegions() {
  if (!getOutputOp())
    return emitOpError("body must end with mithril.output");
  return success();
}

//===----------------------------------------------------------------------===//
// OutputOp
//===----------------------------------------------------------------------===//

LogicalResult OutputOp::verify() {
  auto model = (*this)->getParentOfType<ModelOp>();
  if (!model)
    return emitOpError("must be inside a mithril.model");
  ArrayRef<Type> expected = model.getFunctionType().getResults();
  if (getValues().size() != expected.size())
    return emitOpError("feeds ") << getValues().size() << " values to "
                                 << expected.size() << " output terminals of @"
                                 << model.getSymName();
  for (auto [i, value] : llvm::enumerate(getValues())) {
    if (!areCompatibleTypes(value.getType(), expected[i]))
      return emitOpError("value for output terminal '")
             << model.getOutputName(i) << "' has type " << value.getType()
             << ", but the terminal is declared as " << expected[i];
  }
  return success();
}

//===----------------------------------------------------------------------===//
// InstanceOp
//===----------------------------------------------------------------------===//

Value InstanceOp::getBinding(StringRef terminal) {
  for (auto [name, value] : llvm::zip(getTerminals(), getBindings()))
    if (cast<StringAttr>(name).getValue() == terminal)
      return value;
  return {};
}

void InstanceOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  if (getNumResults() == 1 && isPlainIdentifier(getName()))
    setNameFn(getResult(0), getName());
}

ParseResult InstanceOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  std::string name;
  FlatSymbolRefAttr callee;
  if (parser.parseString(&name) ||
      parser.parseAttribute(callee, "callee", result.attributes))
    return failure();
  SmallVector<Attribute> terminals;
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  auto parseBinding = [&]() -> ParseResult {
    std::string terminal;
    if (failed(parser.parseOptionalString(&terminal))) {
      StringRef keyword;
      if (parser.parseKeyword(&keyword))
        return failure();
      terminal = keyword.str();
    }
    OpAsmParser::UnresolvedOperand operand;
    if (parser.parseEqual() || parser.parseOperand(operand))
      return failure();
    terminals.push_back(builder.getStringAttr(terminal));
    operands.push_back(operand);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, parseBinding))
    return failure();
  if (parser.parseOptionalAttrDict(result.attributes))
    return failure();
  FunctionType type;
  SMLoc typeLoc = parser.getCurrentLocation();
  if (parser.parseColonType(type))
    return failure();
  result.addAttribute("name", builder.getStringAttr(name));
  result.addAttribute("terminals", builder.getArrayAttr(terminals));
  result.addTypes(type.getResults());
  return parser.resolveOperands(operands, type.getInputs(), typeLoc,
                                result.operands);
}

void InstanceOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printString(getName());
  p << ' ';
  p.printAttributeWithoutType(getCalleeAttr());
  p << '(';
  llvm::interleaveComma(llvm::zip(getTerminals(), getBindings()), p, [&](auto it) {
    StringRef terminal = cast<StringAttr>(std::get<0>(it)).getValue();
    if (isPlainIdentifier(terminal) && !terminal.contains('$'))
      p << terminal;
    else
      p.printString(terminal);
    p << " = " << std::get<1>(it);
  });
  p << ')';
  p.printOptionalAttrDict((*this)->getAttrs(), {"name", "callee", "terminals"});
  p << " : ";
  p.printFunctionalType(getBindings().getTypes(), getResultTypes());
}

LogicalResult CollectiveWindowOp::verify() {
  MemRefType type = getWindow().getType();
  if (!type.hasStaticShape() || type.getNumElements() == 0 ||
      !type.getLayout().isIdentity() || type.getMemorySpace())
    return emitOpError("needs a static, non-empty memref of bytes with the "
                       "identity layout in the default memory space, not ")
           << type;
  if (std::optional<int64_t> rank = getRank(); rank && *rank < 0)
    return emitOpError("needs a rank of 0 or more, not ") << *rank;
  return success();
}

LogicalResult InstanceOp::verify() {
  if (getTerminals().size() != getBindings().size())
    return emitOpError("binds ") << getBindings().size() << " values to "
                                 << getTerminals().size() << " terminal names";
  return success();
}

LogicalResult InstanceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto callee = symbolTable.lookupNearestSymbolFrom<ModelOp>(*this, getCalleeAttr());
  if (!callee)
    return emitOpError("instance '") << getName() << "' refers to @"
                                     << getCallee() << ", which is not a mithril.model";
  llvm::StringSet<> bound;
  for (auto [nameAttr, value] : llvm::zip(getTerminals(), getBindings())) {
    StringRef terminal = cast<StringAttr>(nameAttr).getValue();
    std::optional<unsigned> index = callee.lookupInput(terminal);
    if (!index) {
      std::string known;
      llvm::raw_string_ostream os(known);
      for (unsigned i = 0, e = callee.getNumInputs(); i < e; ++i)
        os << (i ? ", " : "") << "'" << callee.getInputName(i) << "'";
      return emitOpError("instance '")
             << getName() << "' binds unknown terminal '" << terminal << "' of @"
             << callee.getSymName() << " (its inputs are " << known << ")";
    }
    if (!bound.insert(terminal).second)
      return emitOpError("instance '") << getName() << "' binds terminal '"
                                       << terminal << "' twice";
    Type expected = callee.getFunctionType().getInput(*index);
    if (!areCompatibleTypes(value.getType(), expected))
      return emitOpError("instance '")
             << getName() << "' binds " << value.getType() << " to terminal '"
             << terminal << "' of @" << callee.getSymName() << ", which expects "
             << expected;
  }
  if (getNumResults() != callee.getNumOutputs())
    return emitOpError("instance '") << getName() << "' has " << getNumResults()
                                     << " results but @" << callee.getSymName()
                                     << " has " << callee.getNumOutputs()
                                     << " output terminals";
  for (unsigned i = 0, e = getNumResults(); i < e; ++i)
    if (!areCompatibleTypes(getResult(i).getType(),
                            callee.getFunctionType().getResult(i)))
      return emitOpError("instance '")
             << getName() << "' result #" << i << " has type "
             << getResult(i).getType() << " but output terminal '"
             << callee.getOutputName(i) << "' of @" << callee.getSymName()
             << " is " << callee.getFunctionType().getResult(i);
  return success();
}

Value mithril::scalarConstant(OpBuilder &b, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(b, loc,
                            DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

SmallVector<int64_t> LayerNormOp::getNormalizedAxes() {
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = rank - static_cast<int64_t>(getNumAxes()); i < rank; ++i)
    axes.push_back(i);
  return axes;
}

Value LayerNormOp::buildCentered(OpBuilder &b, Location loc) {
  // Without the correction, [x, x, x] in float32 normalized to the mean's
  // rounding times 1 / sqrt(eps) (3.6e-5 for x = -1.42; torch's Welford
  // mean gives 1e-7), and so did the weight's gradient.
  Value x = getInput();
  auto axes = b.getDenseI64ArrayAttr(getNormalizedAxes());
  auto mean = [&](Value v) { return MeanOp::create(b, loc, v, axes, b.getBoolAttr(true)); };
  Value first = mean(x);
  Value residual = mean(SubtractOp::create(b, loc, x, first));
  return SubtractOp::create(b, loc, x, AddOp::create(b, loc, first, residual));
}

#define GET_OP_CLASSES
#include "mithril/Dialect/Mithril/IR/MithrilOps.cpp.inc"
