//===- ExposeSizes.cpp - data-dependent sizes as outputs ------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// Compiled code has every buffer's size before it runs; an output whose size
// depends on the data (mithril.unique's values) is computed at its largest
// size, and its size goes out beside it as `<name>:size`.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILEXPOSESIZES
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {
struct ExposeSizesPass : public mithril::impl::MithrilExposeSizesBase<ExposeSizesPass> {
  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      OutputOp output = model.getOutputOp();
      if (!output)
        continue;
      SmallVector<Value> values(output.getValues());
      SmallVector<Attribute> names;
      if (ArrayAttr attrs = model.getResAttrsAttr())
        names.append(attrs.begin(), attrs.end());
      names.resize(values.size(), DictionaryAttr::get(&getContext()));
      size_t before = values.size();
      OpBuilder b(output);
      for (size_t i = 0; i < before; ++i) {
        auto unique = values[i].getDefiningOp<UniqueOp>();
        if (!unique || values[i] != unique.getValues())
          continue;
        auto dict = dyn_cast<DictionaryAttr>(names[i]);
        auto name = dict ? dict.getAs<StringAttr>(kTerminalNameAttr) : StringAttr();
        std::string sized = (name ? name.getValue().str() : std::to_string(i)) + ":size";
        values.push_back(unique.getCount());
        names.push_back(
            b.getDictionaryAttr({b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(sized))}));
      }
      if (values.size() == before)
        continue;
      output.getValuesMutable().assign(values);
      model.setResAttrsAttr(b.getArrayAttr(names));
      model.syncFunctionType();
    }
  }
};
} // namespace
