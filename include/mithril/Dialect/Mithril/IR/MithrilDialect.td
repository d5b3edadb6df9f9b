//===- MithrilDialect.td - The mithril dialect --------------*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_MITHRILDIALECT_TD
#define MITHRIL_DIALECT_MITHRIL_IR_MITHRILDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Mithril_Dialect : Dialect {
  let name = "mithril";
  let cppNamespace = "::mithril";
  let summary = "Logical machine-learning models: hierarchical models joined at named terminals";
  let description = [{
    The `mithril` dialect represents Mithril *logical models*. A model
    (`mithril.model`) is a symbol with named input terminals (each one a
    trainable parameter, a data input or a compile-time constant) and named
    output terminals. Models compose: `mithril.instance` instantiates another
    model and binds its terminals by name. Parameters of an instantiated
    model that the instance leaves unbound belong to the instance and are
    named by instance path (`block1.conv.weight`) once the hierarchy is
    flattened.

    The primitive ops are value-semantic tensor operations with numpy
    broadcasting, shape and type inference and verifiers. They lower to
    linalg on tensors (`convert-mithril-to-linalg`).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
}

// The role an input terminal plays in a model.
def Mithril_InputKind : I32EnumAttr<"InputKind", "role of a model input terminal", [
    I32EnumAttrCase<"Data", 0, "data">,
    I32EnumAttrCase<"Param", 1, "param">,
    I32EnumAttrCase<"Const", 2, "const">
  ]> {
  let cppNamespace = "::mithril";
  let genSpecializedAttr = 0;
}
def Mithril_InputKindAttr : EnumAttr<Mithril_Dialect, Mithril_InputKind, "input_kind"> {
  let assemblyFormat = "`<` $value `>`";
}
def Mithril_InputKindArrayAttr : TypedArrayAttrBase<Mithril_InputKindAttr, "input kinds">;

#endif // MITHRIL_DIALECT_MITHRIL_IR_MITHRILDIALECT_TD
