"""The hot loops' instruction counts in the compiled PTX of the GPU kernels
(`python -m numbaflow.gpu_check --counts`; BENCHMARKS.md's GPU section): instructions per
element of the elementwise template, FMAs per shared load of the GEMM."""
import re

import numpy as np

from .gpu_compile import assemble, compile_ptx, ptxas_path
from .gpu_trace import traced_device

_SKIP = re.compile(r"^(\.|//|\{|\}|\$|@?%?$)")


def _instructions(lines):
    return [ln.strip() for ln in lines
            if ln.strip() and not _SKIP.match(ln.strip()) and not ln.strip().endswith(":")]


def loops(ptx):
    """Each loop of a PTX function as (label, its instruction lines): the lines from a
    label to the last branch back to it."""
    lines = ptx.splitlines()
    where = {ln.strip()[:-1]: i for i, ln in enumerate(lines) if re.match(r"^\$\S+:$", ln.strip())}
    found = {}
    for i, ln in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$\S+);", ln)
        if m and m.group(1) in where and where[m.group(1)] < i:
            found[m.group(1)] = (where[m.group(1)], i)
    return [(lab, _instructions(lines[a:b + 1])) for lab, (a, b) in found.items()]


def elementwise_counts(ptx):
    """(instructions per element, the loop) of the innermost loop that stores to global
    memory: the grid-stride body of the elementwise template."""
    best = None
    for lab, ins in loops(ptx):
        stores = [x for x in ins if x.startswith("st.global")]
        if stores and (best is None or len(ins) < len(best[1])):
            best = (lab, ins)
    if best is None:
        raise RuntimeError("no global-store loop in the kernel")
    per = max(1, len([x for x in best[1] if x.startswith("st.global")]))
    return len(best[1]) / per, best[1]


def gemm_counts(ptx):
    """(FMAs, shared loads, instructions) in the loop over K slabs of the GEMM kernel."""
    best = None
    for lab, ins in loops(ptx):
        if any(x.startswith("bar.sync") for x in ins):
            if best is None or len(ins) < len(best):
                best = ins
    fma = sum(1 for x in best if x.startswith("fma."))
    lds = sum(1 for x in best if x.startswith("ld.shared"))
    return fma, lds, len(best)


def _ptxas_summary(ptx, cc):
    """'; ptxas: N registers, S bytes spilled' from ptxas -v (empty without ptxas)."""
    if ptxas_path() is None:
        return ""
    info = assemble(ptx, cc, verbose=True)
    regs = re.search(r"Used (\d+) registers", info)
    spill = re.search(r"(\d+) bytes spill stores", info)
    return (f"; ptxas: {regs.group(1) if regs else '?'} registers, "
            f"{spill.group(1) if spill else '?'} bytes spilled")


def hot_loop_report(cc=(9, 0), log=print):
    """Instruction counts of the SPEC §7 GPU row (relu(x + bias), 4096x4096 f32: same-shape
    and last-axis-broadcast operands) and the MLP's GEMM, from the compiled PTX."""
    from .kernels import run_op
    rows = []
    cases = [("x + bias, (4096,4096)+(4096,) f32", "elementwise_add",
              {"X": np.zeros((4096, 4096), np.float32), "Y": np.zeros(4096, np.float32)}),
             ("x + y, same shape (4096,4096) f32", "elementwise_add",
              {"X": np.zeros((4096, 4096), np.float32), "Y": np.zeros((4096, 4096), np.float32)}),
             ("relu(x), (4096,4096) f32", "relu", {"X": np.zeros((4096, 4096), np.float32)})]
    for label, op, ins in cases:
        launches = []
        with traced_device(launches):
            run_op(op, ins, {}, device="gpu")
        k, sig = launches[0]
        per, _ = elementwise_counts(compile_ptx(k, sig, cc))
        rows.append((label, f"{per:.0f} PTX instructions per element"))
    for label, x, y in (("GEMM (128,784)@(784,512) f32 (64x64 tiles)", (128, 784), (784, 512)),
                        ("GEMM (4096,4096)@(4096,4096) f32 (128x128 tiles)", (4096, 4096),
                         (4096, 4096))):
        launches = []
        with traced_device(launches):
            run_op("mul", {"X": np.zeros(x, np.float32), "Y": np.zeros(y, np.float32)}, {},
                   device="gpu")
        k, sig = launches[0]
        ptx = compile_ptx(k, sig, cc)
        fma, lds, n = gemm_counts(ptx)
        rows.append((label, f"per K slab: {fma} FMA, {lds} shared loads "
                            f"({fma / lds:.1f} FMA per load), {n} instructions "
                            f"({100 * fma / n:.0f}% FMA){_ptxas_summary(ptx, cc)}"))
    for label, text in rows:
        log(f"  {label}: {text}")
    return rows
