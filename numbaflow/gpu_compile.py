"""Compiling one GPU kernel for a real GPU without one: PTX from numba-cuda's NVVM, SASS
from ptxas. Used by the compile gate (gpu_check.py) and its hot-loop counts (gpu_counts.py)."""
import os
import subprocess
import tempfile
from pathlib import Path

from .gpu_trace import compute_capability


def ptxas_path():
    """ptxas from the nvidia-cuda-nvcc-cu12 wheel (numba-cuda[cu12] brings it), or PATH."""
    try:
        import nvidia.cuda_nvcc as m
        p = Path(list(m.__path__)[0]) / "bin" / "ptxas"
        if p.exists():
            return str(p)
    except ImportError:
        pass
    import shutil
    return shutil.which("ptxas")


def compile_ptx(kernel, argtypes, cc):
    """PTX of `kernel` (a CUDADispatcher) for `argtypes` on compute capability `cc`."""
    return compile_ptxs(kernel, argtypes, [cc])[0]


# numba-cuda 0.30 lowers a kernel differently only below these compute capabilities
# (float64 atomics at 6.0, fast tanh at 7.5); at or above the last one the LLVM IR is the
# same for every cc, so it is lowered once and NVVM run per cc.
SAME_LOWERING_FROM = (7, 5)


def compile_ptxs(kernel, argtypes, ccs):
    """[PTX for each cc in `ccs`] of `kernel` for `argtypes`, with numba-cuda's compiler."""
    from numba import cuda
    ccs = [tuple(c) for c in ccs]
    fastmath = bool(kernel.targetoptions.get("fastmath"))
    first = min(ccs)
    with compute_capability(first):
        try:
            from numba.cuda.compiler import _compile_pyfunc_with_fixup
        except ImportError:         # another numba-cuda: one full compile per cc
            _compile_pyfunc_with_fixup = None
        if _compile_pyfunc_with_fixup is None or first < SAME_LOWERING_FROM:
            return [cuda.compile_ptx(kernel.py_func, argtypes, cc=cc, fastmath=fastmath)[0]
                    for cc in ccs]
        lib, _ = _compile_pyfunc_with_fixup(
            kernel.py_func, argtypes, debug=None, lineinfo=False, device=False,
            fastmath=fastmath, cc=first, opt=None, abi="numba", abi_info=None,
            forceinline=False, launch_bounds=None, lto=False)
        out = []
        for cc in ccs:
            codes = lib.get_asm_strs(cc=cc)
            if len(codes) != 1:
                raise RuntimeError(f"compiling gave {len(codes)} PTX modules, expected one")
            out.append(codes[0])
        return out


def assemble(ptx, cc, verbose=False):
    """Run ptxas on `ptx` for sm_<cc>; returns its stderr (with -v: registers, spills)."""
    exe = ptxas_path()
    if exe is None:
        raise RuntimeError("ptxas not found: pip install 'numba-cuda[cu12]' brings it")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w", encoding="utf-8") as f:
            f.write(ptx)
        r = subprocess.run([exe, f"-arch=sm_{cc[0]}{cc[1]}", src, "-o", os.path.join(d, "k.o")]
                           + (["-v"] if verbose else []), capture_output=True, text=True,
                           timeout=300)
    if r.returncode:
        raise RuntimeError(f"ptxas: {r.stderr.strip()[-500:]}")
    return r.stderr
