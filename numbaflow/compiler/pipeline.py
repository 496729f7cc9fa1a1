"""The pass table: where a BuildStrategy flag meets its pass, in one row.

`PIPELINE` is ordered (Paddle's order); each row names the flag that turns its pass on
(with the flag's default and help: `BuildStrategy` takes its pass flags and their docs
from here), the pass class, and when it applies (how many devices: some rewrites are
only correct on one; training or inference programs: an optimizer fusion has nothing to
do in a program without optimizer ops). The data-parallel rewrite is the last row. A new pass is its file
under `graph/passes/` plus one row here (CONTRIBUTING shows it; tests/graph/test_pipeline.py
runs that example). The rows on by default also rewrite a plain Program's plans
(`plain_program_passes`, installed in the executor: Executor.run without a CompiledProgram).
"""
from dataclasses import dataclass
from types import SimpleNamespace

from ..distributed.rewrite import MultiDevicesPass
from ..executor.lowering import install_plain_rewrites
from ..graph.nodes import FORWARD
from ..graph.passes import apply_passes
from ..graph.passes.auto_fusion import AutoFusion
from ..graph.passes.fuse_conv_epilogue import FoldConvBatchNorm, FuseConvBias
from ..graph.passes.nchwc_layout import NchwcLayout
from ..graph.passes.fuse_elewise_add_act import FuseElewiseAddAct
from ..graph.passes.fuse_flash_attention import FuseFlashAttention
from ..graph.passes.fuse_gemm_epilogue import FuseGemmEpilogue
from ..graph.passes.fuse_optimizer_ops import FuseAllOptimizerOps
from ..graph.passes.fuse_relu_depthwise_conv import FuseReluDepthwiseConv
from ..graph.passes.fuse_sgd_gemm import FuseSgdIntoGemm
from ..graph.passes.fuse_softmax_mask import FuseSoftmaxMask
from ..graph.passes.recompute_elementwise import RecomputeElementwise
from ..graph.passes.sync_batch_norm import SyncBatchNormPass

PROGRAMS = ("any", "training", "inference")


@dataclass(frozen=True)
class Context:
    """What a compile knows besides the strategy: the devices over all ranks, whether
    it is data parallel (and its loss), the device kind, the names no pass may remove,
    and whether the program trains (`is_training`: it has backward or optimizer ops)."""
    devices: int = 1
    data_parallel: bool = False
    loss_name: str = None
    device: str = "cpu"
    protected: frozenset = frozenset()
    training: bool = True


def is_training(program):
    """True when `program` has backward or optimizer ops; False for an inference program
    (forward ops only, as `clone(for_test=True)` or `load_inference_model` make)."""
    return any(op.role != FORWARD for block in program.blocks for op in block.ops)


@dataclass(frozen=True)
class Row:
    """One pass in the pipeline.

    flag: the BuildStrategy flag that turns it on (None: only `also_on` flags or
        `always_when` do); default and doc: that flag's default and help.
    also_on: other flags that turn it on too.
    devices: "any", or "one" (wrong with several devices, e.g. it updates a weight before
        the gradients are summed).
    programs: "any", "training" (programs with backward or optimizer ops only) or
        "inference" (forward-only programs only).
    data_parallel: the row runs for with_data_parallel programs only, always.
    options: (strategy, context) -> the pass's own constructor arguments.
    stage: the graph dump written after this row's stage (debug_graphviz_path).
    """
    flag: str
    pass_class: type
    doc: str = ""
    default: bool = False
    also_on: tuple = ()
    devices: str = "any"
    data_parallel: bool = False
    options: object = None
    stage: str = "fused"
    programs: str = "any"

    def __post_init__(self):
        if self.programs not in PROGRAMS:
            raise ValueError(f"Row({self.pass_class.__name__}): programs must be one of "
                             f"{PROGRAMS}, got {self.programs!r}")
        if self.devices not in ("any", "one"):
            raise ValueError(f"Row({self.pass_class.__name__}): devices must be 'any' or "
                             f"'one', got {self.devices!r}")

    def applies(self, bs, ctx):
        """True when this row's pass runs under strategy `bs` in context `ctx`."""
        if self.devices == "one" and ctx.devices > 1:
            return False
        if self.programs != "any" and (self.programs == "training") != ctx.training:
            return False
        if self.data_parallel:
            return ctx.data_parallel
        flags = ((self.flag,) if self.flag else ()) + self.also_on
        return any(getattr(bs, f) for f in flags)

    def make(self, bs, ctx):
        extra = self.options(bs, ctx) if self.options is not None else {}
        return self.pass_class(protected=ctx.protected, device=ctx.device, **extra)


def _multi_devices_options(bs, ctx):
    return dict(loss_name=ctx.loss_name, fuse_all_reduce=bs.fuse_all_reduce_ops,
                bucket_bytes=int(bs.fuse_grad_size_in_MB * (1 << 20)), num_devices=ctx.devices)


PIPELINE = [
    # (any program: a forward-only one computes batch statistics too, unless is_test)
    Row("sync_batch_norm", SyncBatchNormPass,
        "batch_norm statistics (and their gradients) span every place and rank."),
    Row("fuse_relu_depthwise_conv", FuseReluDepthwiseConv,
        "run `depthwise_conv2d(relu(x))` and its gradient as one kernel."),
    # before the elementwise fusions, which would take the conv's bias add and relu
    Row("fold_conv_batch_norm", FoldConvBatchNorm,
        "fold an is_test batch_norm (and the bias and relu around it) into the conv's "
        "kernel, from its variables at run time.", default=True, programs="inference"),
    Row("fuse_conv_bias", FuseConvBias,
        "add a conv2d's bias (and apply a following relu) in the conv's kernel, and take "
        "the bias gradient in its backward pass.", default=True),
    # after the conv epilogues (it takes fused_conv2d in); CPU only, refused on a GPU
    Row("nchwc_layout", NchwcLayout,
        "keep the activations of an inference program's 3x3 / 1x1 convolutions (and the "
        "relu and residual adds between them) in channel blocks: packed once, never "
        "repacked per layer (CPU).", default=True, programs="inference"),
    # before fuse_softmax_mask, whose softmax chain it takes in with the two products; off
    # by default: it saves memory (the GPT d512 b16's peak 11% lower) but recomputes the
    # probabilities, 5-7% slower per step on the bench GPTs
    Row("fuse_flash_attention", FuseFlashAttention,
        "run attention's `matmul(softmax(scale(q k^T) + mask), v)` and its gradients as "
        "one blocked kernel each, never keeping the [.., Tq, Tk] scores (less memory, "
        "the backward recomputes them)."),
    Row("fuse_softmax_mask", FuseSoftmaxMask,
        "run attention's `softmax(scale(x) + mask)` and its gradient as one kernel "
        "each.", default=True),
    # before the elementwise fusion, which would take the fc's bias add and activation;
    # off by default: no measurable gain on the bench GPT (A/B 0.93-1.02x at 1 thread,
    # 0.92-1.07x at 2): the epilogue's maths costs what the separate ops cost
    Row("fuse_gemm_epilogue", FuseGemmEpilogue,
        "add an fc's bias and apply its gelu / relu in the GEMM's kernel, block by block, "
        "and take the bias and activation gradients in one pass before the backward "
        "GEMMs."),
    Row("fuse_elewise_add_act_ops", FuseElewiseAddAct,
        "fuse `act(x + y)` and `x + act(y)` (relu, tanh, sigmoid, gelu, scale) and their "
        "gradients into one kernel."),
    # before the optimizer fusion: the updates it folds are no longer separate ops; with
    # several devices each weight gradient must be summed before its update
    Row(None, FuseSgdIntoGemm, also_on=("fuse_all_optimizer_ops", "enable_auto_fusion"),
        devices="one", programs="training"),
    Row("fuse_all_optimizer_ops", FuseAllOptimizerOps,
        "one fused SGD / Momentum / Adam kernel per optimizer type and dtype for all "
        "parameters (off in Reduce mode).", programs="training"),
    Row("enable_auto_fusion", AutoFusion,
        "fuse every connected group of elementwise ops of one shape (plus a producing "
        "matmul and a consuming reduction or softmax) into one generated kernel."),
    # after the fusions, which may take the elementwise ops in; memory for a recompute
    Row("recompute_elementwise", RecomputeElementwise,
        "recompute a cheap elementwise forward result (GELU, scale, cast, ...) right before "
        "its first backward reader instead of keeping it alive from the forward (less "
        "activation memory).", default=True, programs="training"),
    Row(None, MultiDevicesPass, data_parallel=True, options=_multi_devices_options,
        stage="multi_devices"),
]


def flags():
    """{flag: (default, doc)} of the rows' BuildStrategy flags, in pipeline order."""
    return {r.flag: (r.default, r.doc) for r in PIPELINE if r.flag}


def passes_for(bs, ctx):
    """[(stage, pass)] that the (effective) strategy `bs` runs in context `ctx`, in order."""
    return [(r.stage, r.make(bs, ctx)) for r in PIPELINE if r.applies(bs, ctx)]


def run_pipeline(program, bs, ctx, dump=None):
    """Apply the passes of `bs` to `program` in place (the IR is verified after each
    change); `dump(stage)` is called after each stage ("fused", "multi_devices").
    Returns the passes run, each with its `changed` and `refusals`."""
    done = []
    chosen = passes_for(bs, ctx)
    for stage in ("fused", "multi_devices"):
        done += apply_passes(program, [p for s, p in chosen if s == stage])
        if dump is not None:
            dump(stage)
    return done


def plain_program_passes(program, protected, device):
    """The passes a plain Program's plans apply to their op list (Executor.run without a
    CompiledProgram, the program unchanged): the rows on by default, for one device."""
    defaults = SimpleNamespace(**{f: d for f, (d, _) in flags().items()})
    ctx = Context(device=device, protected=frozenset(protected), training=is_training(program))
    return [p for stage, p in passes_for(defaults, ctx) if stage == "fused"]


install_plain_rewrites(plain_program_passes)
