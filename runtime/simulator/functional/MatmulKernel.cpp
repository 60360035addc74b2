// The blocked fp32 matmul kernel (see Kernels.h).
//
// A 6 x 16 block of C lives in 12 registers of 8 floats while the kernel
// walks K over one packed A panel (6 floats per k) and one packed B panel (16
// floats per k); the B panel (<= 8 KiB) stays in L1 while all A panels pass
// over it. The x86-64-v4 variant holds a 6 x 32 block (two B panels) in 12
// registers of 16 floats. Built with -ffp-contract=fast (runtime/CMakeLists.txt)
// so the v3 and v4 variants use FMA, with the same sums in the same order:
// they give the same bits. For bf16/fp16 inputs the products are exact in
// fp32, so FMA or not, every CPU gives the same bits.
#include "runtime/simulator/functional/Kernels.h"

#include "runtime/simulator/functional/KernelsDetail.h"
#include "runtime/simulator/functional/VecMath.h"

#include <algorithm>

namespace neuron::runtime::kernels {

namespace {

using vm::load8;
using vm::splat;
using vm::store8;
using vm::vf8;

constexpr int MR = kMatmulMR, NR = kMatmulNR;
static_assert(NR == 2 * vm::kLanes, "the micro kernel holds 2 vectors per row");

NEURON_AI void microKernel(const float *ap, const float *bp, int64_t k,
                           float *c, int64_t ldc, bool accumulate, int mr,
                           int nr) {
  vf8 acc[MR][2];
  for (int r = 0; r < MR; ++r)
    acc[r][0] = acc[r][1] = splat<vf8>(0.0f);
  for (int64_t kk = 0; kk < k; ++kk) {
    const vf8 b0 = load8(bp + kk * NR), b1 = load8(bp + kk * NR + 8);
    const float *a = ap + kk * MR;
    for (int r = 0; r < MR; ++r) {
      // vector * scalar, not a splat: GCC builds {x, x, ...} from shuffles
      // in target_clones functions, but broadcasts the scalar operand.
      const float av = a[r];
      acc[r][0] += b0 * av;
      acc[r][1] += b1 * av;
    }
  }
  if (mr == MR && nr == NR) {
    for (int r = 0; r < MR; ++r) {
      float *cr = c + r * ldc;
      if (accumulate) {
        acc[r][0] = load8(cr) + acc[r][0];
        acc[r][1] = load8(cr + 8) + acc[r][1];
      }
      store8(cr, acc[r][0]);
      store8(cr + 8, acc[r][1]);
    }
    return;
  }
  float tmp[MR][NR];
  for (int r = 0; r < MR; ++r) {
    store8(tmp[r], acc[r][0]);
    store8(tmp[r] + 8, acc[r][1]);
  }
  for (int r = 0; r < mr; ++r)
    for (int j = 0; j < nr; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[r][j] : tmp[r][j];
}

} // namespace

namespace {

/// The panel loops with the micro kernel above (8-float vectors).
NEURON_AI void panels8(const float *ap, const float *bp, float *c, int64_t k,
                       int64_t m, int64_t n, int64_t ldc, bool accumulate) {
  for (int64_t j0 = 0; j0 < n; j0 += NR) {
    const float *b = bp + (j0 / NR) * k * NR;
    const int nr = int(std::min<int64_t>(NR, n - j0));
    for (int64_t i0 = 0; i0 < m; i0 += MR)
      microKernel(ap + (i0 / MR) * k * MR, b, k, c + i0 * ldc + j0, ldc,
                  accumulate, int(std::min<int64_t>(MR, m - i0)), nr);
  }
}

#if NEURON_KERNEL_CLONES
using vm::vf16;

/// A 6 x (16 * P) block of C in 6P registers of 16 floats, over P adjacent B
/// panels (AVX-512). Each element is summed exactly as in microKernel: from
/// 0, one fused multiply-add per k in order, then added to C.
template <int P>
__attribute__((target("arch=x86-64-v4"), always_inline)) inline void
microKernel16(const float *ap, const float *bp, int64_t k, float *c,
              int64_t ldc, bool accumulate, int mr, int nr) {
  vf16 acc[MR][P];
  for (int r = 0; r < MR; ++r)
    for (int q = 0; q < P; ++q)
      acc[r][q] = vm::splat<vf16>(0.0f);
  for (int64_t kk = 0; kk < k; ++kk) {
    vf16 b[P];
    for (int q = 0; q < P; ++q)
      b[q] = vm::loadV<vf16>(bp + q * k * NR + kk * NR);
    const float *a = ap + kk * MR;
    for (int r = 0; r < MR; ++r) {
      const float av = a[r];
      for (int q = 0; q < P; ++q)
        acc[r][q] += b[q] * av;
    }
  }
  if (mr == MR && nr == P * NR) {
    for (int r = 0; r < MR; ++r) {
      float *cr = c + r * ldc;
      for (int q = 0; q < P; ++q) {
        if (accumulate)
          acc[r][q] = vm::loadV<vf16>(cr + q * NR) + acc[r][q];
        vm::storeV(cr + q * NR, acc[r][q]);
      }
    }
    return;
  }
  float tmp[MR][P * NR];
  for (int r = 0; r < MR; ++r)
    for (int q = 0; q < P; ++q)
      vm::storeV(tmp[r] + q * NR, acc[r][q]);
  for (int r = 0; r < mr; ++r)
    for (int j = 0; j < nr; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[r][j] : tmp[r][j];
}

// AVX-512: 6 x 32 blocks (two B panels at a time), then 6 x 16.
__attribute__((target("arch=x86-64-v4"))) void
panelsImpl(const float *ap, const float *bp, float *c, int64_t k, int64_t m,
           int64_t n, int64_t ldc, bool accumulate) {
  int64_t j0 = 0;
  for (; j0 + 2 * NR <= n; j0 += 2 * NR) {
    const float *b = bp + (j0 / NR) * k * NR;
    for (int64_t i0 = 0; i0 < m; i0 += MR)
      microKernel16<2>(ap + (i0 / MR) * k * MR, b, k, c + i0 * ldc + j0, ldc,
                       accumulate, int(std::min<int64_t>(MR, m - i0)),
                       2 * NR);
  }
  for (; j0 < n; j0 += NR) {
    const float *b = bp + (j0 / NR) * k * NR;
    const int nr = int(std::min<int64_t>(NR, n - j0));
    for (int64_t i0 = 0; i0 < m; i0 += MR)
      microKernel16<1>(ap + (i0 / MR) * k * MR, b, k, c + i0 * ldc + j0, ldc,
                       accumulate, int(std::min<int64_t>(MR, m - i0)), nr);
  }
}
__attribute__((target("arch=x86-64-v3"))) void
panelsImpl(const float *ap, const float *bp, float *c, int64_t k, int64_t m,
           int64_t n, int64_t ldc, bool accumulate) {
  panels8(ap, bp, c, k, m, n, ldc, accumulate);
}
__attribute__((target("default"))) void
panelsImpl(const float *ap, const float *bp, float *c, int64_t k, int64_t m,
           int64_t n, int64_t ldc, bool accumulate) {
  panels8(ap, bp, c, k, m, n, ldc, accumulate);
}
#else
void panelsImpl(const float *ap, const float *bp, float *c, int64_t k,
                int64_t m, int64_t n, int64_t ldc, bool accumulate) {
  panels8(ap, bp, c, k, m, n, ldc, accumulate);
}
#endif

} // namespace

void matmulPanels(const float *ap, const float *bp, float *c, int64_t k,
                  int64_t m, int64_t n, int64_t ldc, bool accumulate) {
  panelsImpl(ap, bp, c, k, m, n, ldc, accumulate);
}

} // namespace neuron::runtime::kernels
