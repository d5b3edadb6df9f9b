// Malformed shape specifications are reported, not guessed at.
// RUN: not mithril-opt %s -mithril-infer-shapes="shapes=input:4xbad" 2>&1 | FileCheck %s
// CHECK: mithril-infer-shapes: malformed shape 'input:4xbad' (expected name:DxD, e.g. input:4x8 or input:?x8)
mithril.model @M(data %input: tensor<?xf32>) -> (y: tensor<?xf32>) {
  mithril.output %input : tensor<?xf32>
}
