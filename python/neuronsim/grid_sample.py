"""aten.grid_sampler_3d (F.grid_sample of a 5-D input) as a decomposition: each output point
reads its 8 (trilinear) or 1 (nearest) neighbours by gathers of the input's rows
([N*D*H*W, C], the input channels-last) at data-dependent row numbers, weighted and summed.
(grid_sampler_2d is an importer op, AtenGridSample.cpp.)

As eager's CPU kernel (GridSampler.cpp, GridSamplerUtils.h), in the input's dtype, each step
rounded to it:
- normalized coordinates to pixels: ((g + 1) / 2) * (size - 1) with align_corners, else
  ((g + 1) * size - 1) / 2;
- padding 'border' clips to [0, size - 1] (NaN to size - 1, as std::min/max), 'reflection'
  reflects about the edges (at the pixel centres with align_corners, else half a pixel out)
  then clips, 'zeros' reads 0 outside the input;
- trilinear: corner weights (x - x0 or x1 - x) * (y ...) * (z ...) in that order, the 8 terms
  added in the kernel's order (tnw, tne, tsw, tse, bnw, bne, bsw, bse; t/b the depth, n/s the
  height, w/e the width); nearest: the neighbour at round-half-to-even coordinates.
Bicubic interpolation does not exist for 5-D inputs in eager either.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _r(x: torch.Tensor) -> torch.Tensor:
    """x rounded to its 16-bit float dtype: the compiler computes a chain of bf16/fp16
    elementwise ops in fp32 and rounds once; eager's kernel rounds every step."""
    if x.dtype in (torch.bfloat16, torch.float16):
        return x.to(torch.float32).to(x.dtype)
    return x


def _unnormalize(g: torch.Tensor, size: int, align_corners: bool) -> torch.Tensor:
    if align_corners:
        return _r(_r(_r(g + 1) / 2) * (size - 1))
    return _r(_r(_r(_r(g + 1) * size) - 1) / 2)


def _clip(x: torch.Tensor, size: int) -> torch.Tensor:
    clipped = torch.clamp(x, 0, size - 1)
    return torch.where(torch.isnan(x), torch.full((), size - 1, dtype=x.dtype), clipped)


def _reflect(x: torch.Tensor, twice_low: int, twice_high: int) -> torch.Tensor:
    if twice_low == twice_high:
        return torch.zeros_like(x)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = torch.abs(_r(x - low))
    extra = _r(torch.fmod(x, span))
    flips = torch.floor(_r(x / span))
    even = torch.remainder(flips, 2) == 0
    return torch.where(even, _r(extra + low), _r(_r(span - extra) + low))


def _source_index(
    g: torch.Tensor, size: int, padding_mode: int, align_corners: bool
) -> torch.Tensor:
    x = _unnormalize(g, size, align_corners)
    if padding_mode == 1:
        return _clip(x, size)
    if padding_mode == 2:
        if align_corners:
            x = _reflect(x, 0, 2 * (size - 1))
        else:
            x = _reflect(x, -1, 2 * size - 1)
        return _clip(x, size)
    return x


def grid_sampler_3d(
    input: torch.Tensor,
    grid: torch.Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
) -> torch.Tensor:
    """[N, C, D_out, H_out, W_out] samples of input [N, C, D, H, W] at grid [N, D_out, H_out,
    W_out, 3] (x, y, z normalized to [-1, 1])."""
    if interpolation_mode not in (0, 1) or padding_mode not in (0, 1, 2):
        return NotImplemented
    if input.dim() != 5 or grid.dim() != 5 or grid.shape[-1] != 3:
        return NotImplemented
    n, c, d, h, w = input.shape
    out_shape = grid.shape[1:4]
    if input.numel() == 0 or grid.numel() == 0:
        return input.new_zeros((n, c, *out_shape))
    grid = grid.to(input.dtype)
    ix = _source_index(grid[..., 0], w, padding_mode, align_corners)
    iy = _source_index(grid[..., 1], h, padding_mode, align_corners)
    iz = _source_index(grid[..., 2], d, padding_mode, align_corners)
    table = input.permute(0, 2, 3, 4, 1).reshape(n * d * h * w, c)
    batch_base = (torch.arange(n, device=input.device) * (d * h * w)).reshape(n, 1, 1, 1)
    zero = torch.zeros((), dtype=input.dtype)

    def corner(z: torch.Tensor, y: torch.Tensor, x: torch.Tensor) -> tuple:
        """(values [N, Do, Ho, Wo, C] at integer-valued float coordinates, inside mask)."""
        inside = (x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1) & (z >= 0) & (z <= d - 1)
        zi = torch.clamp(torch.nan_to_num(z), 0, d - 1).to(torch.int64)
        yi = torch.clamp(torch.nan_to_num(y), 0, h - 1).to(torch.int64)
        xi = torch.clamp(torch.nan_to_num(x), 0, w - 1).to(torch.int64)
        rows = batch_base + (zi * h + yi) * w + xi
        values = table.index_select(0, rows.reshape(-1)).reshape(*rows.shape, c)
        return values, inside.unsqueeze(-1)

    if interpolation_mode == 1:  # nearest
        values, inside = corner(torch.round(iz), torch.round(iy), torch.round(ix))
        out = torch.where(inside, values, zero)
    else:
        x0, y0, z0 = torch.floor(ix), torch.floor(iy), torch.floor(iz)
        x1, y1, z1 = _r(x0 + 1), _r(y0 + 1), _r(z0 + 1)
        out = None
        for z, wz in ((z0, _r(z1 - iz)), (z1, _r(iz - z0))):
            for y, wy in ((y0, _r(y1 - iy)), (y1, _r(iy - y0))):
                for x, wx in ((x0, _r(x1 - ix)), (x1, _r(ix - x0))):
                    weight = _r(_r(wx * wy) * wz).unsqueeze(-1)
                    values, inside = corner(z, y, x)
                    term = torch.where(inside, _r(values * weight), zero)
                    out = term if out is None else _r(out + term)
    return out.permute(0, 4, 1, 2, 3)


GRID_SAMPLE_DECOMPOSITIONS = {aten.grid_sampler_3d.default: grid_sampler_3d}
