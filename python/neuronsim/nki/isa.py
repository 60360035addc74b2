"""nki.isa (`nisa`) on NeuronSim's kernel tracer: one engine instruction per call. In kernels
of `import nki` (NKI 0.2+) every call writes a `dst` given first (`nisa.dma_copy(dst=...,
src=...)`); in legacy kernels (`neuronxcc.nki`) calls return their result. Both forms are
accepted in both dialects where they cannot be confused."""

from __future__ import annotations

from typing import Any

import torch

from ..kernels import isa as _ki
from ..kernels import ops as _ops
from ..kernels.ir import Source, caller_source
from ..kernels.tracer import error, tracer
from ..kernels.values import HbmView, TileView
from ._common import resolve_op, torch_dtype
from ._index import as_hbm, as_tile
from ._tiles import NTile, binary, reduce_free
from ._tiles import is_tile as _is_tile


class engine:  # noqa: N801 (NKI's name)
    vector = "vector"
    gpsimd = "gpsimd"
    scalar = "scalar"
    activation = "scalar"
    tensor = "tensor"
    sync = "sync"
    unknown = None


# NKI's module-level engine names (`engine=nisa.vector_engine`)
vector_engine = engine.vector
gpsimd_engine = engine.gpsimd
scalar_engine = engine.scalar
activation_engine = engine.scalar
tensor_engine = engine.tensor
sync_engine = engine.sync
unknown_engine = engine.unknown


class reduce_cmd:  # noqa: N801
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"
    load_reduce = "load_reduce"


class oob_mode:  # noqa: N801
    error = "error"
    skip = "skip"


class dge_mode:  # noqa: N801
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"
    unknown = "unknown"


class matmul_perf_mode:  # noqa: N801
    none = "none"
    double_row = "double_row"
    double_row_gen3 = "double_row"


class nc_version:  # noqa: N801
    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine:  # noqa: N801
    """The DMA engine of a hardware-DGE transfer (dma_copy(..., engine=)): accepted, the
    simulator's queue assignment decides."""

    sync = "sync"
    activation = "activation"
    gpsimd = "gpsimd"
    unknown = None


def _unsupported(name: str, why: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise error(f"nisa.{name} is not supported by NeuronSim's NKI yet ({why})",
                    caller_source())

    call.__name__ = name
    return call


sendrecv = _unsupported("sendrecv", "transfers between the physical cores of a logical core")
core_barrier = _unsupported("core_barrier", "barriers between the physical cores of a logical "
                            "core")


def get_nc_version() -> int:
    target = getattr(tracer(), "target", "trn2")
    return {"trn1": 2, "trn2": 3, "trn3": 4}.get(target.split("-")[0], 3)


def _engine(e: Any) -> str | None:
    if e in (None, engine.unknown, engine.tensor, engine.sync):
        return None
    return e


def _dt(dtype: Any) -> torch.dtype | None:
    return None if dtype is None else torch_dtype(dtype)


def _finish(dst: Any, result: NTile, source: Source) -> Any:
    """Returns the result (legacy), or writes it into dst (NKI 0.2+)."""
    if dst is None:
        return result
    target = _as_dst(dst, source)
    if not target.contiguous():
        # a strided dst view (engines write contiguous rows): the result, converted to dst's
        # dtype, is scattered into it by an SBUF-to-SBUF DMA
        r = result
        if r.dtype != target.dtype:
            r = NTile.wrap(_ops.copy(result.flat(source), target.dtype, source), None)
        target.dma_from(r, source)
        return None
    _ops.assign(target.flat(source), result.flat(source), source)
    return None


def _as_dst(dst: Any, source: Source) -> NTile:
    if isinstance(dst, TileView):
        return NTile.wrap(dst, None)
    if not isinstance(dst, NTile):
        raise error(f"dst must be an SBUF/PSUM tile, got {type(dst).__name__}", source)
    return dst


# -- data movement -------------------------------------------------------------------------------


def dma_copy(dst: Any = None, src: Any = None, dst_rmw_op: Any = None, oob_mode: Any = None,
             dge_mode: Any = None, mask: Any = None, **_: Any) -> Any:
    """A DMA between HBM and SBUF (either way), or SBUF to SBUF."""
    source = caller_source()
    if dst_rmw_op is not None:
        raise error("dma_copy with dst_rmw_op (DMA compute) is not supported by NeuronSim's "
                    "NKI yet", source)
    if src is None:
        raise error("dma_copy takes src", source)
    if dst is None:  # legacy: returns a new SBUF tile
        from . import language as nl

        return nl.load(src, mask=mask)
    if isinstance(dst, (HbmView,)) or not _is_tile(dst):
        view = as_hbm(dst, "the dst of dma_copy", mask)
        if _is_tile(src):
            as_tile(src, "src").dma_to(view, source)
            return None
        s = as_hbm(src, "the src of dma_copy", mask)
        _hbm_to_hbm(view, s, source)
        return None
    target = _as_dst(dst, source)
    if _is_tile(src):
        target.dma_from(as_tile(src, "src"), source)
    else:
        target.dma_from(as_hbm(src, "the src of dma_copy", mask), source)
    return None


def _hbm_to_hbm(dst: HbmView, src: HbmView, source: Source) -> None:
    from ..kernels import ir

    t = tracer()
    t.writable(dst.tensor, source)
    t.record(ir.DmaOp(source, ir.HbmAccess(src.tensor, src.offset, list(src.dims)), None,
                      ir.HbmAccess(dst.tensor, dst.offset, list(dst.dims))))
    dst.tensor.written = True


def dma_transpose(dst: Any = None, src: Any = None, axes: Any = None, **_: Any) -> Any:
    source = caller_source()
    view = as_hbm(src, "the src of dma_transpose") if not _is_tile(src) else None
    dims = [d for d in view.dims if d[1] != 1] if view is not None else []
    if view is None or len(dims) < 2:
        raise error("dma_transpose of an HBM view of at least 2 dims (besides size-1 ones) "
                    "into SBUF is what NeuronSim's NKI supports", source)
    # src [rows, ..., cols] -> dst [cols (partitions), ..., rows]: the last dim goes on the
    # partitions, the first becomes the innermost (a DMA of the reordered pattern)
    moved = HbmView(view.tensor, view.offset, [dims[-1], *dims[1:-1], dims[0]])
    if dst is not None:
        _as_dst(dst, source).dma_from(moved, source)
        return None
    from ._tiles import new_tile

    t = new_tile(moved.shape, view.dtype, "sbuf", source)
    t.dma_from(moved, source)
    return t


# -- Tensor engine -------------------------------------------------------------------------------


def nc_matmul(*args: Any, **kw: Any) -> Any:
    """Tensor engine: stationary[K, M]^T @ moving[K, N] into fp32 PSUM [M, N]. NKI 0.2+:
    nc_matmul(dst, stationary, moving, accumulate=None) (None: the first write to a PSUM
    location overwrites, later ones accumulate); legacy: returns a new PSUM tile."""
    source = caller_source()
    names = ["dst", "stationary", "moving"]
    if len(args) >= 3 or "dst" in kw:
        vals = dict(zip(names, args))
    else:
        vals = dict(zip(names[1:], args))
    vals.update({k: v for k, v in kw.items() if k in names})
    dst = vals.get("dst")
    st = as_tile(vals.get("stationary"), "the stationary operand of nc_matmul")
    mv = as_tile(vals.get("moving"), "the moving operand of nc_matmul")
    if kw.get("is_transpose"):
        # the PE array's transpose: stationary^T, the moving tile being the identity that
        # passes it through (NeuronSim's nc_transpose is this same matmul by an identity)
        if mv.np != st.np or mv.free_size() != st.np:
            raise error(f"nc_matmul(is_transpose=True) passes stationary {list(st.shape)} "
                        f"through an identity moving tile [{st.np}, {st.np}], got "
                        f"{list(mv.shape)}", source)
    if kw.get("tile_position") or kw.get("tile_size"):
        raise error("nc_matmul row/column tiling (tile_position) is not supported by "
                    "NeuronSim's NKI yet", source)
    result = NTile.wrap(_ops.matmul(st.flat(source), mv.flat(source), source), None)
    if dst is None:
        return result
    target = _as_dst(dst, source)
    accumulate = kw.get("accumulate")
    region = target.flat(source)
    if accumulate is False:
        _ops.assign(region, result.flat(source), source)
        _mark_psum(target, source)
        return None
    if accumulate is None and _first_psum_write(target):
        _ops.assign(region, result.flat(source), source)
        _mark_psum(target, source)
        return None
    _ops.accumulate(region, result.flat(source), source)
    _mark_psum(target, source)
    return None


def _psum_key(t: NTile) -> tuple[int, int, int, int] | None:
    if not t.c0.is_const():
        return None
    return (t.p0, t.np, t.c0.const, t.free_size())


def _first_psum_write(t: NTile) -> bool:
    """Whether no matmul wrote this PSUM location yet (with symbolic columns: the tile)."""
    written = getattr(t.tile, "mm_written", None)
    key = _psum_key(t)
    if written is None:
        return not t.tile.written
    if key is None:
        return False
    p0, n, c0, w = key
    for q0, m, d0, v in written:
        if q0 < p0 + n and p0 < q0 + m and d0 < c0 + w and c0 < d0 + v:
            return False
    return True


def _mark_psum(t: NTile, source: Source) -> None:
    key = _psum_key(t)
    if key is None:
        return
    if not hasattr(t.tile, "mm_written"):
        t.tile.mm_written = []  # type: ignore[attr-defined]
    t.tile.mm_written.append(key)  # type: ignore[attr-defined]


def _transpose(x: NTile, source: Source) -> NTile:
    return NTile.wrap(_ki_transpose(x.flat(source), source), None)


def _ki_transpose(x: TileView, source: Source) -> TileView:
    p, f = x.shape
    if f > 128:
        raise error(f"nc_transpose of a tile with {f} columns: at most 128", source)
    if x.dtype not in _ops.MATMUL_DTYPES:
        raise error(f"the Tensor engine does not take {str(x.dtype).removeprefix('torch.')} "
                    "tiles", source)
    if x.buffer != "sbuf":
        raise error("nc_transpose on the Tensor engine reads an SBUF tile", source)
    identity = tracer().constant_tile(("identity", p, x.dtype), torch.eye(p, dtype=x.dtype),
                                      source)
    return _ops.matmul(x, TileView.whole(identity), source)


def nc_transpose(*args: Any, **kw: Any) -> Any:
    """data [P, F] transposed to [F, P] on the Tensor engine (into PSUM)."""
    source = caller_source()
    dst, data = _split(args, kw, ["dst", "data"])
    r = _transpose(as_tile(data, "the data of nc_transpose"), source)
    if dst is not None:
        target = _as_dst(dst, source)
        if target.buffer == "sbuf":  # the result goes through PSUM, then a copy
            r = NTile.wrap(_ops.copy(r.flat(source), target.dtype, source), None)
    return _finish(dst, r, source)


def _split(args: tuple[Any, ...], kw: dict[str, Any], names: list[str]
           ) -> tuple[Any, ...]:
    """(dst, rest...) from positional/keyword arguments: dst-first when dst is given by name
    or when one more positional argument than the legacy form is passed."""
    rest = names[1:]
    if "dst" in kw or (len(args) > len(rest)) or (args and len(rest) == len(args) and
                                                   _is_tile(args[0]) and _dst_first()):
        vals = dict(zip(names, args))
    else:
        vals = dict(zip(rest, args))
    for k in names:
        if k in kw:
            vals[k] = kw[k]
    return tuple(vals.get(k) for k in names)


def _dst_first() -> bool:
    from ._common import is_dst_first

    return is_dst_first()


# -- Vector / Scalar / GpSimd engines ------------------------------------------------------------


def tensor_copy(*args: Any, engine: Any = None, dtype: Any = None, mask: Any = None,
                **kw: Any) -> Any:
    source = caller_source()
    if args and not _is_tile(args[-1]) and len(args) >= 2 and not _dst_first():
        dtype, args = args[1], args[:1]  # legacy tensor_copy(src, dtype)
    dst, src = _split(args, kw, ["dst", "src"])
    s = as_tile(src, "the src of tensor_copy")
    out_dtype = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else s.dtype)
    r = NTile.wrap(_ops.copy(s.flat(source), out_dtype, source, engine=_engine(engine)),
                   s.shape)
    return _finish(dst, r, source)


def tensor_tensor(*args: Any, op: Any = None, dtype: Any = None, engine: Any = None,
                  mask: Any = None, **kw: Any) -> Any:
    source = caller_source()
    if op is None and args and not _is_tile(args[-1]) and not isinstance(args[-1], HbmView):
        op, args = args[-1], args[:-1]  # the op given positionally, after the tiles
    dst, data1, data2 = _split(args, kw, ["dst", "data1", "data2"])
    if op is None and "op" in kw:
        op = kw["op"]
    op = resolve_op(op)
    alu = _ki._alu(op, "tensor_tensor")
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else None)
    r = binary(alu, data1, data2, out, source, engine=_engine(engine))
    return _finish(dst, r, source)


def tensor_scalar(*args: Any, op0: Any = None, operand0: Any = None, reverse0: bool = False,
                  op1: Any = None, operand1: Any = None, reverse1: bool = False,
                  dtype: Any = None, engine: Any = None, mask: Any = None, **kw: Any) -> Any:
    source = caller_source()
    dst, data = _split(args[:2] if len(args) >= 2 and _is_tile(args[1]) else args[:1],
                       kw, ["dst", "data"])
    extra = args[2:] if len(args) >= 2 and _is_tile(args[1]) else args[1:]
    if extra:
        op0 = extra[0]
        if len(extra) > 1:
            operand0 = extra[1]
    x = as_tile(data, "the data of tensor_scalar")
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else None)
    r = _scalar_op(resolve_op(op0), x, operand0, reverse0, None if op1 is not None else out,
                   source, engine)
    if op1 is not None:
        r = _scalar_op(resolve_op(op1), r, operand1, reverse1, out, source, engine)
    return _finish(dst, r, source)


def _scalar_op(op: Any, x: NTile, operand: Any, reverse: bool, dtype: Any, source: Source,
               eng: Any) -> NTile:
    alu = _ki._alu(op, "tensor_scalar")
    if _is_tile(operand):
        col = as_tile(operand, "the operand of tensor_scalar")
        if reverse:
            return binary(alu, col.broadcast_to((col.np, x.free_size())) if False else col, x,
                          dtype, source, engine=_engine(eng))
        return binary(alu, x, col, dtype, source, engine=_engine(eng))
    if reverse:
        return binary(alu, float(operand), x, dtype, source, engine=_engine(eng))
    return binary(alu, x, float(operand), dtype, source, engine=_engine(eng))


def activation(*args: Any, op: Any = None, data: Any = None, bias: Any = None,
               scale: Any = 1.0, reduce_op: Any = None, reduce_res: Any = None,
               reduce_cmd: Any = None, dtype: Any = None, mask: Any = None, **kw: Any) -> Any:
    """Scalar engine: op(data * scale + bias); NKI 0.2+: activation(dst, op, data, ...)."""
    source = caller_source()
    dst = kw.get("dst")
    pos = list(args)
    if pos and _is_tile(pos[0]) and (dst is None) and (op is not None or len(pos) > 1 and
                                                      not _is_tile(pos[1]) or _dst_first()):
        if not (op is None and data is None and len(pos) == 2 and _is_tile(pos[1])
                and not _dst_first()):
            dst = pos.pop(0)
    if pos and op is None:
        op = pos.pop(0)
    if pos and data is None:
        data = pos.pop(0)
    if pos:
        bias = pos.pop(0)
    if pos:
        scale = pos.pop(0)
    op = resolve_op(op)
    x = as_tile(data, "the data of activation")
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else None)
    if not isinstance(op, _ki._Activation):
        raise error(f"activation takes a Scalar-engine function such as nl.exp, got {op!r}",
                    source)
    sc = scale.flat(source) if isinstance(scale, NTile) else scale
    bi = bias.flat(source) if isinstance(bias, NTile) else bias
    rr = reduce_res.flat(source) if isinstance(reduce_res, NTile) else reduce_res
    if reduce_res is not None and reduce_op is None:
        reduce_op = _add()
    r = _activation(op, x, bi, sc, reduce_op, rr, out, source)
    return _finish(dst, NTile.wrap(r, x.shape), source)


def _add() -> Any:
    from . import language as nl

    return nl.add


def _activation(op: Any, x: NTile, bias: Any, scale: Any, reduce_op: Any, reduce_res: Any,
                dtype: Any, source: Source) -> TileView:
    if reduce_op is not None and getattr(reduce_op, "alu", None) != "add":
        raise error(f"the Scalar engine reduces its rows with nl.add only, got {reduce_op!r}",
                    source)
    return _ops.activation(op.act, x.flat(source), scale, bias, dtype, source,
                           reduce_res=reduce_res)


def activation_reduce(*args: Any, **kw: Any) -> Any:
    return activation(*args, **kw)


def tensor_reduce(*args: Any, op: Any = None, data: Any = None, axis: Any = None,
                  dtype: Any = None, negate: bool = False, keepdims: bool = False,
                  engine: Any = None, mask: Any = None, **kw: Any) -> Any:
    source = caller_source()
    dst = kw.get("dst")
    pos = list(args)
    if pos and _is_tile(pos[0]):
        dst = pos.pop(0)
    if pos and op is None:
        op = pos.pop(0)
    if pos and data is None:
        data = pos.pop(0)
    if pos and axis is None:
        axis = pos.pop(0)
    alu = _ki._alu(resolve_op(op), "tensor_reduce")
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else None)
    r = reduce_free(alu, data, axis, out, keepdims, source, engine=_engine(engine),
                    negate=negate)
    return _finish(dst, r, source)


def memset(*args: Any, value: Any = None, dtype: Any = None, engine: Any = None,
           mask: Any = None, **kw: Any) -> Any:
    """dst-first: memset(dst, value); legacy: memset(shape, value, dtype) -> a new tile."""
    source = caller_source()
    dst = kw.get("dst")
    pos = list(args)
    if pos and _is_tile(pos[0]):
        dst = pos.pop(0)
    if dst is not None:
        if pos and value is None:
            value = pos.pop(0)
        _as_dst(dst, source).fill(float(value), source)
        return None
    shape = kw.get("shape", pos.pop(0) if pos else None)
    if pos and value is None:
        value = pos.pop(0)
    if pos and dtype is None:
        dtype = pos.pop(0)
    from . import language as nl

    return nl.full(shape, value, dtype=dtype)


def reciprocal(*args: Any, dtype: Any = None, mask: Any = None, **kw: Any) -> Any:
    source = caller_source()
    dst, data = _split(args, kw, ["dst", "data"])
    x = as_tile(data, "the data of reciprocal")
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else None)
    r = binary("div", 1.0, x, out, source)
    return _finish(dst, r, source)


def tensor_tensor_scan(*args: Any, initial: Any = None, op0: Any = None, op1: Any = None,
                       dtype: Any = None, mask: Any = None, **kw: Any) -> Any:
    """Vector engine: r[i] = (data0[i] <op0> r[i-1]) <op1> data1[i] along the free dim, r[-1] =
    initial (a number), in fp32."""
    source = caller_source()
    dst, data0, data1 = _split(args[:3] if len(args) >= 3 and _is_tile(args[2]) else args[:2],
                               kw, ["dst", "data0", "data1"])
    rest = list(args[3:] if len(args) >= 3 and _is_tile(args[2]) else args[2:])
    if rest and initial is None:
        initial = rest.pop(0)
    if rest and op0 is None:
        op0 = rest.pop(0)
    if rest and op1 is None:
        op1 = rest.pop(0)
    a = as_tile(data0, "data0 of tensor_tensor_scan", mask)
    b = as_tile(data1, "data1 of tensor_tensor_scan", mask)
    if a.shape != b.shape:
        raise error(f"tensor_tensor_scan of tiles {list(a.shape)} and {list(b.shape)}", source)
    srcs = [a.flat(source), b.flat(source)]
    start = 0.0
    if _is_tile(initial):  # one start value per partition: a [P, 1] tile
        init = as_tile(initial, "the initial tile of tensor_tensor_scan")
        if init.is_column_broadcast():
            init = init.column()
        if init.np != a.np or init.free_size() != 1:
            raise error(f"the initial tile of tensor_tensor_scan must be [{a.np}, 1] (one value "
                        f"per partition of the data), got {list(init.shape)}", source)
        srcs.append(init.flat(source))
    elif initial is not None:
        start = float(initial)
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else None)
    attrs = {"op0": _ki._alu(resolve_op(op0), "tensor_tensor_scan"),
             "op1": _ki._alu(resolve_op(op1), "tensor_tensor_scan"),
             "initial": start, "engine": None}
    r = _ops.compute("scan", srcs, attrs, srcs[0].shape, out, source, "Vector engine",
                     _ops.FLOATS)
    return _finish(dst, NTile.wrap(r, a.shape), source)


BN_STATS_FMAX = 512  # nl.tile_size.bn_stats_fmax: free elements per bn_stats call


def bn_stats(*args: Any, dtype: Any = None, mask: Any = None, **kw: Any) -> Any:
    """Vector engine: per partition, the count, mean and mean-centred sum of squares of the
    even-indexed then the odd-indexed elements of data ([P, F], F <= 512) into [P, 6] (fp32
    unless dtype says otherwise); bn_aggr combines them."""
    source = caller_source()
    dst, data = _split(args, kw, ["dst", "data"])
    x = as_tile(data, "the data of bn_stats", mask)
    if x.free_size() > BN_STATS_FMAX:
        raise error(f"bn_stats of {x.free_size()} elements per partition: at most "
                    f"{BN_STATS_FMAX} (nl.tile_size.bn_stats_fmax); call it per chunk and "
                    "combine the results with bn_aggr", source)
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else torch.float32)
    flat = x.flat(source)
    r = _ops.compute("bn_stats", [flat], {"engine": None}, (flat.shape[0], 6), out, source,
                     "Vector engine", _ops.FLOATS)
    return _finish(dst, NTile.wrap(r, None), source)


def bn_aggr(*args: Any, dtype: Any = None, mask: Any = None, **kw: Any) -> Any:
    """Vector engine: the mean and population variance ([P, 2]) of each partition's bn_stats
    results held side by side in data ([P, 6 k])."""
    source = caller_source()
    dst, data = _split(args, kw, ["dst", "data"])
    x = as_tile(data, "the data of bn_aggr", mask)
    if x.free_size() % 6 != 0:
        raise error(f"bn_aggr reads bn_stats results, 6 values each; data has "
                    f"{x.free_size()} per partition", source)
    out = _dt(dtype) or (_as_dst(dst, source).dtype if dst is not None else torch.float32)
    flat = x.flat(source)
    r = _ops.compute("bn_aggr", [flat], {"engine": None}, (flat.shape[0], 2), out, source,
                     "Vector engine", _ops.FLOATS)
    return _finish(dst, NTile.wrap(r, None), source)


# the instructions without an op of their own: ntile.isa (the ISA table's generic op)
from ._isa_table import (  # noqa: E402, F401 (nki.isa's names)
    affine_select,
    dropout,
    iota,
    local_gather,
    max8,
    nc_find_index8,
    nc_match_replace8,
    nc_n_gather,
    nc_stream_shuffle,
    nonzero_with_count,
    range_select,
    select_reduce,
    sequence_bounds,
    tensor_copy_predicated,
    tensor_partition_reduce,
    tensor_scalar_cumulative,
    tensor_scalar_reduce,
)

def __getattr__(name: str) -> Any:
    if name == "constants":
        from . import isa_constants

        return isa_constants
    raise AttributeError(f"nki.isa.{name} is not provided by NeuronSim's NKI yet")
