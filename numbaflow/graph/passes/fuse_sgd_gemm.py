"""fuse_sgd_into_gemm: fold an fc layer's SGD update into its weight-gradient GEMM.

`mul_grad(X, W, dOut) -> (dX, dW)` followed later by `sgd(W, dW, lr) -> W` becomes one
`mul_grad_sgd(X, W, dOut, lr) -> (dX, W)` (kernels/gemm_sgd.py) at the mul_grad's place:
dW is never materialised. On with `fuse_all_optimizer_ops` or `enable_auto_fusion`, on
CPU, and not in a data-parallel program over several devices (there dW must first be
summed over the devices; the multi-device rewrite comes after the fusion passes).

It is exact only when moving the update earlier changes nothing else, so a candidate is
refused, with the reason, when: dW has another reader or is fetched / fed; the sgd does
not update W in place; an op between the two reads or writes W, or writes the learning
rate or dW's inputs; the learning rate is produced after the mul_grad; the dtypes are
not float32 / float64; or the device is a GPU (no BLAS with beta = 1 there yet).
"""
from . import Pass, register_pass


@register_pass
class FuseSgdIntoGemm(Pass):
    name = "fuse_sgd_into_gemm"

    def run(self, program):
        block = program.global_block()
        changed = False
        for op in [o for o in block.ops if o.type == "mul_grad"]:
            if self._fold(block, op):
                changed = True
        return changed

    def _fold(self, block, mg):
        """Fold the sgd of mul_grad `mg`'s weight gradient into it; False (with the
        reason in `refusals`) when that would not be exact."""
        what = f"mul_grad -> {mg.output_arg_names}"
        dws = mg.outputs.get("Y@GRAD") or []
        if not dws:
            return False
        dw, w = dws[0], mg.inputs["Y"][0]
        if self.device != "cpu":
            return self._no(what, "on GPU there is no BLAS call with beta = 1 yet")
        readers = block.consumers(dw)
        if len(readers) != 1 or readers[0].type != "sgd":
            return self._no(what, f"{dw.name} is read by {[o.type for o in readers]}, not "
                                     f"by one sgd op")
        sgd = readers[0]
        if sgd.inputs["Param"][0] is not w or sgd.outputs["ParamOut"][0] is not w:
            return self._no(what, f"the sgd reading {dw.name} does not update {w.name} in "
                                     f"place")
        if dw.name in self.protected or w.dtype not in ("float32", "float64") or \
                any(v.dtype != w.dtype for v in mg.input_vars()):
            return self._no(what, f"{dw.name} is fetched or fed, or the dtypes are not "
                                     f"one float32 / float64")
        lr = sgd.inputs["LearningRate"][0]
        start, end = block.index(mg), block.index(sgd)
        made = block.producers(lr)
        if any(block.index(p) > start for p in made):
            return self._no(what, f"the learning rate {lr.name} is computed after the "
                                     f"gradient")
        watched = {w, lr, *mg.input_vars()}
        for between in block.ops[start + 1:end]:
            if set(between.output_vars()) & watched or w in between.input_vars():
                return self._no(what, f"op {between.type} between the gradient and the "
                                         f"update uses {w.name} or writes what the update "
                                         f"reads")
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
        if not self.pays(what, [mg, sgd], fused):
            return False
        block.replace_ops([mg, sgd], fused, where=mg)
        if not block.is_used(dw) and not dw.persistable:
            block.remove_var(dw.name)
        return True

    def _no(self, what, reason):
        self.refuse(what, reason)
        return False
