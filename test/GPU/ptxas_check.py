# Splits mithril-run --emit=ptx output into its kernel modules and assembles
# each with ptxas for the given architecture; prints one line per module.
#   ptxas_check.py PTXAS ARCH FILE.ptx
import os
import subprocess
import sys
import tempfile

ptxas, arch, path = sys.argv[1:4]
modules, current = [], None
for line in open(path):
    if line.startswith("// kernel module @"):
        current = [line.split("@")[1].split()[0], []]
        modules.append(current)
    elif current is not None:
        current[1].append(line)
assert modules, "no kernel modules in " + path
with tempfile.TemporaryDirectory() as d:
    for name, lines in modules:
        src = os.path.join(d, name + ".ptx")
        with open(src, "w") as f:
            f.writelines(lines)
        r = subprocess.run([ptxas, f"-arch={arch}", src, "-o", os.path.join(d, name + ".cubin")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ptxas rejected {name} for {arch}:\n{r.stderr}")
        print(f"{name}: assembled for {arch}")
print(f"{len(modules)} kernel modules assembled")
