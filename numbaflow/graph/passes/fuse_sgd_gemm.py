"""fuse_sgd_into_gemm: fold an fc layer's SGD update into its weight-gradient GEMM.

`mul_grad(X, W, dOut) -> (dX, dW)` followed later by `sgd(W, dW, lr) -> W` becomes one
`mul_grad_sgd(X, W, dOut, lr) -> (dX, W)` (kernels/fused/gemm_sgd.py) at the mul_grad's place:
dW is never materialised. On with `fuse_all_optimizer_ops` or `enable_auto_fusion`, on
CPU, and not in a data-parallel program over several devices (there dW must first be
summed over the devices; the multi-device rewrite comes after the fusion passes).

It is exact only when moving the update earlier changes nothing else, so a candidate is
refused, with the reason, when: dW has another reader or is fetched / fed; the sgd does
not update W in place; an op between the two reads or writes W, or writes the learning
rate or dW's inputs; the learning rate is produced after the mul_grad; the dtypes are
not float32 / float64; or the device is a GPU (no BLAS with beta = 1 there yet).
"""
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite


@register_pass
class FuseSgdIntoGemm(Rewrite):
    name = "fuse_sgd_into_gemm"
    anchors = ("mul_grad",)

    def what(self, mg):
        return f"mul_grad -> {mg.output_arg_names}"

    def match(self, block, mg):
        """The fused op in place of mul_grad `mg` and the sgd of its weight gradient;
        Refused when that would not be exact."""
        dws = mg.outputs.get("Y@GRAD") or []
        if not dws:
            return None
        dw, w = dws[0], mg.inputs["Y"][0]
        if self.device != "cpu":
            raise Refused("on GPU there is no BLAS call with beta = 1 yet")
        readers = block.consumers(dw)
        if len(readers) != 1 or readers[0].type != "sgd":
            raise Refused(f"{dw.name} is read by {[o.type for o in readers]}, not "
                          f"by one sgd op")
        sgd = readers[0]
        if sgd.inputs["Param"][0] is not w or sgd.outputs["ParamOut"][0] is not w:
            raise Refused(f"the sgd reading {dw.name} does not update {w.name} in place")
        if dw.name in self.protected or w.dtype not in ("float32", "float64") or \
                any(v.dtype != w.dtype for v in mg.input_vars()):
            raise Refused(f"{dw.name} is fetched or fed, or the dtypes are not "
                          f"one float32 / float64")
        lr = sgd.inputs["LearningRate"][0]
        start, end = block.index(mg), block.index(sgd)
        made = block.producers(lr)
        if any(block.index(p) > start for p in made):
            raise Refused(f"the learning rate {lr.name} is computed after the gradient")
        watched = {w, lr, *mg.input_vars()}
        for between in block.ops[start + 1:end]:
            if set(between.output_vars()) & watched or w in between.input_vars():
                raise Refused(f"op {between.type} between the gradient and the update uses "
                              f"{w.name} or writes what the update reads")
        outputs = {"ParamOut": [w]}
        if mg.outputs.get("X@GRAD"):
            outputs["X@GRAD"] = mg.outputs["X@GRAD"]
        fused = block.make_op(
            "mul_grad_sgd",
            {"X": mg.inputs["X"], "Y": [w], "Out@GRAD": mg.inputs["Out@GRAD"],
             "LearningRate": [lr]},
            outputs, {"x_num_col_dims": mg.attrs["x_num_col_dims"],
                      "y_num_col_dims": mg.attrs["y_num_col_dims"]})
        fused.role = sgd.role
        return Replacement([mg, sgd], [fused], [mg])
