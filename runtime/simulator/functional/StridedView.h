// Byte-strided views of simulated memory and cursors that walk them in runs.
//
// A View is an access pattern resolved to a host pointer and byte strides,
// with size-1 dims dropped and contiguous neighbours merged, so the innermost
// run is as long as possible. A Cursor visits the elements in row-major order
// and hands out the rest of the current innermost row at a time.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/functional/Numerics.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace neuron::runtime {

/// Most dims an access pattern may have (partition + up to 4 free for
/// SBUF/PSUM; HBM patterns are limited to the same count).
inline constexpr int kMaxApDims = 8;

struct View {
  uint8_t *base = nullptr;
  DType dtype = DType::F32;
  int64_t elemBytes = 4;
  int ndims = 0;
  int64_t size[kMaxApDims] = {};
  int64_t stride[kMaxApDims] = {}; // bytes

  /// `dims` are {stride, size}; strides count elements, except dims[0]'s when
  /// `firstDimIsPartition` (then it counts partitions of `partitionUnitBytes`).
  static View make(uint8_t *base, DType dtype,
                   const std::vector<std::array<int64_t, 2>> &dims,
                   int64_t partitionUnitBytes, bool firstDimIsPartition) {
    View v;
    v.base = base;
    v.dtype = dtype;
    v.elemBytes = dtypeSize(dtype);
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i][1] == 1)
        continue;
      int64_t unit =
          (i == 0 && firstDimIsPartition) ? partitionUnitBytes : v.elemBytes;
      int64_t st = dims[i][0] * unit;
      int64_t sz = dims[i][1];
      // Merge into the previous dim when the two are one contiguous walk.
      if (v.ndims > 0 && v.stride[v.ndims - 1] == st * sz) {
        v.size[v.ndims - 1] *= sz;
        v.stride[v.ndims - 1] = st;
        continue;
      }
      v.size[v.ndims] = sz;
      v.stride[v.ndims] = st;
      ++v.ndims;
    }
    if (v.ndims == 0) {
      v.ndims = 1;
      v.size[0] = 1;
      v.stride[0] = v.elemBytes;
    }
    return v;
  }

  int64_t numElements() const {
    int64_t n = 1;
    for (int i = 0; i < ndims; ++i)
      n *= size[i];
    return n;
  }
  bool innerContiguous() const { return stride[ndims - 1] == elemBytes; }
};

class Cursor {
public:
  explicit Cursor(const View &v) : v_(v), ptr_(v.base) {
    std::fill(idx_, idx_ + kMaxApDims, 0);
  }

  uint8_t *ptr() const { return ptr_; }
  /// Elements left in the current innermost row.
  int64_t run() const { return v_.size[v_.ndims - 1] - idx_[v_.ndims - 1]; }
  int64_t innerStride() const { return v_.stride[v_.ndims - 1]; }
  const View &view() const { return v_; }

  /// Moves `n` <= run() elements forward.
  void advance(int64_t n) {
    int d = v_.ndims - 1;
    idx_[d] += n;
    ptr_ += n * v_.stride[d];
    while (idx_[d] == v_.size[d] && d > 0) {
      ptr_ -= v_.size[d] * v_.stride[d];
      idx_[d] = 0;
      --d;
      ++idx_[d];
      ptr_ += v_.stride[d];
    }
  }

private:
  View v_;
  uint8_t *ptr_;
  int64_t idx_[kMaxApDims];
};

/// Reads the next `n` elements of `c` into `out`, converting to T.
template <class T> void gather(Cursor &c, T *out, int64_t n) {
  while (n > 0) {
    int64_t k = std::min(c.run(), n);
    loadRun(c.ptr(), c.innerStride(), c.view().dtype, out, k);
    c.advance(k);
    out += k;
    n -= k;
  }
}

/// Writes `n` values of `in` to the next elements of `c`, converting from T.
template <class T> void scatter(Cursor &c, const T *in, int64_t n) {
  while (n > 0) {
    int64_t k = std::min(c.run(), n);
    storeRun(c.ptr(), c.innerStride(), c.view().dtype, in, k);
    c.advance(k);
    in += k;
    n -= k;
  }
}

namespace detail {
template <int EB>
inline void stridedCopy(uint8_t *dp, int64_t ds, const uint8_t *sp,
                        int64_t ss, int64_t k) {
  // Element by element, in order, so overlapping views copy as before.
  for (int64_t i = 0; i < k; ++i, dp += ds, sp += ss) {
    uint8_t tmp[EB];
    std::memcpy(tmp, sp, EB);
    std::memcpy(dp, tmp, EB);
  }
}

/// [rows, cols] copy in 32 x 32 blocks, so that a transposing copy touches
/// few cache lines and pages at a time.
template <int EB>
inline void blockedCopy2D(const View &dst, const View &src) {
  constexpr int64_t kB = 32;
  const int64_t rows = dst.size[0], cols = dst.size[1];
  for (int64_t r0 = 0; r0 < rows; r0 += kB)
    for (int64_t c0 = 0; c0 < cols; c0 += kB) {
      const int64_t r1 = std::min(rows, r0 + kB), c1 = std::min(cols, c0 + kB);
      for (int64_t r = r0; r < r1; ++r) {
        uint8_t *dp = dst.base + r * dst.stride[0] + c0 * dst.stride[1];
        const uint8_t *sp = src.base + r * src.stride[0] + c0 * src.stride[1];
        stridedCopy<EB>(dp, dst.stride[1], sp, src.stride[1], c1 - c0);
      }
    }
}

/// Whether no two elements of the 2-D view `v` share a byte (so that the
/// order of the writes does not matter).
inline bool injective2D(const View &v) {
  const int64_t s0 = v.stride[0] < 0 ? -v.stride[0] : v.stride[0];
  const int64_t s1 = v.stride[1] < 0 ? -v.stride[1] : v.stride[1];
  return (s1 >= v.elemBytes && s0 >= v.size[1] * s1) ||
         (s0 >= v.elemBytes && s1 >= v.size[0] * s0);
}

/// Lowest and one-past-highest byte a view touches.
inline void byteRange(const View &v, const uint8_t *&lo, const uint8_t *&hi) {
  lo = hi = v.base;
  for (int i = 0; i < v.ndims; ++i) {
    const int64_t ext = v.stride[i] * (v.size[i] - 1);
    (ext < 0 ? lo : hi) += ext;
  }
  hi += v.elemBytes;
}

} // namespace detail

/// Copies all elements of `src` to `dst` bytewise (same dtype, same count).
inline void copyElements(const View &dst, const View &src) {
  // Two 2-D views of the same shape that are not both row-contiguous (a
  // transpose, typically): blocked, unless they overlap or dst writes a byte
  // twice (then in order).
  if (dst.ndims == 2 && src.ndims == 2 && dst.size[0] == src.size[0] &&
      dst.size[1] == src.size[1] && dst.size[0] >= 8 && dst.size[1] >= 8 &&
      !(dst.innerContiguous() && src.innerContiguous()) &&
      detail::injective2D(dst)) {
    const uint8_t *dlo, *dhi, *slo, *shi;
    detail::byteRange(dst, dlo, dhi);
    detail::byteRange(src, slo, shi);
    if (dhi <= slo || shi <= dlo) {
      switch (dst.elemBytes) {
      case 1:
        return detail::blockedCopy2D<1>(dst, src);
      case 2:
        return detail::blockedCopy2D<2>(dst, src);
      case 4:
        return detail::blockedCopy2D<4>(dst, src);
      case 8:
        return detail::blockedCopy2D<8>(dst, src);
      default:
        break;
      }
    }
  }
  Cursor d(dst), s(src);
  const int64_t eb = dst.elemBytes;
  int64_t left = dst.numElements();
  while (left > 0) {
    int64_t k = std::min(std::min(d.run(), s.run()), left);
    int64_t ds = d.innerStride(), ss = s.innerStride();
    if (ds == eb && ss == eb) {
      if (k < left && k * eb >= 512) {
        // The rows of a copy are often pages apart, where the hardware does
        // not prefetch: request the next destination run while this copies.
        Cursor next = d;
        next.advance(k);
        if (next.innerStride() == eb) {
          const int64_t bytes = std::min<int64_t>(next.run() * eb, 4096);
          for (int64_t o = 0; o < bytes; o += 64)
            __builtin_prefetch(next.ptr() + o, 1, 3);
        }
      }
      std::memmove(d.ptr(), s.ptr(), size_t(k * eb));
    } else {
      switch (eb) { // fixed-size copies: no memcpy call per element
      case 1:
        detail::stridedCopy<1>(d.ptr(), ds, s.ptr(), ss, k);
        break;
      case 2:
        detail::stridedCopy<2>(d.ptr(), ds, s.ptr(), ss, k);
        break;
      case 4:
        detail::stridedCopy<4>(d.ptr(), ds, s.ptr(), ss, k);
        break;
      case 8:
        detail::stridedCopy<8>(d.ptr(), ds, s.ptr(), ss, k);
        break;
      default: {
        uint8_t *dp = d.ptr();
        const uint8_t *sp = s.ptr();
        for (int64_t i = 0; i < k; ++i, dp += ds, sp += ss)
          std::memcpy(dp, sp, size_t(eb));
      }
      }
    }
    d.advance(k);
    s.advance(k);
    left -= k;
  }
}

} // namespace neuron::runtime
