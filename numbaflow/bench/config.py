"""The bench's sizes and sampling: `Config`, and `quick_config()` for `--quick`."""
from dataclasses import dataclass, field


@dataclass
class Config:
    """Sizes and sampling; `quick` shrinks both for a smoke test."""
    size: int = 2048          # elementwise arrays: size x size float32
    bias_relu_size: int = 4096
    matmul_size: int = 512
    mlp_batch: int = 128
    depthwise_shape: tuple = (32, 64, 56, 56)     # PERF_ANCHORS W5
    conv_shape: tuple = (16, 32, 28, 28)          # conv2d input; 64 filters 3x3, padding 1
    compile_model: str = "mlp"  # compile/*: the training program compiled in fresh processes
    compile_warm_runs: int = 3    # warm-cache processes (the cold one runs once)
    repeat: int = 15
    min_time: float = 0.05    # seconds per sample
    quick: bool = False
    peer_python: dict = field(default_factory=dict)   # models/*: framework -> interpreter
    threads: int = 1          # models/*: numbaflow's thread budget (set from the machine)


def quick_config():
    # quick compiles the seed model: a cold compile costs per kernel, not per element,
    # so a smaller MLP would not be quicker
    return Config(size=256, bias_relu_size=512, matmul_size=128, mlp_batch=16,
                  depthwise_shape=(2, 8, 16, 16), conv_shape=(2, 8, 12, 12),
                  compile_model="seed", compile_warm_runs=1,
                  repeat=3, min_time=0.005, quick=True)
