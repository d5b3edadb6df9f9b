# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Writes the PTX held by the gpu.binary ops of an MLIR file (from
mithril-gpu-pipeline{format=isa}) to stdout, one module after another."""

import re
import sys

text = open(sys.argv[1]).read()
objects = re.findall(r'#gpu\.object<#nvvm\.target<[^>]*>(?:, properties = \{[^}]*\})?, '
                     r'(?:assembly = )?"((?:[^"\\]|\\.)*)"', text)
if not objects:
    sys.exit(f"{sys.argv[1]}: no gpu.object with PTX")
for obj in objects:
    sys.stdout.write(re.sub(r'\\([0-9A-Fa-f]{2})', lambda m: chr(int(m.group(1), 16)), obj))
