"""LayerHelper: how layer functions name things and append ops (as in Paddle).

A layer call gets one unique name (`fc_0`); its outputs are `fc_0.tmp_N`, its
parameters `fc_0.w_N` / `fc_0.b_N`. Parameters live in the main program; their
initialiser ops go to the startup program.
"""
from .graph.program import default_main_program, default_startup_program
from .param_attr import ParamAttr
from .utils import unique_name


class LayerHelper:
    def __init__(self, layer_type, name=None):
        self.layer_type = layer_type
        self.name = name or unique_name.generate(layer_type)
        self.main_program = default_main_program()
        self.startup_program = default_startup_program()

    @property
    def block(self):
        """Where the layer's ops go: the current block (a control-flow branch or body
        while one is being built)."""
        return self.main_program.current_block()

    @property
    def global_block(self):
        """Where parameters live, whichever block the layer's ops go to."""
        return self.main_program.global_block()

    def create_tmp(self, dtype="float32", stop_gradient=False):
        """A new output variable; its shape is set when the producing op is appended."""
        return self.block.create_var(unique_name.generate(f"{self.name}.tmp"), (), dtype,
                                     stop_gradient=stop_gradient)

    # Paddle's spelling of create_tmp (code written against Paddle's LayerHelper uses it)
    def create_variable_for_type_inference(self, dtype, stop_gradient=False):
        return self.create_tmp(dtype, stop_gradient)

    def append_op(self, type, inputs=None, outputs=None, attrs=None):
        return self.block.append_op(type, inputs, outputs, attrs)

    def simple(self, type, inputs, attrs=None, out_slot="Out", dtype=None):
        """Append `type` with one fresh output in `out_slot`; return that output."""
        first = next(iter(v for vs in inputs.values()
                          for v in (vs if isinstance(vs, list) else [vs])), None)
        out = self.create_tmp(dtype or (first.dtype if first is not None else "float32"))
        self.append_op(type, inputs, {out_slot: out}, attrs)
        if first is not None and all(getattr(v, "stop_gradient", False)
                                     for vs in inputs.values()
                                     for v in (vs if isinstance(vs, list) else [vs])):
            out.stop_gradient = True
        return out

    def create_parameter(self, attr, shape, dtype, is_bias=False, default_initializer=None):
        """A Parameter in the main program with its initialiser op in the startup program.

        A `ParamAttr(name=...)` naming a parameter that already exists shares it (as in
        Paddle): the layer uses the same Variable, and backward sums its gradients. The
        shape and dtype must then match.
        """
        from .param_init import Constant, XavierUniform
        attr = ParamAttr._to_attr(attr)
        if any(int(d) < 0 for d in shape):
            raise ValueError(f"{self.name}: parameter shape {tuple(shape)} must be fully known; "
                             f"give the input a known size in every non-batch dimension")
        if attr.name is not None and attr.name in self.global_block.vars:
            return self._shared_parameter(attr.name, shape, dtype)
        name = attr.name or unique_name.generate(f"{self.name}.{'b' if is_bias else 'w'}")
        init = attr.initializer or default_initializer or \
            (Constant(0.0) if is_bias else XavierUniform())
        param = self.global_block.create_parameter(name, shape, dtype, trainable=attr.trainable,
                                            learning_rate=attr.learning_rate,
                                            regularizer=attr.regularizer, initializer=init)
        sblock = self.startup_program.global_block()
        svar = sblock.vars.get(name) or sblock.create_var(name, shape, dtype, persistable=True)
        op = init(svar, sblock)
        # Paddle 2.6: an initializer without its own seed takes its program's random_seed
        # (so `startup.random_seed = n` gives the same weights in every process), before the
        # global stream of paddle.seed
        seed = sblock.program.random_seed
        if seed and not int(getattr(init, "seed", 0) or 0) and op is not None and \
                op.has_attr("seed"):
            op.attrs["seed"] = int(seed)         # (just appended: no plan has seen it)
        return param


    def _shared_parameter(self, name, shape, dtype):
        from . import dtypes
        from .graph.program import Parameter
        existing = self.global_block.vars[name]
        if not isinstance(existing, Parameter):
            raise ValueError(f"{self.name}: ParamAttr name {name!r} is already a non-parameter "
                             f"variable of the program ({existing!r}); choose another name")
        want = (tuple(int(d) for d in shape), dtypes.convert_dtype(dtype))
        if (existing.shape, existing.dtype) != want:
            raise ValueError(f"{self.name}: parameter {name!r} is shared by ParamAttr name but "
                             f"this layer needs shape {want[0]} dtype {want[1]}, while the "
                             f"existing {name!r} has shape {existing.shape} dtype "
                             f"{existing.dtype}; give one of them another name")
        return existing
