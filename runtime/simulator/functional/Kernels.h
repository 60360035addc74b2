// Hot loops of the functional simulator on contiguous fp32 arrays.
//
// Each entry point switches once on its operation and runs a loop over whole
// vectors (VecMath.h) and then the tail. On x86-64 with GCC every entry point
// is built for several ISAs: baseline x86-64, x86-64-v3 (AVX2, FMA) and
// x86-64-v4 (AVX-512; activations run 16 wide, the matmul 6 x 32 blocks);
// the loader picks the best the CPU supports (ifunc), so binaries still run
// on any x86-64 machine. The kernels may fuse multiply-adds (FMA variants), so
// fp32 results can differ in the last bit between CPUs with and without FMA:
// transcendental functions, and matmuls of fp32 inputs (bf16 and fp16
// products are exact in fp32, so those matmuls do not depend on the CPU).
// Everything else in the runtime is built with -ffp-contract=off.
#pragma once

#include "runtime/program/Program.h"

#include <cstdint>

namespace neuron::runtime::kernels {

/// "x86-64-v3" when the AVX2/FMA variants run, else "baseline".
const char *isaName();

/// out[i] = f(in[i] * scale + bias). `in` may equal `out`. The functions of
/// exp first find the range of the arguments: where exp may underflow they
/// take a path without float underflow (same bits, see vm::scaleByPow2).
void activation(ActFunc f, const float *in, float *out, int64_t n, float scale,
                float bias);

/// out[i] = a[i] <op> b[i]. Inputs may equal `out`. Max and Min return NaN
/// if either operand is NaN (torch.maximum / minimum, unlike std::max).
void tensorTensor(AluOp op, const float *a, const float *b, float *out,
                  int64_t n);

/// out[i] = a[i] <op> imm, or imm <op> a[i] if `reverse`. `a` may equal `out`.
void tensorScalar(AluOp op, const float *a, float imm, bool reverse,
                  float *out, int64_t n);

/// The reduction of a[0..n) with op (add, mul, max, min) starting from op's
/// identity; max and min are NaN if any element is (torch.amax / max). Sums use 16 interleaved partial sums combined in a fixed order
/// (deterministic, and closer to torch's cascade sums than a serial sum).
float reduce(AluOp op, const float *a, int64_t n);

/// out[i] = cond[i] != 0 ? a[i] : b[i] for bf16 values as their bits, except
/// that a signaling NaN comes out quiet (as through fp32 and f32ToBf16).
void selectBf16(const uint8_t *cond, const uint16_t *a, const uint16_t *b,
                uint16_t *out, int64_t n);
/// The same for fp32 values (bits unchanged).
void selectF32(const uint8_t *cond, const uint32_t *a, const uint32_t *b,
               uint32_t *out, int64_t n);

/// Conversions of the double path (mixed float and integer operands;
/// Numerics.h loadRun and storeRun): int64 or 1-byte unsigned to double, and
/// double to int64 (toInt64: truncated; NaN and out of range -> INT64_MIN, as
/// torch on x86-64) or to i1 (non-zero -> 1).
void i64ToF64(const int64_t *in, double *out, int64_t n);
void u8ToF64(const uint8_t *in, double *out, int64_t n);
void f64ToI64(const double *in, int64_t *out, int64_t n);
void f64ToBool(const double *in, uint8_t *out, int64_t n);

void bf16ToF32(const uint16_t *in, float *out, int64_t n);
/// Round to nearest even; NaN stays a quiet NaN.
void f32ToBf16(const float *in, uint16_t *out, int64_t n);

/// Packs the [rows, cols] bf16 operand whose row r is `cols` contiguous
/// elements at base + r * rowStride bytes into fp32 panels of `width`
/// columns, laid out as matmulPanels reads them:
///   out[(j / width) * rows * width + r * width + j % width] = row r, col j,
/// with the columns past `cols` up to the panel width zero.
void packBf16Panels(const uint8_t *base, int64_t rowStride, int64_t rows,
                    int64_t cols, int width, float *out);

/// Matmul of packed panels (MatmulKernel.cpp). Row block widths:
inline constexpr int kMatmulMR = 6, kMatmulNR = 16;

/// C[M, N] (+)= A^T B for A [K, M] and B [K, N] given as panels:
///   ap[(i / MR) * K * MR + k * MR + i % MR] = A[k, i]   (M padded to MR)
///   bp[(j / NR) * K * NR + k * NR + j % NR] = B[k, j]   (N padded to NR)
/// C element (i, j) is c[i * ldc + j]. The products of one element are summed
/// in order of k from 0, then added to C if `accumulate`.
void matmulPanels(const float *ap, const float *bp, float *c, int64_t k,
                  int64_t m, int64_t n, int64_t ldc, bool accumulate);

} // namespace neuron::runtime::kernels
