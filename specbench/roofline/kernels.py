"""The micro-benchmark kernels: GEMM per precision, convolutions in three directions, device copy.

Each builder draws fresh random inputs (never zeros), rotates several input sets so that no
launch finds its operands in a warm cache, and returns a kernel `f(i)` for the timer. Each
precision's kernels are first checked against a float64 reference on fresh inputs.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from specbench.roofline.format import CONV_DIRECTIONS, Check, ConvDirection, ConvShape, Precision
from specbench.roofline.timing import Kernel

ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
GEMM_TOLERANCE = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 2e-2, "fp16": 5e-3, "fp8": 2e-2}
CONV_TOLERANCE = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 2e-2, "fp16": 5e-3}
CACHE_MULTIPLE = 4
"""Input sets rotate until together they are this many times the last-level cache."""
FP8_NOTE = "torch._scaled_mm, e4m3 x e4m3 -> bf16, unit scales, use_fast_accum=True"


class KernelError(RuntimeError):
    """A kernel computed a wrong result: its timings would be meaningless."""


def failed_check(check: Check) -> str:
    return (
        f"{check.kernel} at {check.precision} is wrong: relative error {check.rel_error:.3g} against float64, "
        f"tolerance {check.tolerance:g}; no ceiling is reported for a kernel that computes the wrong result"
    )


@dataclass(frozen=True)
class Case:
    """A ready kernel with the work of one launch."""

    kernel: Kernel
    work: float
    input_sets: int


def unsupported(torch: Any, device: Any, precision: str, what: str) -> str | None:
    """Why `what` ('gemm' or 'conv') cannot run at `precision` on `device`, or None when it can."""
    if precision == "fp32":
        return None
    if device.type == "cpu":
        if precision == "bf16":
            return None
        if precision == "fp8":
            return "fp8 matrix products need an NVIDIA GPU of compute capability 8.9 or newer (torch._scaled_mm)"
        if precision == "tf32":
            return "tf32 is a mode of NVIDIA tensor cores; CPUs have none"
        return "fp16 matrix products on a CPU run through slow fallbacks and bound nothing; measure bf16 instead"
    if torch.version.hip:
        return None if precision in ("bf16", "fp16") else f"{precision} is not measured on ROCm by this specbench"
    major, minor = torch.cuda.get_device_capability(device)
    if precision in ("tf32", "bf16") and major < 8:
        return f"{precision} needs compute capability 8.0 or newer; this GPU has {major}.{minor}"
    if precision == "fp8":
        if what == "conv":
            return "no fp8 convolution in torch"
        if (major, minor) < (8, 9) or not hasattr(torch, "_scaled_mm"):
            return f"fp8 needs compute capability 8.9 or newer and torch._scaled_mm; this GPU has {major}.{minor}"
    return None


def dtype_of(torch: Any, precision: str) -> Any:
    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


@contextlib.contextmanager
def precision_mode(torch: Any, precision: str, cudnn_benchmark: bool = False) -> Iterator[None]:
    """fp32 products in IEEE fp32 (tf32 off) or, for 'tf32', on tensor cores; restored afterwards.

    Set through torch's legacy switches, which keep its legacy and new TF32 settings consistent
    (setting only the new ones can leave a state that makes cuBLAS calls raise).
    """
    cudnn = torch.backends.cudnn
    try:
        saved = (torch.get_float32_matmul_precision(), cudnn.allow_tf32)
    except RuntimeError:  # the caller mixed torch's legacy and new TF32 switches: restore torch's defaults
        saved = ("highest", True)
    saved_benchmark = cudnn.benchmark
    tf32 = precision == "tf32"
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    cudnn.allow_tf32 = tf32
    cudnn.benchmark = cudnn_benchmark
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved[0])
        cudnn.allow_tf32 = saved[1]
        cudnn.benchmark = saved_benchmark


@dataclass(frozen=True)
class SetBudget:
    """How many input sets a kernel rotates: enough to cover CACHE_MULTIPLE x the last-level cache,
    at most `max_sets`, and together at most a quarter of the free memory."""

    cache_bytes: int
    free_bytes: float
    max_sets: int

    def sets_for(self, set_bytes: float) -> int:
        wanted = math.ceil(CACHE_MULTIPLE * self.cache_bytes / max(set_bytes, 1.0))
        fits = int(self.free_bytes / 4 // max(set_bytes, 1.0))
        return max(1, min(self.max_sets, wanted, fits))


def rel_error(torch: Any, out: Any, ref: Any) -> float:
    diff = out.detach().to("cpu", torch.float64) - ref
    value = float(torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(ref))
    return value if math.isfinite(value) else math.inf


def _random(torch: Any, shape: tuple[int, ...], dtype: Any, device: Any, scale: float = 1.0) -> Any:
    """Uniform in [-scale, scale): random, non-zero almost everywhere, and quick to draw on a CPU."""
    return torch.empty(shape, device=device, dtype=torch.float32).uniform_(-scale, scale).to(dtype)


# GEMM


def _fp8_operands(torch: Any, m: int, n: int, k: int, device: Any) -> tuple[Any, Any]:
    a = _random(torch, (m, k), torch.float32, device).to(torch.float8_e4m3fn)
    b = _random(torch, (n, k), torch.float32, device).to(torch.float8_e4m3fn).t()  # column-major k x n
    return a, b


def _fp8_matmul(torch: Any, a: Any, b: Any, one: Any) -> Any:
    return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)


def gemm_case(torch: Any, device: Any, precision: str, size: int, budget: SetBudget) -> Case:
    m = n = k = size
    element = ELEMENT_BYTES[precision]
    sets = budget.sets_for((m * k + k * n) * element)
    if precision == "fp8":
        one = torch.ones((), device=device, dtype=torch.float32)
        pairs = [_fp8_operands(torch, m, n, k, device) for _ in range(sets)]

        def fp8_kernel(i: int) -> Any:
            a, b = pairs[i % sets]
            return _fp8_matmul(torch, a, b, one)

        return Case(fp8_kernel, 2.0 * m * n * k, sets)
    dtype = dtype_of(torch, precision)
    operands = [(_random(torch, (m, k), dtype, device), _random(torch, (k, n), dtype, device)) for _ in range(sets)]
    out = torch.empty((m, n), device=device, dtype=dtype)

    def kernel(i: int) -> Any:
        a, b = operands[i % sets]
        return torch.matmul(a, b, out=out)

    return Case(kernel, 2.0 * m * n * k, sets)


def gemm_bytes(precision: str, m: int, n: int, k: int) -> float:
    """A and B read once, C written once (fp8 writes bf16)."""
    out = 2 if precision == "fp8" else ELEMENT_BYTES[precision]
    return float((m * k + k * n) * ELEMENT_BYTES[precision] + m * n * out)


def check_gemm(torch: Any, device: Any, precision: Precision, size: int = 256) -> Check:
    """The product at `size` on fresh inputs against float64 of the same (already rounded) operands."""
    with precision_mode(torch, precision):
        if precision == "fp8":
            a, b = _fp8_operands(torch, size, size, size, device)
            out = _fp8_matmul(torch, a, b, torch.ones((), device=device, dtype=torch.float32))
        else:
            dtype = dtype_of(torch, precision)
            a, b = _random(torch, (size, size), dtype, device), _random(torch, (size, size), dtype, device)
            out = torch.matmul(a, b)
    ref = a.float().to("cpu", torch.float64) @ b.float().to("cpu", torch.float64)
    return _check("gemm", precision, rel_error(torch, out, ref), GEMM_TOLERANCE[precision])


def _check(kernel: str, precision: Precision, error: float, tolerance: float) -> Check:
    return Check(kernel=kernel, precision=precision, rel_error=error, tolerance=tolerance, passed=error <= tolerance)


# Convolution


def _conv_args(shape: ConvShape) -> tuple[list[int], list[int], list[int]]:
    return [shape.stride, shape.stride], [shape.pad, shape.pad], [1, 1]


def _conv_run(torch: Any, direction: ConvDirection, shape: ConvShape, x: Any, w: Any, dy: Any) -> Any:
    stride, pad, dilation = _conv_args(shape)
    if direction == "fwd":
        return torch.ops.aten.convolution(x, w, None, stride, pad, dilation, False, [0, 0], 1)
    mask = [direction == "bwd_data", direction == "bwd_filter", False]
    grads = torch.ops.aten.convolution_backward(dy, x, w, None, stride, pad, dilation, False, [0, 0], 1, mask)
    return grads[0] if direction == "bwd_data" else grads[1]


def _conv_tensors(torch: Any, shape: ConvShape, dtype: Any, device: Any, channels_last: bool) -> tuple[Any, Any, Any]:
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    fan_in = shape.c * shape.r * shape.s
    x = _random(torch, (shape.n, shape.c, shape.h, shape.w), dtype, device).contiguous(memory_format=fmt)
    w = _random(torch, (shape.k, shape.c, shape.r, shape.s), dtype, device, 1 / math.sqrt(fan_in))
    dy = _random(torch, (shape.n, shape.k, shape.p, shape.q), dtype, device).contiguous(memory_format=fmt)
    return x, w.contiguous(memory_format=fmt), dy


def conv_flops(shape: ConvShape) -> float:
    return 2.0 * shape.n * shape.k * shape.p * shape.q * shape.c * shape.r * shape.s


def conv_set_bytes(shape: ConvShape, precision: str) -> float:
    elements = shape.n * shape.c * shape.h * shape.w + shape.k * shape.c * shape.r * shape.s
    return float(elements + shape.n * shape.k * shape.p * shape.q) * ELEMENT_BYTES[precision]


def conv_case(
    torch: Any,
    device: Any,
    shape: ConvShape,
    direction: ConvDirection,
    precision: str,
    channels_last: bool,
    budget: SetBudget,
) -> Case:
    sets = budget.sets_for(conv_set_bytes(shape, precision))
    dtype = dtype_of(torch, precision)
    tensors = [_conv_tensors(torch, shape, dtype, device, channels_last) for _ in range(sets)]

    def kernel(i: int) -> Any:
        return _conv_run(torch, direction, shape, *tensors[i % sets])

    return Case(kernel, conv_flops(shape), sets)


CHECK_SHAPE = ConvShape(names=["check"], count=1, n=2, c=8, h=9, w=9, k=16, r=3, s=3, stride=2, pad=1, p=5, q=5)


def check_conv(torch: Any, device: Any, precision: Precision, channels_last: bool) -> Check:
    """Forward, backward-data and backward-filter at a small shape against float64 on the CPU; the worst error."""
    dtype = dtype_of(torch, precision)
    x, w, dy = _conv_tensors(torch, CHECK_SHAPE, dtype, device, channels_last)
    ref_inputs = [t.to("cpu", torch.float64).contiguous() for t in (x, w, dy)]
    worst = 0.0
    with precision_mode(torch, precision):
        for direction in CONV_DIRECTIONS:
            out = _conv_run(torch, direction, CHECK_SHAPE, x, w, dy)
            ref = _conv_run(torch, direction, CHECK_SHAPE, *ref_inputs)
            worst = max(worst, rel_error(torch, out, ref))
    return _check("conv", precision, worst, CONV_TOLERANCE[precision])


# Memory


def copy_case(torch: Any, device: Any, buffer_bytes: int, budget: SetBudget) -> Case:
    """dst.copy_(src) of float32 buffers; work = bytes read + bytes written."""
    elements = buffer_bytes // 4
    sets = budget.sets_for(2.0 * buffer_bytes)
    pairs = [(torch.rand(elements, device=device) + 1.0, torch.empty(elements, device=device)) for _ in range(sets)]
    src, dst = pairs[0]
    dst.copy_(src)
    if not bool(torch.equal(dst, src)):
        raise KernelError(f"device copy of {buffer_bytes} bytes did not reproduce its source")

    def kernel(i: int) -> Any:
        source, target = pairs[i % sets]
        return target.copy_(source)

    return Case(kernel, 2.0 * elements * 4, sets)
