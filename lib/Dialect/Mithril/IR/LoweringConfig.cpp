//===- LoweringConfig.cpp - per-op code generation choices ----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/LoweringConfig.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mithril;

Attribute LoweringConfigAttr::parse(AsmParser &parser, Type) {
  StringRef kernelName;
  SMLoc kernelLoc;
  if (parser.parseLess() || parser.parseKeyword("kernel") || parser.parseEqual() ||
      (kernelLoc = parser.getCurrentLocation(), parser.parseKeyword(&kernelName)))
    return {};
  std::optional<CpuKernel> kernel = symbolizeCpuKernel(kernelName);
  if (!kernel) {
    parser.emitError(kernelLoc, "unknown kernel '") << kernelName << "'";
    return {};
  }
  SmallVector<int64_t> registerTile, cacheTile, threads, window;
  bool whole = false;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef field;
    SMLoc fieldLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&field) || parser.parseEqual())
      return {};
    if (field == "whole") {
      if (succeeded(parser.parseOptionalKeyword("true")))
        whole = true;
      else if (parser.parseKeyword("false"))
        return {};
      continue;
    }
    SmallVector<int64_t> *list = llvm::StringSwitch<SmallVector<int64_t> *>(field)
                                     .Case("register_tile", &registerTile)
                                     .Case("cache_tile", &cacheTile)
                                     .Case("threads", &threads)
                                     .Case("window", &window)
                                     .Default(nullptr);
    if (!list) {
      parser.emitError(fieldLoc, "unknown field '")
          << field << "' (expected register_tile, cache_tile, threads, window or whole)";
      return {};
    }
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                       [&]() { return parser.parseInteger(list->emplace_back()); }))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(kernelLoc); }, parser.getContext(), *kernel,
                    ArrayRef<int64_t>(registerTile), ArrayRef<int64_t>(cacheTile),
                    ArrayRef<int64_t>(threads), ArrayRef<int64_t>(window), whole);
}

void LoweringConfigAttr::print(AsmPrinter &printer) const {
  printer << "<kernel = " << stringifyCpuKernel(getKernel());
  auto list = [&](StringRef name, ArrayRef<int64_t> values) {
    if (values.empty())
      return;
    printer << ", " << name << " = [";
    llvm::interleaveComma(values, printer);
    printer << "]";
  };
  list("register_tile", getRegisterTile());
  list("cache_tile", getCacheTile());
  list("threads", getThreads());
  list("window", getWindow());
  if (getWhole())
    printer << ", whole = true";
  printer << ">";
}

LogicalResult LoweringConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError, CpuKernel,
                                         ArrayRef<int64_t> registerTile,
                                         ArrayRef<int64_t> cacheTile, ArrayRef<int64_t> threads,
                                         ArrayRef<int64_t> window, bool) {
  if (llvm::any_of(registerTile, [](int64_t size) { return size < 0; }))
    return emitError() << "register_tile sizes must be 0 (whole loop) or positive";
  if (!cacheTile.empty() &&
      (cacheTile.size() != 3 || llvm::any_of(cacheTile, [](int64_t size) { return size <= 0; })))
    return emitError() << "cache_tile must be 3 positive sizes (rows, columns, reduction)";
  if (!threads.empty() && (threads.size() != 2 || threads[0] < 0 || threads[1] <= 0))
    return emitError() << "threads must be [loop, chunk] with a chunk above 0";
  if (llvm::any_of(window, [](int64_t loop) { return loop < 0; }))
    return emitError() << "window loops must not be negative";
  return success();
}

LoweringConfigAttr LoweringConfigAttr::withRegisterTile(ArrayRef<int64_t> sizes) const {
  return get(getContext(), getKernel(), sizes, getCacheTile(), getThreads(), getWindow(),
             getWhole());
}

LoweringConfigAttr LoweringConfigAttr::withCacheTile(ArrayRef<int64_t> sizes) const {
  return get(getContext(), getKernel(), getRegisterTile(), sizes, getThreads(), getWindow(),
             getWhole());
}

LoweringConfigAttr LoweringConfigAttr::withThreads(int64_t loop, int64_t chunk) const {
  return get(getContext(), getKernel(), getRegisterTile(), getCacheTile(), {loop, chunk},
             getWindow(), getWhole());
}

LoweringConfigAttr LoweringConfigAttr::withWindow(ArrayRef<int64_t> loops) const {
  return get(getContext(), getKernel(), getRegisterTile(), getCacheTile(), getThreads(), loops,
             getWhole());
}

LoweringConfigAttr LoweringConfigAttr::asWhole() const {
  return get(getContext(), getKernel(), getRegisterTile(), getCacheTile(), getThreads(),
             getWindow(), true);
}

LoweringConfigAttr mithril::getLoweringConfig(Operation *op) {
  return op->getAttrOfType<LoweringConfigAttr>(LoweringConfigAttr::opAttrName);
}

CpuKernel mithril::getCpuKernel(Operation *op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  return config ? config.getKernel() : CpuKernel::Default;
}

void mithril::setLoweringConfig(Operation *op, LoweringConfigAttr config) {
  op->setAttr(LoweringConfigAttr::opAttrName, config);
}

void mithril::setCpuKernel(Operation *op, CpuKernel kernel) {
  setLoweringConfig(op, LoweringConfigAttr::get(op->getContext(), kernel));
}

SmallVector<AffineMap> mithril::tileConvMaps(MLIRContext *ctx) {
  AffineExpr n, oh, ow, f, kh, kw, cg, g;
  bindDims(ctx, n, oh, ow, f, kh, kw, cg, g);
  return {AffineMap::get(8, 0, {n, oh + kh, ow + kw, cg, g}, ctx),
          AffineMap::get(8, 0, {kh, kw, cg, f, g}, ctx), AffineMap::get(8, 0, {n, oh, ow, f}, ctx)};
}
