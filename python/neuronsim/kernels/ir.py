"""The traced form of a kernel: affine offsets, HBM tensors, tiles, loops and tile ops, and
their emission as an ntile function (MLIR text) that convert-ntorch-to-ntile inlines."""

from __future__ import annotations

import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Any

import torch

from ..errors import NeuronCompileError

MAX_PARTITIONS = 128
PSUM_BANK_BYTES = 2048  # per partition: 512 fp32 accumulators

MLIR_TYPES = {
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "ui8",
    torch.uint32: "ui32",  # NKI's uint32: indices (max8 / nc_find_index8), counts
    torch.uint16: "ui16",  # NKI's uint16: local_gather's indices
    torch.float8_e4m3fn: "f8E4M3FN",  # NKI's float8_e4m3fn (OCP: no inf, max 448)
    torch.float8_e5m2: "f8E5M2",  # NKI's float8_e5m2
    torch.bool: "i1",
}


class KernelError(NeuronCompileError):
    """A kernel the language cannot take: the message starts with the kernel's source line."""


@dataclass(frozen=True)
class Source:
    file: str
    line: int
    code: str = ""

    def __str__(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Directories of the language's own code (neuronsim.nki adds its own): a kernel's source line
# is the first frame outside them.
LANGUAGE_DIRS = {_PACKAGE_DIR}


_IN_LANGUAGE: dict[str, bool] = {}


def _in_language(filename: str) -> bool:
    found = _IN_LANGUAGE.get(filename)
    if found is None:
        found = os.path.dirname(os.path.abspath(filename)) in LANGUAGE_DIRS
        _IN_LANGUAGE[filename] = found
    return found


def caller_source() -> Source:
    """The first frame outside this package: the kernel's line that called the language."""
    frame = sys._getframe(1)
    while frame is not None and _in_language(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return Source("<unknown>", 0)
    import linecache

    code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return Source(frame.f_code.co_filename, frame.f_lineno, code)


def mlir_type(dtype: torch.dtype) -> str:
    name = MLIR_TYPES.get(dtype)
    if name is None:
        raise NeuronCompileError(f"dtype {dtype} is not supported in kernels")
    return name


def dtype_bytes(dtype: torch.dtype) -> int:
    return dtype.itemsize


def f64(value: float) -> str:
    """An MLIR f64 literal (the bit pattern for non-finite values)."""
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    return "%.17e" % value


def attr_value(value: Any) -> str:
    """An MLIR attribute of a Python instruction-field value: a bool, int, float, str or a
    list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{f64(value)} : f64"
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(attr_value(v) for v in value) + "]"
    raise TypeError(f"no MLIR attribute for {value!r}")


# ---------------------------------------------------------------------------------------------
# Affine values of loop induction variables


class Aff:
    """const + sum(coef * iv): an index that varies with enclosing kernel loops."""

    __slots__ = ("const", "terms")

    def __init__(self, const: int = 0, terms: dict[Loop, int] | None = None) -> None:
        self.const = const if type(const) is int else int(const)
        self.terms = {k: v for k, v in terms.items() if v != 0} if terms else {}

    @staticmethod
    def of(value: Any) -> Aff:
        if type(value) is Aff:
            return value
        if type(value) is int:
            return Aff(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"a kernel index must be an int or a loop variable, got {value!r}")
        return Aff(value)

    def is_const(self) -> bool:
        return not self.terms

    def __add__(self, other: Any) -> Aff:
        if type(other) is int:
            if not self.terms:
                return Aff(self.const + other)
            r = Aff(self.const + other)
            r.terms = dict(self.terms)
            return r
        if not isinstance(other, (Aff, int)):
            return NotImplemented
        o = Aff.of(other)
        if not o.terms and not self.terms:
            return Aff(self.const + o.const)
        terms = dict(self.terms)
        for k, v in o.terms.items():
            terms[k] = terms.get(k, 0) + v
        return Aff(self.const + o.const, terms)

    __radd__ = __add__

    def __neg__(self) -> Aff:
        return Aff(-self.const, {k: -v for k, v in self.terms.items()})

    def __sub__(self, other: Any) -> Aff:
        if not isinstance(other, (Aff, int)):
            return NotImplemented
        return self + (-Aff.of(other))

    def __rsub__(self, other: Any) -> Aff:
        return Aff.of(other) - self

    def __mul__(self, other: Any) -> Aff:
        if isinstance(other, Aff):
            if other.is_const():
                other = other.const
            elif self.is_const():
                return other * self.const
            else:
                raise KernelError(f"{caller_source()}: a product of two loop variables is "
                                  "not affine")
        if isinstance(other, bool) or not isinstance(other, int):
            return NotImplemented
        return Aff(self.const * other, {k: v * other for k, v in self.terms.items()})

    __rmul__ = __mul__

    def __index__(self) -> int:
        if self.is_const():
            return self.const
        from .tracer import _current

        if _current and _current[-1].dialect == "legacy":
            # neuronsim.nki: a legacy loop whose variable is needed as an int (a list index)
            # is unrolled; the kernel is traced again
            from ..nki._index import Unroll

            raise Unroll(list(self.terms))
        raise KernelError(f"{caller_source()}: a loop variable of nl.affine_range / "
                          "nl.sequential_range is symbolic: use it in indices, not as a Python int "
                          "(use range() for a loop unrolled at trace time)")

    def __repr__(self) -> str:
        parts = [str(self.const)] + [f"{v}*{k.name}" for k, v in self.terms.items()]
        return " + ".join(parts)

    def bounds(self) -> tuple[int, int]:
        """Smallest and largest value over the loops' iterations."""
        lo = hi = self.const
        for loop, coef in self.terms.items():
            span = coef * (loop.count - 1)
            lo += min(0, span)
            hi += max(0, span)
        return lo, hi


# ---------------------------------------------------------------------------------------------
# Values


class Scope:
    """The kernel's top level or a loop body: where tiles are allocated and ops recorded."""

    def __init__(self, parent: Scope | None, loop: Loop | None) -> None:
        self.parent = parent
        self.loop = loop
        self.ops: list[Op] = []
        self.tiles: dict[int, Tile] = {}  # by id (insertion order)

    def encloses(self, other: Scope) -> bool:
        s: Scope | None = other
        while s is not None:
            if s is self:
                return True
            s = s.parent
        return False

    def loops_to(self, inner: Scope) -> list[Loop]:
        """The loops between this scope (exclusive) and `inner` (inclusive), outermost first."""
        loops = []
        s: Scope | None = inner
        while s is not None and s is not self:
            if s.loop is not None:
                loops.append(s.loop)
            s = s.parent
        return loops[::-1]


class Loop:
    _counter = 0

    def __init__(self, count: int, sequential: bool, source: Source) -> None:
        Loop._counter += 1
        self.name = f"i{Loop._counter}"
        self.count = count
        self.sequential = sequential
        self.source = source
        self.scope: Scope | None = None


class HbmTensor:
    """A tensor in HBM: a kernel argument or an output made by nl.ndarray(buffer=nl.shared_hbm)."""

    def __init__(self, name: str, shape: tuple[int, ...], dtype: torch.dtype,
                 is_output: bool, source: Source | None = None) -> None:
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        self.is_output = is_output
        self.source = source
        self.written = False

    def mlir_type(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return f"memref<{dims + 'x' if dims else ''}{mlir_type(self.dtype)}, #ntile.mem<hbm>>"


class Tile:
    """An SBUF or PSUM tile [partitions, free], allocated in a scope."""

    _counter = 0

    def __init__(self, partitions: int, free: int, dtype: torch.dtype, space: str,
                 scope: Scope, source: Source) -> None:
        Tile._counter += 1
        self.id = Tile._counter
        self.partitions = partitions
        self.free = free
        self.dtype = dtype
        self.space = space
        self.scope = scope
        self.source = source
        self.written = False

    def mlir_type(self) -> str:
        return (f"memref<{self.partitions}x{self.free}x{mlir_type(self.dtype)}, "
                f"#ntile.mem<{self.space}>>")

    def bytes_per_partition(self) -> int:
        return self.free * dtype_bytes(self.dtype)


@dataclass
class TileRegion:
    """Partitions [p0, p0 + np) and columns [c0, c0 + width) of a tile."""

    tile: Tile
    p0: int
    np: int
    c0: Aff
    width: int

    def is_whole(self) -> bool:
        return (self.p0 == 0 and self.np == self.tile.partitions and self.c0.is_const()
                and self.c0.const == 0 and self.width == self.tile.free)


@dataclass
class HbmAccess:
    """Elements of an HBM tensor: offset (affine) and [stride, size] pairs, outermost first."""

    tensor: HbmTensor
    offset: Aff
    dims: list[tuple[int, int]]


@dataclass
class TileAccess:
    """Elements of an SBUF/PSUM tile through a DMA pattern (partition dim first): offset
    (affine, in elements of the tile's [partitions, free] layout) and [stride, size] pairs."""

    tile: Tile
    offset: Aff
    dims: list[tuple[int, int]]


@dataclass
class ConstantTensor:
    """A constant HBM buffer (identity matrices, masks, fill values) made at trace time."""

    name: str
    value: torch.Tensor  # contiguous, of the buffer's dtype and shape

    def mlir_type(self) -> str:
        dims = "x".join(str(d) for d in self.value.shape)
        return f"memref<{dims}x{mlir_type(self.value.dtype)}, #ntile.mem<hbm>>"

    def literal(self) -> str:
        t = self.value.contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.dtype != torch.bool else (
            t.to(torch.uint8).numpy().tobytes())
        dims = "x".join(str(d) for d in t.shape)
        return f'dense<"0x{raw.hex().upper()}"> : tensor<{dims}x{mlir_type(t.dtype)}>'


# ---------------------------------------------------------------------------------------------
# Ops


@dataclass
class Op:
    source: Source

    def reads(self) -> list[TileRegion]:
        return []


@dataclass
class AllocOp(Op):
    tile: Tile = None  # type: ignore[assignment]


@dataclass
class DmaOp(Op):
    src: TileRegion | HbmAccess | ConstantTensor = None  # type: ignore[assignment]
    src_dims: list[tuple[int, int]] | None = None  # constants: the pattern read
    dst: TileRegion | HbmAccess = None  # type: ignore[assignment]
    src_offset: int = 0  # constants: the first element read


@dataclass
class MatmulOp(Op):
    stationary: TileRegion = None  # type: ignore[assignment]
    moving: TileRegion = None  # type: ignore[assignment]
    dst: TileRegion = None  # type: ignore[assignment]
    accumulate: bool = False
    # The loops whose first iterations together write the accumulator first (it is
    # allocated outside them): the matmul overwrites in that iteration, accumulates in the
    # others (the emitter peels it off).
    first_loops: list[Loop] = field(default_factory=list)


@dataclass
class ComputeOp(Op):
    """One engine op: kind is activation / tensor_tensor / tensor_scalar / copy / reduce /
    select; attrs holds its function, ALU op, scalar, scale and bias."""

    kind: str = ""
    srcs: list[TileRegion] = field(default_factory=list)
    dst: TileRegion = None  # type: ignore[assignment]
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoopOp(Op):
    loop: Loop = None  # type: ignore[assignment]
    body: Scope = None  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------------
# Emission


class _Env:
    """Per emitted copy of a body: names of tiles, the loops' emitted depths and their
    substitutions (a peeled iteration is a constant; the rest of the loop shifts by one)."""

    def __init__(self, parent: _Env | None = None) -> None:
        self.parent = parent
        self.names: dict[int, str] = {}
        self.loops: dict[Loop, tuple[int | None, int]] = {}  # loop -> (depth or None, shift)
        self.zero: set[Loop] = set(parent.zero) if parent else set()
        self.depth = parent.depth if parent else 0

    def name(self, tile: Tile) -> str:
        env: _Env | None = self
        while env is not None:
            if tile.id in env.names:
                return env.names[tile.id]
            env = env.parent
        raise AssertionError(f"tile {tile.id} not emitted")

    def loop(self, loop: Loop) -> tuple[int | None, int]:
        env: _Env | None = self
        while env is not None:
            if loop in env.loops:
                return env.loops[loop]
            env = env.parent
        raise AssertionError(f"loop {loop.name} not emitted")


class Emitter:
    def __init__(self, kernel_name: str) -> None:
        self.kernel_name = kernel_name
        self.lines: list[str] = []
        self.counter = 0
        self.hbm_names: dict[int, str] = {}
        self.constant_names: dict[int, str] = {}

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def loc(self, source: Source) -> str:
        file = os.path.basename(source.file).replace("\\", "\\\\").replace('"', '\\"')
        name = self.kernel_name.replace('"', '\\"')
        return f'loc("{name}"("{file}":{source.line}:0))'

    def ap(self, env: _Env, offset: Aff, dims: list[tuple[int, int]]) -> str:
        base = offset.const
        terms = []
        for loop, coef in offset.terms.items():
            depth, shift = env.loop(loop)
            base += coef * shift
            if depth is not None:
                terms.append((depth, coef))
        text = str(base)
        for depth, coef in sorted(terms):
            text += f" + {coef}*iv{depth}"
        pairs = ", ".join(f"[{s}, {n}]" for s, n in dims)
        return f"<{text}, [{pairs}]>"

    def emit_line(self, env: _Env, text: str, source: Source) -> None:
        self.lines.append("  " * (env.depth + 2) + f"{text} {self.loc(source)}")

    def operand(self, env: _Env, region: TileRegion, source: Source) -> tuple[str, str]:
        """The SSA name and type of a region as a whole tile (a view when it is part)."""
        root = env.name(region.tile)
        if region.is_whole():
            return root, region.tile.mlir_type()
        t = region.tile
        view_type = (f"memref<{region.np}x{region.width}x{mlir_type(t.dtype)}, "
                     f"#ntile.mem<{t.space}>>")
        name = self.fresh("v")
        # whole rows of the offset are partitions (convert-ntile-to-nisa)
        ap = self.ap(env, region.c0 + region.p0 * t.free, [(t.free, region.np), (1, region.width)])
        self.emit_line(env, f"{name} = ntile.view {root} {ap} : {t.mlir_type()} to {view_type}",
                       source)
        return name, view_type

    def dma_side(self, env: _Env, side: Any, dims: list[tuple[int, int]] | None,
                 offset: int = 0) -> tuple[str, str]:
        if isinstance(side, HbmAccess):
            return (f"{self.hbm_names[id(side.tensor)]} {self.ap(env, side.offset, side.dims)}",
                    side.tensor.mlir_type())
        if isinstance(side, TileAccess):
            return (f"{env.name(side.tile)} {self.ap(env, side.offset, side.dims)}",
                    side.tile.mlir_type())
        if isinstance(side, ConstantTensor):
            return (f"{self.constant_names[id(side)]} {self.ap(env, Aff(offset), dims or [])}",
                    side.mlir_type())
        t = side.tile
        offset = side.c0 + side.p0 * t.free
        pattern = [(t.free, side.np), (1, side.width)]
        return f"{env.name(t)} {self.ap(env, offset, pattern)}", t.mlir_type()

    def emit_scope(self, scope: Scope, env: _Env) -> None:
        for op in scope.ops:
            self.emit_op(op, env)

    def emit_op(self, op: Op, env: _Env) -> None:
        if isinstance(op, AllocOp):
            name = self.fresh("t")
            env.names[op.tile.id] = name
            self.emit_line(env, f"{name} = memref.alloc() : {op.tile.mlir_type()}", op.source)
        elif isinstance(op, DmaOp):
            src, src_type = self.dma_side(env, op.src, op.src_dims, op.src_offset)
            dst, dst_type = self.dma_side(env, op.dst, None)
            self.emit_line(env, f"ntile.dma {src} to {dst} : {src_type}, {dst_type}", op.source)
        elif isinstance(op, MatmulOp):
            st, st_t = self.operand(env, op.stationary, op.source)
            mv, mv_t = self.operand(env, op.moving, op.source)
            dst, dst_t = self.operand(env, op.dst, op.source)
            accumulate = op.accumulate
            if op.first_loops:
                accumulate = not all(loop in env.zero for loop in op.first_loops)
            attr = " {accumulate}" if accumulate else ""
            self.emit_line(env, f"ntile.matmul {st}, {mv} to {dst}{attr} : {st_t}, {mv_t}, {dst_t}",
                           op.source)
        elif isinstance(op, ComputeOp):
            self.emit_compute(op, env)
        elif isinstance(op, LoopOp):
            self.emit_loop(op, env)
        else:  # pragma: no cover
            raise AssertionError(op)

    def emit_activation(self, op: ComputeOp, env: _Env) -> None:
        """fn source [scale tile] [bias tile] to target [sum accum]: the tile operands
        follow the data in op.srcs (scale first)."""
        a = op.attrs
        src, src_t = self.operand(env, op.srcs[0], op.source)
        rest = list(op.srcs[1:])
        text = f"ntile.activation {a['fn']} {src}"
        for key, word in (("scale_tile", "scale"), ("bias_tile", "bias")):
            if a.get(key):
                name, ty = self.operand(env, rest.pop(0), op.source)
                text += f" {word} {name} : {ty}"
        dst, dst_t = self.operand(env, op.dst, op.source)
        text += f" to {dst}"
        if a.get("accum") is not None:
            name, ty = self.operand(env, a["accum"], op.source)
            text += f" sum {name} : {ty}"
        attrs = []
        if a.get("scale", 1.0) != 1.0:
            attrs.append(f"scale = {f64(a['scale'])}")
        if a.get("bias", 0.0) != 0.0:
            attrs.append(f"bias = {f64(a['bias'])}")
        if attrs:
            text += " {" + ", ".join(attrs) + "}"
        self.emit_line(env, f"{text} : {src_t}, {dst_t}", op.source)

    def emit_isa(self, op: ComputeOp, env: _Env) -> None:
        """An instruction of the ISA table by its name (ntile.isa): sources, the target and
        the instruction's fields (program-format names)."""
        a = op.attrs
        srcs = [self.operand(env, s, op.source) for s in op.srcs]
        dst, dst_t = self.operand(env, op.dst, op.source)
        attrs = []
        if a.get("fields"):
            attrs.append("fields = {" + ", ".join(
                f"{k} = {attr_value(v)}" for k, v in sorted(a["fields"].items())) + "}")
        if a.get("broadcast"):
            attrs.append("broadcast = array<i64: " + ", ".join(map(str, a["broadcast"])) + ">")
        if a.get("engine") is not None:
            attrs.append(f'ntile.engine = "{a["engine"]}"')
        extra = (" {" + ", ".join(attrs) + "}") if attrs else ""
        self.emit_line(env, f"ntile.isa {a['name']}({', '.join(n for n, _ in srcs)}) to {dst}"
                       f"{extra} : ({', '.join(t for _, t in srcs)}) -> {dst_t}", op.source)

    def emit_compute(self, op: ComputeOp, env: _Env) -> None:
        if op.kind == "activation":
            self.emit_activation(op, env)
            return
        if op.kind == "isa":
            self.emit_isa(op, env)
            return
        if op.kind == "scan" and len(op.srcs) == 3:  # an initial tile: one value per partition
            init, init_t = self.operand(env, op.srcs[2], op.source)
            srcs = [self.operand(env, s, op.source) for s in op.srcs[:2]]
        else:
            init = None
            srcs = [self.operand(env, s, op.source) for s in op.srcs]
        dst, dst_t = self.operand(env, op.dst, op.source)
        names = ", ".join(s[0] for s in srcs)
        types = ", ".join([s[1] for s in srcs] + [dst_t])
        a = op.attrs
        attrs = []
        if op.kind == "tensor_scalar" and a.get("reverse"):
            attrs.append("reverse")
        if a.get("engine") is not None:  # chosen by the kernel: neuron-balance-engines keeps it
            attrs.append(f'ntile.engine = "{a["engine"]}"')
        extra = (" {" + ", ".join(attrs) + "}") if attrs else ""
        if op.kind == "tensor_tensor":
            text = f"ntile.tensor_tensor {a['op']} {names} to {dst}{extra} : {types}"
        elif op.kind == "tensor_scalar":
            text = (f"ntile.tensor_scalar {a['op']} {names}, {f64(a['scalar'])} to {dst}{extra}"
                    f" : {types}")
        elif op.kind == "copy":
            text = f"ntile.copy {names} to {dst}{extra} : {types}"
        elif op.kind == "reduce":
            text = f"ntile.reduce {a['op']} {names} to {dst}{extra} : {types}"
        elif op.kind == "select":
            text = f"ntile.select {names} to {dst}{extra} : {types}"
        elif op.kind == "scan":
            tile = f" tile {init} : {init_t}" if init is not None else ""
            text = (f"ntile.tensor_tensor_scan {a['op0']} {a['op1']} {names}, "
                    f"{f64(a['initial'])}{tile} to {dst}{extra} : {types}")
        elif op.kind in ("bn_stats", "bn_aggr"):
            text = f"ntile.{op.kind} {names} to {dst}{extra} : {types}"
        else:  # pragma: no cover
            raise AssertionError(op.kind)
        self.emit_line(env, text, op.source)

    def _peels(self, loop: Loop, scope: Scope, env: _Env) -> bool:
        """Whether a matmul below `loop` overwrites its accumulator in loop's first iteration
        (given the enclosing accumulation loops already peeled to their first iteration)."""
        for op in scope.ops:
            if isinstance(op, MatmulOp) and loop in op.first_loops:
                outer = op.first_loops[: op.first_loops.index(loop)]
                if all(l in env.zero for l in outer):
                    return True
            if isinstance(op, LoopOp) and self._peels(loop, op.body, env):
                return True
        return False

    def emit_loop(self, op: LoopOp, env: _Env) -> None:
        loop = op.loop
        peel = self._peels(loop, op.body, env)
        if peel or loop.count == 1:
            first = _Env(env)
            first.loops[loop] = (None, 0)
            first.zero.add(loop)
            self.emit_scope(op.body, first)
            # Tiles of the peeled copy are visible to nothing after it.
            if loop.count == 1:
                return
        start = 1 if peel else 0
        inner = _Env(env)
        inner.loops[loop] = (env.depth, start)
        inner.depth = env.depth + 1
        self.lines.append("  " * (env.depth + 2) + f"ntile.loop iv{env.depth} to "
                          f"{loop.count - start} {{")
        self.emit_scope(op.body, inner)
        self.lines.append("  " * (env.depth + 2) + f"}} {self.loc(loop.source)}")

    def emit(self, root: Scope, inputs: list[HbmTensor], outputs: list[HbmTensor],
             constants: list[ConstantTensor], source: Source) -> str:
        args = []
        for i, t in enumerate(inputs + outputs):
            name = f"%arg{i}"
            self.hbm_names[id(t)] = name
            args.append(f"{name}: {t.mlir_type()}")
        env = _Env()
        for c in constants:
            name = self.fresh("c")
            self.constant_names[id(c)] = name
            if getattr(c, "hbm", None) is not None:  # an HBM tensor of the kernel's (NKI's
                self.hbm_names[id(c.hbm)] = name      # shared_constant): views index it
            self.emit_line(env, f"{name} = ntile.constant {c.literal()} : {c.mlir_type()}",
                           source)
        self.emit_scope(root, env)
        header = f"  func.func @{self.kernel_name}({', '.join(args)}) {{"
        return "\n".join(["module {", header, *self.lines, "    return", "  }", "}", ""])
