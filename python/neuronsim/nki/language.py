"""nki.language (`nl`) on NeuronSim's kernel tracer, for both NKI dialects: NKI 0.2+ (`import
nki.language as nl`: Python-semantics loops) and legacy (`neuronxcc.nki.language`: symbolic
affine_range loops, index grids, masks, block dimensions). See the README's NKI section."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np
import torch

from ..kernels import language as _kl
from ..kernels import ops as _ops
from ..kernels.ir import Aff, caller_source
from ..kernels.tracer import error, tracer
from ..kernels.values import HbmView, TileView
from ._common import UnsupportedDType, dialect, is_dst_first, resolve_op, torch_dtype
from ._index import (  # noqa: F401 (re-exported)
    Arange,
    Grid,
    arange,
    as_hbm,
    as_tile,
    ds,
    expand_keys,
    index_hbm,
    mgrid,
    par_dim,
)
from ._tiles import NTile, new_tile

# -- dtypes (torch dtypes underneath; numpy dtypes are accepted wherever a dtype is) ---------
float32 = torch.float32
bfloat16 = torch.bfloat16
float16 = torch.float16
int32 = torch.int32
int64 = torch.int64
int16 = torch.int16
int8 = torch.int8
uint8 = torch.uint8
uint32 = torch.uint32
uint16 = torch.uint16
bool_ = torch.bool
tfloat32 = UnsupportedDType("tfloat32")
# NKI's float8_e4m3 is the IEEE-style e4m3 (inf and NaN, max 240), which PyTorch has no dtype
# for; float8_e4m3fn and float8_e5m2 are PyTorch's.
float8_e4m3 = UnsupportedDType("float8_e4m3")
float8_e5m2 = torch.float8_e5m2
float8_e4m3fn = torch.float8_e4m3fn
float8_e8m0fnu = UnsupportedDType("float8_e8m0fnu")
float4_e2m1fn_x4 = UnsupportedDType("float4_e2m1fn_x4")
float8_e4m3fn_x4 = UnsupportedDType("float8_e4m3fn_x4")
float8_e5m2_x4 = UnsupportedDType("float8_e5m2_x4")


class NKIObject:
    """NKI's base class of kernel-side objects (configuration dataclasses passed between
    kernel functions). Tracing runs kernels as Python; as NKI's, a subclass's plain class
    attributes (`section_idx = None`, no annotation) are fields of its @dataclass too, so that
    `SectionParams(section_idx=0)` works."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__", {})
        extra = {}
        for name, value in list(cls.__dict__.items()):
            if name.startswith("_") or name in own or callable(value) or isinstance(
                    value, (staticmethod, classmethod, property, list, dict, set)):
                continue
            extra[name] = Any
        if extra:
            cls.__annotations__ = {**own, **extra}

# -- buffers -----------------------------------------------------------------------------------
sbuf = "sbuf"
psum = "psum"
hbm = "hbm"
shared_hbm = "shared_hbm"
private_hbm = "private_hbm"

tile_size = _kl.tile_size
tile_size.bn_stats_fmax = 512  # type: ignore[attr-defined]
tile_size.total_available_sbuf_size = 192 * 1024  # type: ignore[attr-defined]


# -- allocation --------------------------------------------------------------------------------


def shared_constant(constant: Any, dtype: Any = None, **_: Any) -> Any:
    """An HBM tensor holding `constant` (a numpy array or the path of a .npy file), made at
    trace time and read like a kernel input (nl.shared_constant)."""
    from ..kernels import ir as _ir

    source = caller_source()
    if isinstance(constant, (str, bytes)) or hasattr(constant, "__fspath__"):
        arr = np.load(constant)  # a .npy file (nki-library's cached constants)
    else:
        arr = np.asarray(constant)
    want = torch_dtype(dtype) if dtype is not None else torch_dtype(arr.dtype)
    if arr.dtype == np.float64 or arr.dtype.kind not in "fiub":
        arr = arr.astype(np.float64)
    value = torch.from_numpy(np.ascontiguousarray(arr)).to(want)
    t = tracer()
    hbm = _ir.HbmTensor(f"const{len(t.constants)}", tuple(value.shape) or (1,), want,
                        is_output=False, source=source)
    const = _ir.ConstantTensor(f"c{len(t.constants)}", value.reshape(hbm.shape).contiguous())
    const.hbm = hbm  # type: ignore[attr-defined]
    t.constants.append(const)
    return HbmView(hbm)


def shared_identity_matrix(n: int, dtype: Any = None, **_: Any) -> Any:
    """An [n, n] identity matrix in SBUF (nl.shared_identity_matrix; uint8 unless dtype),
    loaded once at the kernel's start: a moving operand for PE transposes."""
    want = torch_dtype(dtype) if dtype is not None else torch.uint8
    tile = tracer().constant_tile(("identity", int(n), want), torch.eye(int(n), dtype=want),
                                  caller_source())
    return NTile.wrap(TileView.whole(tile), None)


def ndarray(shape: Any, dtype: Any, buffer: Any = None, name: str = "", **_: Any) -> Any:
    """A tile in SBUF/PSUM (N-d; legacy block dims before nl.par_dim), or an HBM tensor
    (buffer=nl.shared_hbm / nl.hbm: the kernel writes and returns it; nl.private_hbm: the
    kernel's own HBM scratch, not returned)."""
    source = caller_source()
    dtype = torch_dtype(dtype)
    buf = buffer if buffer is not None else sbuf
    if buf in (shared_hbm, hbm, private_hbm):
        shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        view = _kl.ndarray(shape, dtype, buffer=shared_hbm)
        if buf == private_hbm:
            view.tensor.scratch = True
        return view
    if buf not in (sbuf, psum):
        raise error(f"unknown buffer {buffer!r}: nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm",
                    source)
    return new_tile(shape, dtype, buf, source)


def empty_like(x: Any, dtype: Any = None, buffer: Any = None, **kw: Any) -> Any:
    return ndarray(x.shape, dtype if dtype is not None else x.dtype, buffer=buffer)


def full(shape: Any, fill_value: float, dtype: Any = float32, buffer: Any = None,
         **_: Any) -> Any:
    source = caller_source()
    t = new_tile(shape, torch_dtype(dtype), buffer or sbuf, source)
    t.fill(float(fill_value), source)
    return t


def zeros(shape: Any, dtype: Any = float32, buffer: Any = None, **kw: Any) -> Any:
    return full(shape, 0.0, dtype, buffer)


def ones(shape: Any, dtype: Any = float32, buffer: Any = None, **kw: Any) -> Any:
    return full(shape, 1.0, dtype, buffer)


def zeros_like(x: Any, dtype: Any = None, buffer: Any = None, **kw: Any) -> Any:
    return zeros(x.shape, dtype if dtype is not None else x.dtype, buffer)


def ones_like(x: Any, dtype: Any = None, buffer: Any = None, **kw: Any) -> Any:
    return ones(x.shape, dtype if dtype is not None else x.dtype, buffer)


def full_like(x: Any, fill_value: float, dtype: Any = None, buffer: Any = None, **kw: Any
              ) -> Any:
    return full(x.shape, fill_value, dtype if dtype is not None else x.dtype, buffer)


# -- data movement -----------------------------------------------------------------------------


def load(src: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
    """HBM -> a new SBUF tile (the view's first dim on the partitions; a 1-D view too)."""
    source = caller_source()
    view = as_hbm(src, "the source of nl.load", mask)
    shape = _load_shape(view.shape)
    grid = _masked_partitions(src, mask)
    if grid is not None and grid[1] + shape[0] <= grid[0]:
        # NKI's tile has the grid's partitions; the mask leaves some of them unloaded, holding
        # whatever the SBUF held, and later ops compute on them as the hardware does (a masked
        # store leaves them out). The simulator runs on defined data only: the tile is
        # zero-filled first (one memset, which the hardware does not run: about 1 us for a
        # 128 x 1000 fp32 tile, only where the mask cuts the tile)
        full, first = grid
        tile = new_tile((full,) + tuple(shape[1:]), view.dtype, sbuf, source)
        tile.fill(0.0, source)
        NTile(tile.tile, tile.p0 + first, shape[0], tile.c0, [], list(tile.free)).dma_from(
            view, source)
    else:
        tile = new_tile(shape, view.dtype, sbuf, source)
        tile.dma_from(view, source)
    if dtype is not None and torch_dtype(dtype) != view.dtype:
        return copy(tile, dtype=dtype)
    return tile


def _masked_partitions(src: Any, mask: Any) -> tuple[int, int] | None:
    """For a load through an index grid whose mask narrows only its partition axis: the
    grid's partitions without the mask and the first one the mask keeps."""
    if mask is None or not hasattr(src, "nki_src"):
        return None
    parent, key = src.nki_src
    found = None
    for k in expand_keys(key, len(parent.dims)):
        if not isinstance(k, Arange):
            continue
        for (axis, _, count, base), (_, _, full, _) in zip(k.parts(mask)[1], k.parts(None)[1]):
            if count == full:
                continue
            if axis != 0 or found is not None:
                return None
            found = (full, mask.ranges[base][0])
    return found


def _load_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) == 0:
        return (1, 1)
    if len(shape) == 1:
        return (shape[0], 1)
    return shape


def load_transpose2d(src: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
    source = caller_source()
    view = as_hbm(src, "the source of nl.load_transpose2d", mask)
    if len(view.dims) != 2:
        raise error("nl.load_transpose2d takes a 2-D HBM view", source)
    t = HbmView(view.tensor, view.offset, [view.dims[1], view.dims[0]])
    tile = new_tile(t.shape, view.dtype, sbuf, source)
    tile.dma_from(t, source)
    if dtype is not None and torch_dtype(dtype) != view.dtype:
        return copy(tile, dtype=dtype)
    return tile


def store(dst: Any, value: Any, mask: Any = None, **_: Any) -> None:
    """A tile -> HBM (DMA); a tile of another dtype is converted first (Vector engine)."""
    source = caller_source()
    view = as_hbm(dst, "the target of nl.store", mask)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = full(_load_shape(view.shape), value, view.dtype)
    tile = as_tile(value, "the value of nl.store", mask)
    tile.dma_to(view, source)


def copy(x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
    source = caller_source()
    t = as_tile(x, "the source of nl.copy", mask)
    return NTile.wrap(_ops.copy(t.flat(source), torch_dtype(dtype) if dtype is not None else None,
                                source), t.shape)


def static_cast(x: Any, dtype: Any, **kw: Any) -> Any:
    """A tile converted to dtype (a copy); outside a kernel, a numpy array converted (as NKI's
    tests prepare inputs: bfloat16 through ml_dtypes, float32 without it)."""
    import numpy as np

    if isinstance(x, (np.ndarray, np.generic, float, int)) and not isinstance(x, bool):
        t = torch_dtype(dtype)
        if t == torch.bfloat16:
            try:
                import ml_dtypes

                return np.asarray(x).astype(ml_dtypes.bfloat16)
            except ImportError:
                raise error("nl.static_cast to bfloat16 of a numpy array needs ml_dtypes") \
                    from None
        return np.asarray(x).astype(str(t).removeprefix("torch."))
    return copy(x, dtype=dtype, **kw)


# -- loops ---------------------------------------------------------------------------------------


def _ints(args: tuple[Any, ...], what: str) -> tuple[int, int, int]:
    if not 1 <= len(args) <= 3:
        raise error(f"{what} takes (stop), (start, stop) or (start, stop, step)")
    vals = []
    for a in args:
        if isinstance(a, Aff):
            if not a.is_const():
                raise error(f"the bounds of {what} are ints known when the kernel is traced, "
                            f"got the loop expression {a!r}")
            a = a.const
        if isinstance(a, bool) or not isinstance(a, int):
            raise error(f"the bounds of {what} are Python ints, got {a!r}")
        vals.append(a)
    if len(vals) == 1:
        return 0, vals[0], 1
    if len(vals) == 2:
        return vals[0], vals[1], 1
    if vals[2] == 0:
        raise error(f"{what} with step 0")
    return vals[0], vals[1], vals[2]


def _loop(args: tuple[Any, ...], sequential: bool, what: str) -> Any:
    start, stop, step = _ints(args, what)
    source = caller_source()
    if dialect() != "legacy" or (source.file, source.line) in getattr(tracer(), "unroll", ()):
        # NKI 0.2+: loops have Python semantics (the variable is an int; it may index a list)
        return builtins.range(start, stop, step)
    count = builtins.max(0, -(-(stop - start) // step)) if step > 0 else builtins.max(
        0, -(-(start - stop) // -step))
    rng = _kl._Range(count, sequential, source)
    return (start + step * i for i in rng)


def affine_range(*args: Any, **_: Any) -> Any:
    """Independent iterations. Legacy: a symbolic loop (the variable may appear in indices);
    NKI 0.2+: a Python loop."""
    return _loop(args, False, "nl.affine_range")


def sequential_range(*args: Any, **_: Any) -> Any:
    """Iterations that carry state through tiles allocated before the loop."""
    return _loop(args, True, "nl.sequential_range")


def static_range(*args: Any, **_: Any) -> Any:
    """A loop unrolled while the kernel is traced."""
    return builtins.range(*_ints(args, "nl.static_range"))


def dynamic_range(*args: Any, **_: Any) -> Any:
    return _loop(args, True, "nl.dynamic_range")


# -- SPMD launch grids ---------------------------------------------------------------------------


def program_id(axis: int) -> int:
    t = tracer()
    if axis >= len(t.program_ids):
        if not t.grid and axis == 0:
            return 0
        raise error(f"nl.program_id({axis}) of a kernel launched on a grid of "
                    f"{len(t.grid)} dims")
    return t.program_ids[axis]


def num_programs(axes: Any = None) -> Any:
    grid = tracer().grid or (1,)
    if axes is None:
        return math.prod(grid)
    if isinstance(axes, (tuple, list)):
        return math.prod(grid[a] for a in axes)
    return grid[axes] if axes < len(grid) else 1


class nc:  # noqa: N801 (NKI's name)
    """nl.nc(n): n physical NeuronCores, in nl.spmd_dim(size, nl.nc(n))."""

    def __init__(self, n: int) -> None:
        self.n = int(n)


def spmd_dim(*args: Any) -> int:
    """A launch-grid dim spread over cores: the grid has the product of its sizes."""
    size = 1
    for a in args:
        size *= a.n if isinstance(a, nc) else int(a)
    return size


def program_ndim() -> int:
    return len(tracer().grid)


# -- tile math -----------------------------------------------------------------------------------


class _Activation(_kl._Activation):
    def __call__(self, x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
        source = caller_source()
        t = as_tile(x, f"the data of nl.{self.act}", mask)
        r = _ops.activation(self.act, t.flat(source), 1.0, 0.0,
                            torch_dtype(dtype) if dtype is not None else None, source)
        return NTile.wrap(r, t.shape)


exp = _Activation("exp")
log = _Activation("log")
tanh = _Activation("tanh")
sigmoid = _Activation("sigmoid")
sqrt = _Activation("sqrt")
rsqrt = _Activation("rsqrt")
square = _Activation("square")
relu = _Activation("relu")
gelu = _Activation("gelu")
gelu_apprx_tanh = _Activation("gelu_tanh")
gelu_apprx_sigmoid = _Activation("gelu_tanh")
silu = _Activation("silu")
abs = _Activation("abs")  # noqa: A001 (NKI's name)
negative = _Activation("neg")
reciprocal = _Activation("reciprocal")
sin = _Activation("sin")
cos = _Activation("cos")
erf = _Activation("erf")
softplus = _Activation("softplus")
arctan = _Activation("arctan")
identity = _Activation("identity")
copy_act = identity


class _Alu(_kl._Alu):
    def __call__(self, x: Any, y: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
        from ._tiles import binary

        return binary(self.alu, x, y, torch_dtype(dtype) if dtype is not None else None,
                      caller_source(), mask=mask)


add = _Alu("add")
subtract = _Alu("sub")
multiply = _Alu("mul")
divide = _Alu("div")
maximum = _Alu("max")
minimum = _Alu("min")
power = _Alu("pow")
equal = _Alu("eq")
not_equal = _Alu("ne")
less = _Alu("lt")
less_equal = _Alu("le")
greater = _Alu("gt")
greater_equal = _Alu("ge")
bitwise_and = _Alu("and")
bitwise_or = _Alu("or")
logical_and = bitwise_and
logical_or = bitwise_or


class _Reduce(_kl._Reduce):
    def __call__(self, x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
                 mask: Any = None, **_: Any) -> Any:
        from ._tiles import reduce_free

        return reduce_free(self.alu, x, axis, torch_dtype(dtype) if dtype is not None else None,
                           keepdims, caller_source(), mask=mask)


sum = _Reduce("add")  # noqa: A001 (NKI's name)
max = _Reduce("max")  # noqa: A001
min = _Reduce("min")  # noqa: A001


def mean(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, **_: Any) -> Any:
    from ._tiles import reduce_free

    source = caller_source()
    t = as_tile(x, "the data of nl.mean")
    s = reduce_free("add", t, axis, float32, keepdims, source)
    n = t.free_size() // builtins.max(1, s.free_size())
    return s * (1.0 / n)


def matmul(x: Any, y: Any, transpose_x: bool = False, mask: Any = None, **_: Any) -> Any:
    """x @ y into a PSUM tile (x given as [K, M] with transpose_x=True)."""
    from . import isa

    source = caller_source()
    xt = as_tile(x, "x of nl.matmul", mask)
    yt = as_tile(y, "y of nl.matmul", mask)
    # nl.matmul is NKI's high-level matmul: an operand in PSUM (an nl.transpose result) is
    # copied to SBUF first, as NKI's compiler does (the Tensor engine reads SBUF only)
    if yt.buffer == "psum":
        yt = NTile.wrap(_ops.copy(yt.flat(source), yt.dtype, source), yt.shape)
    if xt.buffer == "psum":
        xt = NTile.wrap(_ops.copy(xt.flat(source), xt.dtype, source), xt.shape)
    if not transpose_x:
        tr = isa._transpose(xt, source)
        xt = NTile.wrap(_ops.copy(tr.flat(source), xt.dtype, source), tr.shape)
    return NTile.wrap(_ops.matmul(xt.flat(source), yt.flat(source), source),
                      None)


def transpose(x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
    from . import isa

    source = caller_source()
    r = isa._transpose(as_tile(x, "the data of nl.transpose", mask), source)
    if dtype is not None:
        r = NTile.wrap(_ops.copy(r.flat(source), torch_dtype(dtype), source), r.shape)
    return r


def broadcast_to(x: Any, shape: Any) -> Any:
    return x.broadcast_to(shape)


def where(condition: Any, x: Any, y: Any, dtype: Any = None, **_: Any) -> Any:
    raise error("nl.where is not supported yet by NeuronSim's NKI (use nisa.affine_select or "
                "arithmetic with a 0/1 mask)")


def device_print(*args: Any, **kw: Any) -> None:
    """Prints nothing: NeuronSim has no device printf (the values are in the outputs)."""


def __getattr__(name: str) -> Any:
    raise AttributeError(f"nki.language.{name} is not provided by NeuronSim's NKI yet")


def _resolve(op: Any) -> Any:
    return resolve_op(op)


_ = Arange, Grid, index_hbm, TileView, is_dst_first
