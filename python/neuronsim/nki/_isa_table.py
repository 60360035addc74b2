"""nki.isa instructions that run as the generic `ntile.isa` op: each call is one instruction of
runtime/program/Isa.def, by its nki.isa name, with its program-format fields; the runtime
checks its operands when the program loads, with the instruction's own rules and messages.

Calls take NKI 0.2+'s dst-first form (`nisa.max8(dst=..., src=...)`) and, where NKI's legacy
dialect had one, its return-value form (`vals = nisa.max8(src=...)`)."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..kernels import isa as _ki
from ..kernels import ops as _ops
from ..kernels.ir import Source, TileRegion, caller_source
from ..kernels.tracer import error
from ..kernels.values import TileView
from ._common import is_dst_first, resolve_op, torch_dtype
from ._index import as_tile
from ._tiles import NTile, is_tile, new_tile


def _bind(name: str, args: tuple[Any, ...], kw: dict[str, Any], names: list[str],
          dst_first: bool = True) -> dict[str, Any]:
    """NKI's parameters by name: positional arguments start at dst in NKI 0.2+ kernels (or
    when dst is given by name), after it in legacy kernels; with dst_first=False the order
    is `names` in both dialects."""
    order = names if (not dst_first or is_dst_first() or "dst" in kw) else names[1:]
    if len(args) > len(order):
        raise error(f"nisa.{name} takes at most {len(order)} positional arguments "
                    f"({', '.join(order)}), got {len(args)}", caller_source())
    vals = dict(zip(order, args))
    for k, v in kw.items():
        if k == "name":
            continue
        if k not in names:
            raise error(f"nisa.{name} got an unexpected argument {k!r}", caller_source())
        if k in vals:
            raise error(f"nisa.{name} got argument {k!r} twice", caller_source())
        vals[k] = v
    return vals


def _src(x: Any, what: str, source: Source) -> TileView:
    if x is None:
        raise error(f"{what} is required", source)
    return as_tile(x, what).flat(source)


def _written(x: Any, what: str, source: Source) -> TileView:
    """A source the instruction writes (a reduce result): the tile region itself (a strided
    view is an error, never a gathered copy the result would be lost in)."""
    t = as_tile(x, what)
    if not isinstance(t, NTile):
        t = NTile.wrap(t, None)
    return TileView(t.region(source))


def _target(dst: Any, shape: tuple[int, ...], dtype: torch.dtype, source: Source
            ) -> tuple[NTile, TileView]:
    """dst (a tile view the instruction writes in place), or a new SBUF tile (legacy)."""
    if dst is None:
        t = new_tile(shape, dtype, "sbuf", source)
    else:
        t = as_tile(dst, "dst")
        if not isinstance(t, NTile):
            t = NTile.wrap(t, None)
    return t, TileView(t.region(source))


def _alu(op: Any, what: str) -> str:
    return _ki._alu(resolve_op(op), what)


def _cmd(reduce_cmd: Any, default: str) -> str:
    return default if reduce_cmd is None else str(reduce_cmd)


def _number(x: Any, what: str, source: Source) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise error(f"{what} must be a number, got {type(x).__name__}", source)
    return float(x)


def _run(name: str, srcs: list[TileView], target: TileView, fields: dict[str, Any],
         source: Source, written: tuple[int, ...] = (), engine: str | None = None) -> None:
    _ops.instruction(name, srcs, target, fields, source, engine=engine, written=written)


def _result(dst: Any, t: NTile) -> Any:
    return t if dst is None else None


# -- Vector engine: tensor_scalar with a reduce, cumulative registers --------------------------


def tensor_scalar_reduce(*args: Any, **kw: Any) -> Any:
    """dst = data <op0> operand0 and reduce_res = reduce_op over each partition's results."""
    source = caller_source()
    a = _bind("tensor_scalar_reduce", args, kw,
              ["dst", "data", "op0", "operand0", "reduce_op", "reduce_res", "reverse0",
               "reduce_cmd", "reduce_init", "reduce_res_negate", "dtype", "mask"])
    data = as_tile(a.get("data"), "the data of tensor_scalar_reduce", a.get("mask"))
    op0, operand0 = resolve_op(a.get("op0")), a.get("operand0")
    fields: dict[str, Any] = {}
    if op0 is not None and getattr(op0, "act", None) == "abs":
        # nl.abs as op0 (|data|, operand0 ignored by NKI's kernels, which pass 0.0): abs_max
        # with 0 is |data| exactly.
        if operand0 not in (0, 0.0):
            raise error("tensor_scalar_reduce with op0=nl.abs takes operand0=0.0, got "
                        f"{operand0!r}", source)
        fields["alu"] = "abs_max"
    else:
        fields["alu"] = _alu(op0, "the op0 of tensor_scalar_reduce")
    fields["alu2"] = _alu(a.get("reduce_op"), "the reduce_op of tensor_scalar_reduce")
    fields["reduce_cmd"] = _cmd(a.get("reduce_cmd"), "reset_reduce")
    if a.get("reverse0"):
        fields["reverse"] = True
    init = a.get("reduce_init")
    if init is not None and not isinstance(init, (int, float)):
        raise error("tensor_scalar_reduce's reduce_init as a tile is not supported by "
                    "NeuronSim's NKI yet (a number is)", source)
    srcs = [data.flat(source)]
    if is_tile(operand0):
        fields["scale_tile"] = True
        srcs.append(_src(operand0, "the operand0 of tensor_scalar_reduce", source))
        imm0 = 0.0
    else:
        imm0 = _number(operand0, "the operand0 of tensor_scalar_reduce", source)
    fields["imm"] = [imm0, float(init or 0.0)]
    rr = a.get("reduce_res")
    if rr is None:
        raise error("tensor_scalar_reduce needs reduce_res (a [P, 1] tile for the reduction)",
                    source)
    res = _written(rr, "the reduce_res of tensor_scalar_reduce", source)
    srcs.append(res)
    dtype = torch_dtype(a["dtype"]) if a.get("dtype") is not None else data.dtype
    t, target = _target(a.get("dst"), data.shape, dtype, source)
    _run("tensor_scalar_reduce", srcs, target, fields, source, written=(len(srcs) - 1,))
    if a.get("reduce_res_negate"):
        # one more Vector instruction: the registers' result negated into reduce_res
        _ops.assign(res, _ops.elementwise("mul", res, -1.0, source=source), source)
    return _result(a.get("dst"), t)


def tensor_scalar_cumulative(*args: Any, **kw: Any) -> Any:
    """A running reduce along each partition: reg = op1(op0(src, imm0), reg); dst = reg."""
    source = caller_source()
    a = _bind("tensor_scalar_cumulative", args, kw,
              ["dst", "src", "op0", "op1", "imm0", "imm1", "reduce_cmd", "reverse0"])
    src = as_tile(a.get("src"), "the src of tensor_scalar_cumulative")
    fields: dict[str, Any] = {
        "alu": _alu(a.get("op0"), "the op0 of tensor_scalar_cumulative"),
        "alu2": _alu(a.get("op1"), "the op1 of tensor_scalar_cumulative"),
        "reduce_cmd": _cmd(a.get("reduce_cmd"), "reset_reduce"),
        "imm": [_number(a.get("imm0"), "imm0 of tensor_scalar_cumulative", source),
                float(a.get("imm1") or 0.0)],
    }
    if a.get("reverse0"):
        fields["reverse"] = True
    t, target = _target(a.get("dst"), src.shape, src.dtype, source)
    _run("tensor_scalar_cumulative", [src.flat(source)], target, fields, source)
    return _result(a.get("dst"), t)


# -- top-k helpers: max8, nc_find_index8, nc_match_replace8 -------------------------------------


def max8(*args: Any, **kw: Any) -> Any:
    """dst[p, 0:8] = the 8 largest values of src[p, :], descending."""
    source = caller_source()
    a = _bind("max8", args, kw, ["dst", "src", "dtype", "mask"])
    src = as_tile(a.get("src"), "the src of max8", a.get("mask"))
    dtype = torch_dtype(a["dtype"]) if a.get("dtype") is not None else src.dtype
    t, target = _target(a.get("dst"), (src.np, 8), dtype, source)
    _run("max8", [src.flat(source)], target, {}, source)
    return _result(a.get("dst"), t)


def nc_find_index8(*args: Any, **kw: Any) -> Any:
    """dst[p, k] = the index of the first element of data[p, :] equal to vals[p, k]."""
    source = caller_source()
    a = _bind("nc_find_index8", args, kw, ["dst", "data", "vals", "dtype", "mask"])
    data = as_tile(a.get("data"), "the data of nc_find_index8", a.get("mask"))
    vals = _src(a.get("vals"), "the vals of nc_find_index8", source)
    t, target = _target(a.get("dst"), (data.np, 8), torch.int32, source)
    _run("nc_find_index8", [data.flat(source), vals], target, {}, source)
    return _result(a.get("dst"), t)


def nc_match_replace8(*args: Any, **kw: Any) -> Any:
    """dst = data with the first element equal to each of vals[p, 0:8] replaced by imm; with
    dst_idx, also the indices of those elements (nc_find_index8 first, one more instruction)."""
    source = caller_source()
    a = _bind("nc_match_replace8", args, kw,
              ["dst", "data", "vals", "imm", "dst_idx", "dtype", "mask"])
    data = as_tile(a.get("data"), "the data of nc_match_replace8", a.get("mask"))
    vals = _src(a.get("vals"), "the vals of nc_match_replace8", source)
    if a.get("dst_idx") is not None:
        _, idx = _target(a["dst_idx"], (data.np, 8), torch.int32, source)
        _run("nc_find_index8", [data.flat(source), vals], idx, {}, source)
    imm = _number(a.get("imm"), "the imm of nc_match_replace8", source)
    dtype = torch_dtype(a["dtype"]) if a.get("dtype") is not None else data.dtype
    t, target = _target(a.get("dst"), data.shape, dtype, source)
    _run("nc_match_replace8", [data.flat(source), vals], target, {"imm": [imm, 0.0]}, source)
    return _result(a.get("dst"), t)


# -- selection and masks -----------------------------------------------------------------------


def tensor_copy_predicated(*args: Any, **kw: Any) -> Any:
    """dst = src where predicate != 0 (reverse_pred: where it is 0); dst keeps the rest."""
    source = caller_source()
    a = _bind("tensor_copy_predicated", args, kw,
              ["dst", "src", "predicate", "mask", "dtype", "reverse_pred"])
    src = as_tile(a.get("src"), "the src of tensor_copy_predicated", a.get("mask"))
    pred = _src(a.get("predicate"), "the predicate of tensor_copy_predicated", source)
    if a.get("dst") is None:
        raise error("tensor_copy_predicated writes dst in place: pass dst", source)
    fields = {"reverse": True} if a.get("reverse_pred") else {}
    t, target = _target(a["dst"], src.shape, src.dtype, source)
    _run("tensor_copy_predicated", [src.flat(source), pred], target, fields, source)
    return None


def _affine(pattern: Any, offset: Any, channel_multiplier: Any, what: str, source: Source
            ) -> tuple[list[tuple[int, int]], int, int]:
    """NKI's [[step, num], ...] pattern (outermost first), offset and channel multiplier."""
    try:
        dims = [(int(s), int(n)) for s, n in pattern]
    except (TypeError, ValueError):
        raise error(f"the pattern of {what} is a list of [step, num] pairs, got {pattern!r}",
                    source) from None
    if not dims or any(n <= 0 for _, n in dims):
        raise error(f"the pattern of {what} needs positive sizes, got {pattern!r}", source)
    return dims, int(offset), int(channel_multiplier or 0)


def _affine_pieces(dims: list[tuple[int, int]], width: int, what: str, source: Source
                   ) -> list[tuple[int, int, int]]:
    """The pattern as (column start, columns, free step) pieces of a row: one when its dims
    flatten to one step (each dim's step = the next one's x its size), else one per index of
    the outer dims (one instruction each)."""
    if math.prod(n for _, n in dims) != width:
        raise error(f"the pattern of {what} covers {math.prod(n for _, n in dims)} elements "
                    f"per partition, dst has {width}", source)
    inner = len(dims) - 1
    while inner > 0 and dims[inner - 1][0] == dims[inner][0] * dims[inner][1]:
        inner -= 1
    step, cols = dims[-1][0], math.prod(n for _, n in dims[inner:])
    pieces = []
    import itertools

    for idx in itertools.product(*(range(n) for _, n in dims[:inner])):
        base = sum(i * s for i, (s, _) in zip(idx, dims))
        start = sum(i * math.prod(n for _, n in dims[k + 1:]) for k, i in enumerate(idx))
        pieces.append((start, cols, base, step))
    return pieces


def iota(*args: Any, **kw: Any) -> Any:
    """dst[p, ...] = offset + p * channel_multiplier + the pattern's steps (GpSimd)."""
    source = caller_source()
    a = _bind("iota", args, kw, ["dst", "pattern", "offset", "channel_multiplier", "dtype",
                                 "mask"])
    if a.get("dst") is None:
        raise error("nisa.iota writes a dst tile: pass dst (NKI 0.2+'s form)", source)
    t = as_tile(a["dst"], "the dst of iota")
    dims, offset, cm = _affine(a.get("pattern"), a.get("offset", 0), a.get("channel_multiplier"),
                               "iota", source)
    _write_pieces("iota", t, dims, offset, cm, [], {}, source)
    return None


def _columns(region: TileRegion, start: int, cols: int) -> TileView:
    return TileView(TileRegion(region.tile, region.p0, region.np, region.c0 + start, cols))


def _write_pieces(name: str, t: NTile, dims: list[tuple[int, int]], offset: int, cm: int,
                  srcs: list[NTile], fields: dict[str, Any], source: Source) -> None:
    region = t.region(source)
    for start, cols, base, step in _affine_pieces(dims, region.width, f"nisa.{name}", source):
        views = [_columns(s.region(source), start, cols) for s in srcs]
        f = dict(fields, affine=[offset + base, cm, step])
        _run(name, views, _columns(region, start, cols), f, source)


def affine_select(*args: Any, **kw: Any) -> Any:
    """dst = (offset + p * channel_multiplier + pattern index) <cmp_op> 0 ? on_true_tile :
    on_false_value, the mask computed on the fly (GpSimd)."""
    source = caller_source()
    a = _bind("affine_select", args, kw,
              ["dst", "pattern", "offset", "channel_multiplier", "on_true_tile",
               "on_false_value", "cmp_op", "dtype", "mask"])
    if a.get("dst") is None:
        raise error("nisa.affine_select writes a dst tile: pass dst (NKI 0.2+'s form)", source)
    t = as_tile(a["dst"], "the dst of affine_select")
    on_true = as_tile(a.get("on_true_tile"), "the on_true_tile of affine_select")
    if on_true.np != t.np or on_true.free_size() != t.free_size():
        raise error(f"affine_select's on_true_tile {list(on_true.shape)} and dst "
                    f"{list(t.shape)} differ in shape", source)
    cmp = _alu(a.get("cmp_op") if a.get("cmp_op") is not None else _ge(), "the cmp_op of "
               "affine_select")
    dims, offset, cm = _affine(a.get("pattern"), a.get("offset", 0), a.get("channel_multiplier"),
                               "affine_select", source)
    fill = _number(a.get("on_false_value"), "the on_false_value of affine_select", source)
    if not on_true.contiguous():
        on_true = NTile.wrap(on_true.flat(source), None)
    _write_pieces("affine_select", t, dims, offset, cm, [on_true],
                  {"alu": cmp, "imm": [fill, 0.0]}, source)
    return None


def _ge() -> Any:
    from . import language as nl

    return nl.greater_equal


def range_select(*args: Any, **kw: Any) -> Any:
    """dst[p, f] = (f + range_start <comp_op0> bound0[p] and <comp_op1> bound1[p]) ?
    on_true_tile : on_false_value, with the max of each partition's results in reduce_res."""
    source = caller_source()
    a = _bind("range_select", args, kw,
              ["dst", "on_true_tile", "comp_op0", "comp_op1", "bound0", "bound1", "reduce_cmd",
               "reduce_res", "reduce_op", "range_start", "on_false_value", "dtype", "mask"])
    on_true = as_tile(a.get("on_true_tile"), "the on_true_tile of range_select")
    if str(a.get("reduce_cmd") or "reset_reduce") != "reset_reduce":
        raise error("range_select supports reduce_cmd=reset_reduce only in NeuronSim (the "
                    "accumulator registers are not carried between range_select calls)", source)
    op = a.get("reduce_op")
    if op is not None and _alu(op, "the reduce_op of range_select") != "max":
        raise error("range_select reduces with nl.maximum only", source)
    srcs = [on_true.flat(source), _src(a.get("bound0"), "bound0 of range_select", source),
            _src(a.get("bound1"), "bound1 of range_select", source)]
    if a.get("reduce_res") is not None:
        srcs.append(_written(a["reduce_res"], "the reduce_res of range_select", source))
    else:  # the instruction always writes its max somewhere: a scratch column
        srcs.append(TileView(new_tile((on_true.np, 1), torch.float32, "sbuf", source)
                             .region(source)))
    fields = {"alu": _alu(a.get("comp_op0"), "comp_op0 of range_select"),
              "alu2": _alu(a.get("comp_op1"), "comp_op1 of range_select"),
              "imm": [float(a.get("range_start") or 0),
                      _number(a.get("on_false_value", float("-inf")),
                              "the on_false_value of range_select", source)]}
    dtype = torch_dtype(a["dtype"]) if a.get("dtype") is not None else on_true.dtype
    t, target = _target(a.get("dst"), on_true.shape, dtype, source)
    _run("range_select", srcs, target, fields, source, written=(3,))
    return _result(a.get("dst"), t)


def select_reduce(*args: Any, **kw: Any) -> Any:
    """dst = predicate ? on_true : on_false (a number or a [P, 1] tile), the max of each
    partition's results in reduce_res."""
    source = caller_source()
    a = _bind("select_reduce", args, kw,
              ["dst", "predicate", "on_true", "on_false", "reduce_res", "reduce_cmd",
               "reduce_op", "reverse_pred", "dtype", "mask"])
    on_true = as_tile(a.get("on_true"), "the on_true of select_reduce")
    if str(a.get("reduce_cmd") or "reset_reduce") != "reset_reduce":
        raise error("select_reduce supports reduce_cmd=reset_reduce only in NeuronSim", source)
    op = a.get("reduce_op")
    if op is not None and _alu(op, "the reduce_op of select_reduce") != "max":
        raise error("select_reduce reduces with nl.maximum only", source)
    srcs = [_src(a.get("predicate"), "the predicate of select_reduce", source),
            on_true.flat(source)]
    fields: dict[str, Any] = {}
    on_false = a.get("on_false")
    if is_tile(on_false):
        fields["scale_tile"] = True
        srcs.append(_src(on_false, "the on_false of select_reduce", source))
        fields["imm"] = [0.0, 0.0]
    else:
        fields["imm"] = [_number(on_false, "the on_false of select_reduce", source), 0.0]
    if a.get("reverse_pred"):
        fields["reverse"] = True
    if a.get("reduce_res") is not None:
        srcs.append(_written(a["reduce_res"], "the reduce_res of select_reduce", source))
    else:
        srcs.append(TileView(new_tile((on_true.np, 1), torch.float32, "sbuf", source)
                             .region(source)))
    dtype = torch_dtype(a["dtype"]) if a.get("dtype") is not None else on_true.dtype
    t, target = _target(a.get("dst"), on_true.shape, dtype, source)
    _run("select_reduce", srcs, target, fields, source, written=(len(srcs) - 1,))
    return _result(a.get("dst"), t)


# -- partitions and gathers --------------------------------------------------------------------


def nc_stream_shuffle(*args: Any, **kw: Any) -> Any:
    """dst partition 32q + i = src partition 32q + shuffle_mask[i] in each quadrant q (255:
    dst's partition unchanged)."""
    source = caller_source()
    # NKI's order is (src, dst, shuffle_mask) in both dialects
    a = _bind("nc_stream_shuffle", args, kw, ["src", "dst", "shuffle_mask", "dtype", "mask"],
              dst_first=False)
    src = as_tile(a.get("src"), "the src of nc_stream_shuffle", a.get("mask"))
    mask = a.get("shuffle_mask")
    try:
        entries = [int(m) for m in mask]
    except (TypeError, ValueError):
        raise error(f"shuffle_mask is a list of 32 partition indices, got {mask!r}",
                    source) from None
    if a.get("dst") is None:
        raise error("nc_stream_shuffle writes dst in place: pass dst", source)
    t, target = _target(a["dst"], src.shape, src.dtype, source)
    _run("nc_stream_shuffle", [src.flat(source)], target, {"affine": entries}, source)
    return None


def nc_n_gather(*args: Any, **kw: Any) -> Any:
    """dst[p, j] = data[p, indices[p, j]] within each partition (GpSimd)."""
    source = caller_source()
    a = _bind("nc_n_gather", args, kw, ["dst", "data", "indices", "dtype", "mask"])
    data = as_tile(a.get("data"), "the data of nc_n_gather", a.get("mask"))
    idx = as_tile(a.get("indices"), "the indices of nc_n_gather")
    t, target = _target(a.get("dst"), idx.shape, data.dtype, source)
    _run("nc_n_gather", [data.flat(source), idx.flat(source)], target, {}, source)
    return _result(a.get("dst"), t)


def nonzero_with_count(*args: Any, **kw: Any) -> Any:
    """For partitions 0, 16, 32, ...: dst[p] = the indices (+ index_offset) of src[p]'s
    nonzero elements, padding_val up to its size, then their count (GpSimd)."""
    source = caller_source()
    a = _bind("nonzero_with_count", args, kw,
              ["dst", "src", "index_offset", "padding_val", "dtype", "mask"])
    src = as_tile(a.get("src"), "the src of nonzero_with_count", a.get("mask"))
    fields = {"imm": [float(a.get("index_offset") or 0),
                      float(-1 if a.get("padding_val") is None else a["padding_val"])]}
    t, target = _target(a.get("dst"), (src.np, src.free_size() + 1), torch.int32, source)
    _run("nonzero_with_count", [src.flat(source)], target, fields, source)
    return _result(a.get("dst"), t)


def local_gather(*args: Any, **kw: Any) -> Any:
    """Each GpSimd core's 16 partitions gather num_elem_per_idx-element runs of their own rows of
    src_buffer at the core's first num_valid_indices uint16 indices (partition first)."""
    source = caller_source()
    a = _bind("local_gather", args, kw, ["dst", "src_buffer", "index", "num_elem_per_idx",
                                          "num_valid_indices", "mask"])
    src = as_tile(a.get("src_buffer"), "the src_buffer of local_gather", a.get("mask"))
    idx = as_tile(a.get("index"), "the index of local_gather")
    per_elem = int(_number(1 if a.get("num_elem_per_idx") is None else a["num_elem_per_idx"],
                           "num_elem_per_idx", source))
    valid = a.get("num_valid_indices")
    valid = 16 * idx.free_size() if valid is None else int(_number(valid, "num_valid_indices",
                                                                     source))
    t, target = _target(a.get("dst"), (src.np, valid * per_elem), src.dtype, source)
    _run("local_gather", [src.flat(source), idx.flat(source)], target,
         {"imm": [float(per_elem), float(valid)]}, source)
    return _result(a.get("dst"), t)


def sequence_bounds(*args: Any, **kw: Any) -> Any:
    """For each segment id of one partition: the first index of its run of equal ids and one
    past its last ([1, 2, n]: starts, then ends); padding (id 0) gets n and -1 (GpSimd)."""
    source = caller_source()
    a = _bind("sequence_bounds", args, kw, ["dst", "segment_ids", "mask"])
    ids = as_tile(a.get("segment_ids"), "the segment_ids of sequence_bounds", a.get("mask"))
    t, target = _target(a.get("dst"), (ids.np, 2, ids.free_size()), ids.dtype, source)
    _run("sequence_bounds", [ids.flat(source)], target, {}, source)
    return _result(a.get("dst"), t)


def tensor_partition_reduce(*args: Any, **kw: Any) -> Any:
    """dst[0, :] = op over the partitions of data (GpSimd): add, max, min, and, or."""
    source = caller_source()
    a = _bind("tensor_partition_reduce", args, kw, ["dst", "op", "data", "dtype", "mask"])
    data = as_tile(a.get("data"), "the data of tensor_partition_reduce", a.get("mask"))
    dtype = torch_dtype(a["dtype"]) if a.get("dtype") is not None else data.dtype
    t, target = _target(a.get("dst"), (1, data.free_size()), dtype, source)
    _run("tensor_partition_reduce", [data.flat(source)], target,
         {"alu": _alu(a.get("op"), "the op of tensor_partition_reduce")}, source)
    return _result(a.get("dst"), t)


# -- random ------------------------------------------------------------------------------------


def dropout(*args: Any, **kw: Any) -> Any:
    """dst = data with each element zeroed with probability prob (a number or a [P, 1] tile);
    the numbers are NeuronSim's generator's, the drop rate prob's."""
    source = caller_source()
    a = _bind("dropout", args, kw, ["dst", "data", "prob", "dtype", "mask"])
    data = as_tile(a.get("data"), "the data of dropout", a.get("mask"))
    srcs = [data.flat(source)]
    prob = a.get("prob")
    stream = _next_dropout_stream()
    fields: dict[str, Any] = {}
    if is_tile(prob):
        fields["scale_tile"] = True
        srcs.append(_src(prob, "the prob of dropout", source))
        fields["imm"] = [0.0, float(stream)]
    else:
        fields["imm"] = [_number(prob, "the prob of dropout", source), float(stream)]
    t, target = _target(a.get("dst"), data.shape, data.dtype, source)
    _run("dropout", srcs, target, fields, source)
    return _result(a.get("dst"), t)


_DROPOUT_STREAMS = 1 << 20  # above the compiler's random streams (one per ntile.random)


def _next_dropout_stream() -> int:
    """A random stream of its own for each dropout instruction of a kernel."""
    from ..kernels.tracer import tracer

    t = tracer()
    n = getattr(t, "nki_dropout_streams", 0)
    t.nki_dropout_streams = n + 1
    return _DROPOUT_STREAMS + n
