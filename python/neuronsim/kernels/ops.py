"""Recording tile ops: data movement, the engines' instructions, and assignment into tiles
(which redirects the op that made a fresh result, as NKI's `out[...] = op(...)` does)."""

from __future__ import annotations

from typing import Any

import torch

from . import ir
from .ir import Aff, Source, TileRegion
from .tracer import error, tracer
from .values import HbmView, TileView, as_tile

FLOATS = (torch.float32, torch.bfloat16, torch.float16)
MATMUL_DTYPES = FLOATS


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def new_result(shape: tuple[int, int], dtype: torch.dtype, space: str, source: Source
               ) -> TileView:
    """A fresh tile for an op's result (a later `dst[...] = ` may redirect the op)."""
    t = tracer()
    tile = t.new_tile(shape[0], shape[1], dtype, space, source)
    return TileView.whole(tile)


def _finish(op: ir.Op, result: TileView) -> TileView:
    t = tracer()
    t.record(op)
    t.fresh = (op, result.region.tile)
    return result


def record(op: ir.Op) -> None:
    t = tracer()
    t.record(op)
    t.fresh = None


# -- data movement ------------------------------------------------------------------------


def _dims_of_view(view: HbmView, source: Source) -> tuple[int, int]:
    shape = view.shape
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, shape[0]
    free = 1
    for d in shape[1:]:
        free *= d
    return shape[0], free


def load(view: HbmView, dtype: torch.dtype | None, source: Source, transpose: bool = False
         ) -> TileView:
    t = tracer()
    dims = list(view.dims)
    if transpose:
        if len(dims) != 2:
            raise error("nl.load_transpose2d takes a 2-D HBM view", source)
        dims = [dims[1], dims[0]]
    p, f = _dims_of_view(HbmView(view.tensor, view.offset, dims), source)
    tile = t.new_tile(p, f, view.dtype, "sbuf", source)
    region = TileRegion(tile, 0, p, Aff(0), f)
    t.write(region, source)
    src = ir.HbmAccess(view.tensor, view.offset, dims if len(dims) > 1 else [(0, 1)] + dims)
    result = _finish(ir.DmaOp(source, src, None, region), TileView(region))
    if dtype is not None and dtype != view.dtype:
        result = copy(result, dtype, source)
    return result


def store(view: HbmView, value: Any, source: Source) -> None:
    t = tracer()
    tile = as_tile(value, "the value of nl.store")
    t.writable(view.tensor, source)
    p, f = _dims_of_view(view, source)
    if (p, f) != tile.shape:
        raise error(f"nl.store of a tile of shape {list(tile.shape)} into an HBM view of shape "
                    f"{list(view.shape)}", source)
    if tile.dtype != view.dtype:  # DMA does not convert: the Vector engine does first
        tile = copy(tile, view.dtype, source)
    t.read(tile.region, source)
    dims = view.dims if len(view.dims) > 1 else [(0, 1)] + list(view.dims)
    record(ir.DmaOp(source, tile.region, None, ir.HbmAccess(view.tensor, view.offset, dims)))
    view.tensor.written = True


def fill(view: TileView, value: float, source: Source) -> None:
    tracer().fill(view.region, value, source)
    tracer().fresh = None


# -- engines --------------------------------------------------------------------------------


def _check_engine_dtype(tile: TileView, engine: str, allowed: tuple[torch.dtype, ...],
                        source: Source) -> None:
    if tile.dtype not in allowed:
        names = ", ".join(_name(d) for d in allowed)
        raise error(f"the {engine} does not take {_name(tile.dtype)} tiles (it takes {names})",
                    source)


def check_start_partition(p0: int, n: int, what: str, source: Source) -> None:
    """The start partitions engines access (NKI architecture guide, trainium_inferentia2_arch:
    more than 64 partitions start at 0; 33-64 at 0 or 64; up to 32 at 0, 32, 64 or 96)."""
    if p0 == 0:
        return
    allowed = (0,) if n > 64 else (0, 64) if n > 32 else (0, 32, 64, 96)
    if p0 not in allowed:
        raise error(f"{what}: an engine access of {n} partitions starts at partition 0"
                    f"{'' if len(allowed) == 1 else ', ' + ', '.join(map(str, allowed[1:]))}, "
                    f"not {p0} (a tile slice elsewhere can only be moved by DMA)", source)


def _compute_source(tile: TileView, what: str, source: Source) -> None:
    check_start_partition(tile.region.p0, tile.region.np, what, source)
    tracer().read(tile.region, source)


def _result_dtype(srcs: list[TileView], dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    if any(s.buffer == "psum" for s in srcs):
        return torch.float32
    return srcs[0].dtype


def matmul(stationary: Any, moving: Any, source: Source) -> TileView:
    st = as_tile(stationary, "the stationary operand of nc_matmul")
    mv = as_tile(moving, "the moving operand of nc_matmul")
    for tile, name in ((st, "stationary"), (mv, "moving")):
        _check_engine_dtype(tile, "Tensor engine", MATMUL_DTYPES, source)
        if tile.buffer != "sbuf":
            raise error(f"the {name} operand of nc_matmul must be in SBUF, not "
                        f"{tile.buffer.upper()}", source)
        if tile.region.p0 != 0:
            raise error(f"the {name} operand of nc_matmul starts at partition "
                        f"{tile.region.p0}: the Tensor engine reads its operands from "
                        "partition 0 (row tiling is not supported yet)", source)
        _compute_source(tile, f"the {name} operand of nc_matmul", source)
    if st.shape[0] != mv.shape[0]:
        raise error(f"nc_matmul contracts over the partitions: stationary {list(st.shape)} and "
                    f"moving {list(mv.shape)} differ in partitions", source)
    if st.shape[1] > ir.MAX_PARTITIONS:
        raise error(f"the stationary operand has {st.shape[1]} columns; the Tensor engine "
                    f"takes at most {ir.MAX_PARTITIONS} (they become the result's partitions)",
                    source)
    n = mv.shape[1]
    if n * 4 > ir.PSUM_BANK_BYTES:
        raise error(f"nc_matmul of {n} moving columns: an accumulation group of {n} fp32 "
                    f"spans {-(-n * 4 // ir.PSUM_BANK_BYTES)} PSUM banks; one bank holds "
                    f"{ir.PSUM_BANK_BYTES // 4} fp32 per partition", source)
    result = new_result((st.shape[1], n), torch.float32, "psum", source)
    tracer().write(result.region, source)
    return _finish(ir.MatmulOp(source, st.region, mv.region, result.region), result)


ENGINES = {  # the engines that run each Vector-class op (runtime/simulator/Checks.cpp)
    "tensor_tensor": ("vector", "gpsimd"),
    "tensor_scalar": ("vector", "gpsimd"),
    "reduce": ("vector", "gpsimd"),
    "select": ("vector", "gpsimd"),
    "copy": ("vector", "scalar", "gpsimd"),
    "scan": ("vector",),
    "bn_stats": ("vector",),
    "bn_aggr": ("vector",),
}


def compute(kind: str, srcs: list[Any], attrs: dict[str, Any], shape: tuple[int, int],
            dtype: torch.dtype | None, source: Source, engine: str,
            allowed: tuple[torch.dtype, ...] | None = None) -> TileView:
    choice = attrs.get("engine")
    if choice is not None:
        if choice not in ENGINES.get(kind, ()):
            raise error(f"{kind} runs on the {' or '.join(ENGINES.get(kind, ('Scalar',)))} "
                        f"engine, not {choice!r}", source)
        engine = f"{choice.capitalize() if choice != 'gpsimd' else 'GpSimd'} engine"
    tiles = [as_tile(s, f"operand {i} of {kind}") for i, s in enumerate(srcs)]
    if choice == "gpsimd" and any(t.buffer == "psum" for t in tiles):
        raise error(f"{kind} on the GpSimd engine reads a PSUM tile: GpSimd cannot access "
                    "PSUM (use the Vector or Scalar engine)", source)
    for tile in tiles:
        if allowed is not None:
            _check_engine_dtype(tile, engine, allowed, source)
        _compute_source(tile, kind, source)
    out_dtype = _result_dtype(tiles, dtype)
    if allowed is not None and out_dtype not in allowed:
        raise error(f"the {engine} does not write {_name(out_dtype)} tiles", source)
    result = new_result(shape, out_dtype, "sbuf", source)
    tracer().write(result.region, source)
    return _finish(ir.ComputeOp(source, kind, [t.region for t in tiles], result.region, attrs),
                   result)


def copy(value: Any, dtype: torch.dtype | None, source: Source, engine: str | None = None
         ) -> TileView:
    tile = as_tile(value, "the source of a copy")
    return compute("copy", [tile], {"engine": engine}, tile.shape, dtype or tile.dtype, source,
                   "Vector engine")


def _row_operand(value: Any, name: str, rows: int, source: Source) -> TileView:
    """A per-partition operand of an activation: a [P, 1] float tile (one value per row)."""
    tile = as_tile(value, f"the {name} of activation")
    if tile.shape != (rows, 1):
        raise error(f"the {name} of activation is a float or a [{rows}, 1] tile (one value "
                    f"per partition), got a tile of shape {list(tile.shape)}", source)
    _check_engine_dtype(tile, "Scalar engine", FLOATS, source)
    _compute_source(tile, f"the {name} of activation", source)
    return tile


def activation(fn: str, data: Any, scale: Any, bias: Any, dtype: torch.dtype | None,
               source: Source, reduce_res: Any = None) -> TileView:
    """fn(data * scale + bias) on the Scalar engine; scale and bias are floats or [P, 1]
    tiles; with reduce_res ([P, 1] fp32) the engine also writes each row's sum there."""
    tile = as_tile(data, "the data of activation")
    rows = tile.shape[0]
    attrs: dict[str, Any] = {"fn": fn, "scale": 1.0, "bias": 0.0}
    extra: list[TileView] = []
    if isinstance(scale, bool) or not isinstance(scale, (int, float, TileView)):
        raise error(f"activation takes a float or [P, 1] tile scale, got {scale!r}", source)
    if isinstance(scale, TileView):
        extra.append(_row_operand(scale, "scale", rows, source))
        attrs["scale_tile"] = True
    else:
        attrs["scale"] = float(scale)
    if bias is None:
        bias = 0.0
    if isinstance(bias, bool) or not isinstance(bias, (int, float, TileView)):
        raise error(f"activation takes a float or [P, 1] tile bias, got {bias!r}", source)
    if isinstance(bias, TileView):
        extra.append(_row_operand(bias, "bias", rows, source))
        attrs["bias_tile"] = True
        attrs["bias"] = 1.0  # the bias tile's value as is (ntile: bias times the tile)
    else:
        attrs["bias"] = float(bias)
    if reduce_res is not None:
        sums = as_tile(reduce_res, "reduce_res")
        if sums.shape != (rows, 1) or sums.dtype != torch.float32:
            raise error(f"reduce_res receives the row sums: a [{rows}, 1] float32 tile, got "
                        f"{list(sums.shape)} {_name(sums.dtype)}", source)
        if sums.buffer != "sbuf" or sums.region.p0 != 0:
            raise error("reduce_res is an SBUF tile from partition 0", source)
        attrs["accum"] = sums.region
    result = compute("activation", [tile, *extra], attrs, tile.shape, dtype, source,
                     "Scalar engine", FLOATS)
    if reduce_res is not None:
        tracer().write(attrs["accum"], source)
    return result


def _broadcasts(a: TileView, b: TileView) -> tuple[int, int] | None:
    if a.shape == b.shape:
        return a.shape
    if a.shape[0] == b.shape[0] and b.shape[1] == 1:
        return a.shape
    if a.shape[0] == b.shape[0] and a.shape[1] == 1:
        return b.shape
    return None


def elementwise(op: str, x: Any, y: Any, reverse: bool = False,
                dtype: torch.dtype | None = None, source: Source | None = None,
                engine: str | None = None) -> TileView:
    x = as_tile(x, f"the first operand of {op}")
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return compute("tensor_scalar", [x],
                       {"op": op, "scalar": float(y), "reverse": reverse, "engine": engine},
                       x.shape, dtype, source, "Vector engine")
    y = as_tile(y, f"the second operand of {op}")
    shape = _broadcasts(x, y)
    if shape is None:
        raise error(f"{op} of tiles {list(x.shape)} and {list(y.shape)}: operands match or one "
                    "is a [partitions, 1] column broadcast along the free dimension", source)
    lhs, rhs = (y, x) if reverse else (x, y)
    if lhs.shape != shape:  # the broadcast column goes second
        if op not in ("add", "mul", "max", "min", "eq", "ne", "and", "or", "xor"):
            raise error(f"{op} with the broadcast [P, 1] column first is not supported; "
                        "put the full tile first", source)
        lhs, rhs = rhs, lhs
    return compute("tensor_tensor", [lhs, rhs], {"op": op, "engine": engine}, shape, dtype,
                   source, "Vector engine")


def reduce(op: str, data: Any, axis: Any, dtype: torch.dtype | None, source: Source,
           engine: str | None = None) -> TileView:
    tile = as_tile(data, f"the data of a {op} reduction")
    if axis not in (1, -1, (1,), [1]):
        raise error(f"reductions run along the free dimension (axis=1), got axis={axis!r}",
                    source)
    return compute("reduce", [tile], {"op": op, "engine": engine}, (tile.shape[0], 1), dtype,
                   source, "Vector engine")


def select(condition: TileView, on_true: Any, on_false: TileView, source: Source,
           dtype: torch.dtype | None, engine: str | None = None) -> TileView:
    on_true = as_tile(on_true, "on_true_tile")
    return compute("select", [condition, on_true, on_false], {"engine": engine}, on_true.shape,
                   dtype or on_true.dtype, source, "Vector engine")


def instruction(name: str, srcs: list[Any], target: TileView, fields: dict[str, Any],
                source: Source, engine: str | None = None, broadcast: tuple[int, ...] = (),
                written: tuple[int, ...] = ()) -> None:
    """One instruction of the ISA table by its name (ntile.isa), writing `target` in place:
    its program-format `fields`; the sources in `broadcast` are [P, 1] tiles read with free
    stride 0; those in `written` (a reduce result) are written, not read. The runtime checks
    the operands against the instruction's rules when the program loads."""
    tiles = [as_tile(s, f"operand {i} of {name}") for i, s in enumerate(srcs)]
    for i, tile in enumerate(tiles):
        if i in written:
            check_start_partition(tile.region.p0, tile.region.np, name, source)
        else:
            _compute_source(tile, name, source)
    check_start_partition(target.region.p0, target.region.np, name, source)
    attrs = {"name": name, "fields": fields, "broadcast": list(broadcast), "engine": engine}
    record(ir.ComputeOp(source, "isa", [t.region for t in tiles], target.region, attrs))
    t = tracer()
    t.write(target.region, source)
    for i in written:
        t.write(tiles[i].region, source)


# -- assignment -----------------------------------------------------------------------------


def _redirect(target: TileView, value: TileView, source: Source) -> ir.Op | None:
    """The op that made `value` when it is the newest, still unread fresh result: it then
    writes `target` instead (its own tile is dropped)."""
    t = tracer()
    fresh = getattr(t, "fresh", None)
    if fresh is None or not value.region.is_whole() or fresh[1] is not value.region.tile:
        return None
    op, tile = fresh
    if target.shape != value.shape:
        raise error(f"assigns a tile of shape {list(value.shape)} to a tile region of shape "
                    f"{list(target.shape)}", source)
    if not isinstance(op, ir.DmaOp):
        if isinstance(op, ir.MatmulOp) and target.region.p0 != 0:
            raise error("nc_matmul writes PSUM from partition 0; this region starts at "
                        f"partition {target.region.p0}", source)
        check_start_partition(target.region.p0, target.region.np, "the result", source)
    # Drop the fresh tile's allocation (the op right before it in the same scope).
    ops = t.scope.ops
    for i in range(len(ops) - 1, -1, -1):
        if isinstance(ops[i], ir.AllocOp) and ops[i].tile is tile:
            del ops[i]
            break
    t.scope.tiles.pop(tile.id, None)
    op.dst = target.region
    t.fresh = None
    return op


def _same_region(a: TileRegion, b: TileRegion) -> bool:
    return (a.tile is b.tile and a.p0 == b.p0 and a.np == b.np and a.width == b.width
            and a.c0.const == b.c0.const and a.c0.terms == b.c0.terms)


def assign(target: TileView, value: Any, source: Source) -> None:
    if isinstance(value, TileView) and _same_region(value.region, target.region):
        return  # `t[...] += x` assigns the updated view back to itself
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        fill(target, float(value), source)
        return
    value = as_tile(value, "the assigned value")
    t = tracer()
    fresh = t.fresh
    # A DMA does not convert: a load of another dtype is copied (converted) instead.
    redirectable = not (fresh is not None and isinstance(fresh[0], ir.DmaOp)
                        and value.dtype != target.dtype)
    if fresh is not None and isinstance(fresh[0], ir.MatmulOp) and (
            fresh[1] is value.region.tile):
        _matmul_target(target, source)
    op = _redirect(target, value, source) if redirectable else None
    if op is not None:
        t.write(target.region, source)
        return
    if value.shape != target.shape:
        raise error(f"assigns a tile of shape {list(value.shape)} to a tile region of shape "
                    f"{list(target.shape)}", source)
    op = copy(value, target.dtype, source)
    _redirect(target, op, source)
    t.write(target.region, source)


def _matmul_target(target: TileView, source: Source) -> None:
    if target.buffer != "psum" or target.dtype != torch.float32:
        raise error(f"nc_matmul writes fp32 PSUM tiles; the target is a {_name(target.dtype)} "
                    f"{target.buffer.upper()} tile", source)
    # PSUM tiles start at a bank (the compiler's allocation): the result's columns must not
    # cross a bank boundary (an accumulation group lives in one bank).
    per_bank = ir.PSUM_BANK_BYTES // 4
    r = target.region
    lo, hi = r.c0.bounds()
    if r.tile.free > per_bank and (not r.c0.is_const() or lo // per_bank != (
            hi + r.width - 1) // per_bank):
        where = f"columns [{lo}, {hi + r.width})" if r.c0.is_const() else (
            "columns that depend on a loop variable")
        raise error(f"nc_matmul into {where} of a PSUM tile of {r.tile.free} fp32 columns: a "
                    f"matmul's result stays in one PSUM bank of {per_bank} fp32 columns "
                    "(columns [512 b, 512 b + 512))", source)


def accumulate(target: TileView, value: Any, source: Source) -> None:
    """`target += value`: a matmul's fresh result accumulates in PSUM; anything else adds on
    the Vector engine."""
    t = tracer()
    if isinstance(value, TileView):
        fresh = getattr(t, "fresh", None)
        if fresh is not None and isinstance(fresh[0], ir.MatmulOp) and (
                fresh[1] is value.region.tile):
            _matmul_target(target, source)
            first = not target.region.tile.written
            op = _redirect(target, value, source)
            assert isinstance(op, ir.MatmulOp)
            if first:
                # Written first here: the first iteration of the loops between the tile's
                # allocation and this op overwrites, the others accumulate.
                op.first_loops = target.region.tile.scope.loops_to(t.scope)
                op.accumulate = False
            else:
                op.accumulate = True
            t.check_visible(target.region, source)
            target.region.tile.written = True
            return
    result = elementwise("add", target, value, source=source)
    _redirect(target, result, source)
    t.write(target.region, source)
