"""The public API of numbaflow, listed for the documentation tests.

A public module's API is its `__all__`. Its public callables are those names that are
functions or classes of numbaflow, plus the public methods and properties of those
classes (including ones inherited from other numbaflow classes). Used by
tests/api/test_api_docs.py (docstrings, `__all__`) and tests/docs/test_doctests.py (examples).
"""
import importlib
import inspect
import pkgutil

# The documented modules. A public (no underscore) module directly under numbaflow
# (`numbaflow.io`, ...) is documented too, unless it is listed in INTERNAL_SUBMODULES;
# a new public module deeper down must be added here.
PUBLIC_MODULES = [
    "numbaflow", "numbaflow.static", "numbaflow.static.nn", "numbaflow.static.amp",
    "numbaflow.nn",
    "numbaflow.nn.functional", "numbaflow.nn.initializer", "numbaflow.optimizer",
    "numbaflow.fluid", "numbaflow.fluid.layers", "numbaflow.fluid.optimizer",
    "numbaflow.fluid.io", "numbaflow.fluid.initializer", "numbaflow.fluid.clip",
    "numbaflow.fluid.regularizer", "numbaflow.fluid.backward", "numbaflow.distributed",
    "numbaflow.metric", "numbaflow.utils", "numbaflow.utils.unique_name",
    "numbaflow.fluid.layers.device",
    "numbaflow.utils.metrics", "numbaflow.incubate", "numbaflow.vision.models",
    "numbaflow.vision.transforms",
]

# Implementation modules reachable as attributes of a public module: their public
# names are re-exported by a public module (and documented there).
INTERNAL_SUBMODULES = {
    "numbaflow.compiler", "numbaflow.config", "numbaflow.dtypes", "numbaflow.executor",
    "numbaflow.graph",
    "numbaflow.kernels", "numbaflow.layer_helper", "numbaflow.param_attr",
    "numbaflow.regularizer",          # L1Decay/L2Decay, public as paddle.optimizer.*
    "numbaflow.testing", "numbaflow.bench", "numbaflow.examples",
    "numbaflow.gpu_check",            # a command (python -m numbaflow.gpu_check)
    "numbaflow.gpu_trace",            # its traced device layer
    "numbaflow.gpu_counts",           # its hot-loop counts (--counts)
    "numbaflow.gpu_compile",          # the PTX and SASS of one kernel, for the two above
    "numbaflow.initializer",          # the 1.x initializers' home, public as fluid.initializer
    "numbaflow.param_init",           # the 2.x initializers' home, public as nn.initializer
    "numbaflow.core",                 # fluid.core / framework.core (the same module object)
    "numbaflow.formats",              # other frameworks' files, read by static.io
    "numbaflow.persistence",          # save/load's home, public as static.* and fluid.io.*
}

# Names a public module imports for its own use; they are not part of its API.
HELPER_IMPORTS = {
    "numbaflow.static.nn": {"LayerHelper", "Variable"},
    "numbaflow.nn.functional": {"LayerHelper", "Variable"},
    "numbaflow.optimizer": {"Variable", "append_backward", "default_startup_program"},
    "numbaflow.fluid.layers": {"LayerHelper", "Variable", "scalar_1d"},
    "numbaflow.fluid.io": {"default_main_program"},
    "numbaflow.distributed": {"env_size", "install_abort_hooks"},
    "numbaflow.metric": {"LayerHelper"},
    "numbaflow.incubate": {"LayerHelper", "Variable", "check_variable"},
    "numbaflow.nn.initializer": {"next_op_seed"},
    "numbaflow.tensor": {"slice_op"},     # what Variable.__getitem__ calls (not Paddle API)
}


def public_modules():
    """The public module objects: PUBLIC_MODULES plus the other public modules directly
    under numbaflow."""
    mods = {name: importlib.import_module(name) for name in PUBLIC_MODULES}
    # every module on disk, not just those imported so far: what earlier tests imported must
    # not decide what this inventory holds (numbaflow.gpu_compile once slipped past that way)
    for info in pkgutil.iter_modules(mods["numbaflow"].__path__):
        name = f"numbaflow.{info.name}"
        if not info.name.startswith("_") and name not in mods and name not in INTERNAL_SUBMODULES:
            mods[name] = importlib.import_module(name)
    return mods


def is_numbaflow_callable(obj):
    return (callable(obj) and not inspect.ismodule(obj)
            and (getattr(obj, "__module__", None) or "").startswith("numbaflow"))


def unlisted_names(mod):
    """Public-looking numbaflow callables of `mod` that its `__all__` leaves out."""
    listed = set(getattr(mod, "__all__", ()))
    helpers = HELPER_IMPORTS.get(mod.__name__, set())
    return sorted(n for n, v in vars(mod).items()
                  if not n.startswith("_") and n not in listed and n not in helpers
                  and is_numbaflow_callable(v))


def module_api(mod):
    """[(qualified name, object)] for the callables in `mod.__all__`."""
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    return [(f"{mod.__name__}.{n}", getattr(mod, n)) for n in names
            if is_numbaflow_callable(getattr(mod, n))]


def class_members(qualname, cls):
    """[(qualified name, function or property)] public members of a numbaflow class."""
    out, seen = [], set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("numbaflow"):
            continue
        for attr, value in vars(klass).items():
            if attr.startswith("_") or attr in seen:
                continue
            seen.add(attr)
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if inspect.isfunction(value) or isinstance(value, property):
                out.append((f"{qualname}.{attr}", value))
    return out


def public_callables():
    """(module level, members): each a list of (qualified name, object), every object
    once (under the first name found: an alias such as fluid.optimizer.AdamOptimizer
    is the same object as optimizer.Adam)."""
    seen, top, members = set(), [], []
    for mod in public_modules().values():
        for qualname, obj in module_api(mod):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            top.append((qualname, obj))
            if inspect.isclass(obj):
                for mq, m in class_members(qualname, obj):
                    key = id(m.fget if isinstance(m, property) else m)
                    if key not in seen:
                        seen.add(key)
                        members.append((mq, m))
    return top, members
