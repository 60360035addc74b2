"""nki.isa.constants: the enum namespaces NKI 0.2+ kernels import from there (they are also
attributes of nki.isa)."""

from __future__ import annotations

from .isa import dge_mode, engine, matmul_perf_mode, nc_version, oob_mode, reduce_cmd

__all__ = ["dge_mode", "engine", "matmul_perf_mode", "nc_version", "oob_mode", "reduce_cmd"]
