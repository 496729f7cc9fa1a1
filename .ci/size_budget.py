#!/usr/bin/env python3
"""The size budget: every product file (numbaflow/**/*.py) stays within LIMIT lines,
except the files listed below, each with the reason it is allowed to be longer (and
the size it may not grow past); each area (a subpackage of numbaflow, or the top-level
modules) within its cap in AREA_CAPS, and the product within TOTAL_CAP. Prints a table
of the areas (files, lines, share, cap; tinygrad's sz.py is the model) so that a
reviewer sees where the code grows. Exit status 1 when anything is over its budget.

    python .ci/size_budget.py          (CI runs it; tests/api/test_size_budget.py too)

Raising a cap is a decision: make it in its own commit and say why (the caps were set on
2026-11-28 at about 5% over each area's lines then).
"""
import pathlib
import sys

LIMIT = 500

# path: (the most lines it may have, why it is over LIMIT); none today
EXCEPTIONS = {}

TOP = "(top-level modules)"
# (issue 31: the top-level API base floor took core.py from fluid/ and param_init.py from nn/,
# initializer.py the 1.x classes from fluid/: their caps moved with them; kernels +200 for issue
# 28's Paddle ops nll_loss, unfold, huber/bce/kldiv_loss, prelu; executor +100 for issue 27's
# lifetime-packed memory plan and on-demand segment loops, +50 for its backups of only what is
# written before the last op that may fail, with signals held back over the rest; onnx +60 for
# issue 28's adaptive pooling to any size, prelu, unfold and relu6 mappings; kernels +100 for
# issue 28's rrelu op; kernels +360, graph +20 for issue 27 item 4's flash_attention op (CPU
# and GPU kernels) and its fuse_flash_attention pass; bench +50 for config.py and steps.py, the
# pieces cases.py and compile_time.py share, +30 for issue 32's cheaper --quick; kernels +860, nn
# +390 for issue 28's 3-D ops conv3d, pool3d, max_pool3d_with_index (CPU + CUDA + grads), F.conv3d /
# *_pool3d, nn.Conv3D / *Pool3D); kernels +185 for issue 27's NCHWc direct conv2d forward and dInput
# (conv_nchwc.py: an LLVM-IR register tile, the packing, the per-shape rule); kernels +330, graph
# +160 for issue 27 item 4's fused_gemm_epilogue op and its fuse_gemm_epilogue pass; graph +120,
# kernels +40 for the kernel cache's package stamp (numba's cross-file staleness) and the gradient operands helper
# bench +60 for issue 27 item 5's recompute_elementwise pass and models/gpt_medium_memory row
# area: the most lines it may have (numbaflow/<area>/**, or numbaflow/*.py for TOP)
AREA_CAPS = {
    "kernels": 17000, "nn": 7690, "graph": 4600, "executor": 4030, "bench": 3790,
    "fluid": 3000, TOP: 3050, "distributed": 2200, "tensor": 2300, "persistence": 1500,
    "static": 1650, "io": 1200, "optimizer": 1100, "utils": 1000, "compiler": 1000,
    "examples": 800, "profiler": 800, "vision": 1000, "hapi": 950, "onnx": 1010,
    "formats": 800, "testing": 600, "metric": 500, "incubate": 100,
}
TOTAL_CAP = 59855   # +15: the NCHWc tile shape, filter packing and the intrinsics' vector preamble each written once (were three copies / two); +40: the kernel cache keyed by the package's sources (numba's cross-file staleness); +442: issue 27 serving and training, activations kept in channel blocks: the nchwc_layout pass (graph +118), the blocked ops nchwc_pack / nchwc_unpack / fused_conv2d_nchwc, 16-lane tiles with the epilogue in registers and the dFilter tile (kernels +270); +180: issue 27 item 5 the recompute_elementwise pass (graph +120) and the models/gpt_medium_memory bench row (bench +60); +510: issue 27 item 4 fused_gemm_epilogue op (CPU + GPU, generated epilogues) + fuse_gemm_epilogue pass; +3: bench --only by whole case name; +195: issue 27 conv2d's NCHWc direct forward and stride-1 input gradient (conv_nchwc.py); +10: issue 31 compiled_program.last_plan (tests read it privately before); +20: issue 31 no circle between files (gpu_compile.py, kernels/optim/multi_update.py, _version.py: their headers); +1250: issue 28 the 3-D ops conv3d / pool3d / max_pool3d_with_index with F and nn layers; +80: bench config.py / steps.py (issue 31 circle), --quick (issue 32); +500: issue 27 item 4 flash_attention op + fuse_flash_attention pass; +90: conv2d's GEMMs through numpy's OpenBLAS (kernels/math/blas_numpy.py, issue 27); +170: issue 29 the rnn op over the thread budget (batch-row blocks, vectorized fastmath gates), cond outputs of run-time shape, GPU tensor arrays; +150: issue 28 Paddle's docstring examples (Variable methods, cross_entropy weight / label_smoothing, maxout, randint, 1-D return_mask); +50: split-K products (the fc weight gradients); +50: the supervisor's abort deadline, rnn's products over the thread budget; +150: bench dp rows of ResNet-20 / GPT d512 (issue 27); +450: issue 29 BeamSearchDecoder + dynamic_decode, bench rows models/lstm and control/while_loop; +140: --quick serial baselines (issue 32), F.rrelu; +160: issue 28 onnx mappings, rrelu; +550: issue 28 Paddle ops huber/bce/kldiv/nll_loss, prelu, unfold (kernels + F + layers)
# (+100: formats 700 -> 800, issue 29 multi-block ProgramDesc and Paddle's XShape of gradient ops)
# +250: issue 29 ONNX If / Loop / tensor arrays as sequences (onnx/_control_flow.py: SSA renaming)


def product_files(root):
    return sorted(p for p in (root / "numbaflow").rglob("*.py") if "__pycache__" not in p.parts)


def area_of(rel):
    """numbaflow/kernels/x.py -> kernels; numbaflow/config.py -> TOP."""
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else TOP


def check(root, areas=None):
    """(total product lines, [problems]); `areas` (a dict) gets {area: [files, lines]}."""
    total, problems = 0, []
    areas = {} if areas is None else areas
    for path in product_files(root):
        rel = path.relative_to(root).as_posix()
        n = sum(1 for _ in path.open(encoding="utf-8"))
        total += n
        counts = areas.setdefault(area_of(rel), [0, 0])
        counts[0] += 1
        counts[1] += n
        limit, _ = EXCEPTIONS.get(rel, (LIMIT, ""))
        if n > limit:
            problems.append(f"{rel}: {n} lines, over its budget of {limit}"
                            + ("" if rel in EXCEPTIONS else
                               f" (split it by what it holds, or list it in EXCEPTIONS in "
                               f".ci/size_budget.py with a reason)"))
    for rel in EXCEPTIONS:
        if not (root / rel).exists():
            problems.append(f"{rel}: listed in EXCEPTIONS but gone; remove its entry")
    for area, (_, lines) in sorted(areas.items()):
        cap = AREA_CAPS.get(area)
        if cap is None:
            problems.append(f"numbaflow/{area}: a new area with no cap; add it to AREA_CAPS in "
                            f".ci/size_budget.py")
        elif lines > cap:
            problems.append(f"numbaflow/{area}: {lines} lines, over its cap of {cap} (shrink it, "
                            f"or raise the cap in .ci/size_budget.py in a commit that says why)")
    if total > TOTAL_CAP:
        problems.append(f"numbaflow: {total} product lines, over TOTAL_CAP {TOTAL_CAP}")
    return total, problems


def table(areas, total):
    """The areas, largest first: files, lines, share of the product, cap."""
    rows = [f"{'area':<22}{'files':>6}{'lines':>8}{'share':>7}{'cap':>8}"]
    for area, (files, lines) in sorted(areas.items(), key=lambda kv: -kv[1][1]):
        rows.append(f"{area:<22}{files:>6}{lines:>8}{lines / max(total, 1):>7.0%}"
                    f"{AREA_CAPS.get(area, '-'):>8}")
    return "\n".join(rows)


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    areas = {}
    total, problems = check(root, areas)
    print(table(areas, total))
    files = len(product_files(root))
    over = sum(1 for p in product_files(root)
               if sum(1 for _ in p.open(encoding="utf-8")) > LIMIT)
    print(f"size budget: {total} product lines in {files} files (cap {TOTAL_CAP}); {over} over "
          f"{LIMIT} lines (listed: {len(EXCEPTIONS)})")
    for p in problems:
        print(f"size budget: FAILED: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
