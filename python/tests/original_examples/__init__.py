# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Model definitions from the original Mithril's example programs
(github.com/synnada-ai/mithril, Copyright 2022 Synnada, Inc., Apache License
2.0), as users wrote them: each module follows one example, unchanged but for
the backend line and what it says it leaves out. test_original_examples.py
builds, compiles and checks them against oracles."""
