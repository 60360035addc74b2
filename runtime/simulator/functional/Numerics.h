// Conversions between storage dtypes and the compute types (float / double).
//
// bf16 and fp16 stores round to nearest even; NaN stays NaN (quiet). Stores to
// integer types truncate toward zero, map NaN to 0, saturate at the int64
// range and then wrap to the narrower type (as torch's .to(int) does for
// in-range values); stores to i1 yield 1 for every non-zero value.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/functional/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace neuron::runtime {

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bf16ToFloat(uint16_t h) { return bitsToFloat(uint32_t(h) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t u = floatToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40); // keep NaN a (quiet) NaN
  u += 0x7fffu + ((u >> 16) & 1);      // round to nearest, ties to even
  return uint16_t(u >> 16);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    float mag = float(mant) * 5.9604644775390625e-8f; // mant * 2^-24
    return sign ? -mag : mag;
  }
  if (exp == 31)
    return bitsToFloat(sign | 0x7f800000u | (mant << 13));
  return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

// Round-to-nearest-even float -> half (after F. Giesen's float_to_half_fast3).
inline uint16_t floatToHalf(float f) {
  uint32_t u = floatToBits(f);
  uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t out;
  if (u >= (127u + 16) << 23) { // >= 65536: Inf or NaN
    out = u > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (u < 113u << 23) {             // subnormal or zero half
    float magic = bitsToFloat(126u << 23); // 0.5f: puts 10 bits at the bottom
    float v = bitsToFloat(u) + magic;
    out = uint16_t(floatToBits(v) - floatToBits(magic));
  } else {
    uint32_t mantOdd = (u >> 13) & 1;
    u += ((15u - 127u) << 23) + 0xfffu; // rebias, rounding part 1
    u += mantOdd;                       // rounding part 2 (ties to even)
    out = uint16_t(u >> 13);
  }
  return uint16_t(out | (sign >> 16));
}

inline bool isIntegerDType(DType t) {
  return t != DType::F32 && t != DType::BF16 && t != DType::F16;
}

template <class T> inline int64_t toInt64(T v) {
  if (!(v == v))
    return 0;
  if (v >= T(9.2e18))
    return INT64_MAX;
  if (v <= T(-9.2e18))
    return INT64_MIN;
  return int64_t(v);
}

namespace detail {

template <class S, class T, class Cvt>
inline void loadLoop(const uint8_t *p, int64_t stride, T *out, int64_t n,
                     Cvt cvt) {
  if (stride == 0) { // a broadcast: one element, n times
    S v;
    std::memcpy(&v, p, sizeof(S));
    std::fill(out, out + n, T(cvt(v)));
  } else if (stride == int64_t(sizeof(S))) {
    for (int64_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, p + i * int64_t(sizeof(S)), sizeof(S));
      out[i] = T(cvt(v));
    }
  } else {
    for (int64_t i = 0; i < n; ++i, p += stride) {
      S v;
      std::memcpy(&v, p, sizeof(S));
      out[i] = T(cvt(v));
    }
  }
}

template <class S, class T, class Cvt>
inline void storeLoop(uint8_t *p, int64_t stride, const T *in, int64_t n,
                      Cvt cvt) {
  if (stride == int64_t(sizeof(S))) {
    for (int64_t i = 0; i < n; ++i) {
      S v = cvt(in[i]);
      std::memcpy(p + i * int64_t(sizeof(S)), &v, sizeof(S));
    }
  } else {
    for (int64_t i = 0; i < n; ++i, p += stride) {
      S v = cvt(in[i]);
      std::memcpy(p, &v, sizeof(S));
    }
  }
}

} // namespace detail

/// Reads `n` elements of `dt` from `p`, `stride` bytes apart, into `out`.
template <class T>
void loadRun(const uint8_t *p, int64_t stride, DType dt, T *out, int64_t n) {
  using namespace detail;
  auto id = [](auto v) { return v; };
  switch (dt) {
  case DType::F32:
    return loadLoop<float>(p, stride, out, n, id);
  case DType::BF16:
    if constexpr (std::is_same_v<T, float>)
      if (stride == 2 && (reinterpret_cast<uintptr_t>(p) & 1) == 0)
        return kernels::bf16ToF32(reinterpret_cast<const uint16_t *>(p), out,
                                  n);
    return loadLoop<uint16_t>(p, stride, out, n, bf16ToFloat);
  case DType::F16:
    return loadLoop<uint16_t>(p, stride, out, n, halfToFloat);
  case DType::I64:
    if constexpr (std::is_same_v<T, double>)
      if (stride == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0)
        return kernels::i64ToF64(reinterpret_cast<const int64_t *>(p), out, n);
    return loadLoop<int64_t>(p, stride, out, n, id);
  case DType::I32:
    return loadLoop<int32_t>(p, stride, out, n, id);
  case DType::I8:
    return loadLoop<int8_t>(p, stride, out, n, id);
  case DType::U8:
  case DType::Bool:
    if constexpr (std::is_same_v<T, double>)
      if (stride == 1)
        return kernels::u8ToF64(p, out, n);
    return loadLoop<uint8_t>(p, stride, out, n, id);
  }
}

/// Writes `n` values of `in` as `dt` at `p`, `stride` bytes apart, converting.
template <class T>
void storeRun(uint8_t *p, int64_t stride, DType dt, const T *in, int64_t n) {
  using namespace detail;
  switch (dt) {
  case DType::F32:
    return storeLoop<float>(p, stride, in, n, [](T v) { return float(v); });
  case DType::BF16:
    if constexpr (std::is_same_v<T, float>)
      if (stride == 2 && (reinterpret_cast<uintptr_t>(p) & 1) == 0)
        return kernels::f32ToBf16(in, reinterpret_cast<uint16_t *>(p), n);
    return storeLoop<uint16_t>(p, stride, in, n,
                               [](T v) { return floatToBf16(float(v)); });
  case DType::F16:
    return storeLoop<uint16_t>(p, stride, in, n,
                               [](T v) { return floatToHalf(float(v)); });
  case DType::I64:
    if constexpr (std::is_same_v<T, double>)
      if (stride == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0)
        return kernels::f64ToI64(in, reinterpret_cast<int64_t *>(p), n);
    return storeLoop<int64_t>(p, stride, in, n, [](T v) { return toInt64(v); });
  case DType::I32:
    return storeLoop<int32_t>(
        p, stride, in, n, [](T v) { return int32_t(uint32_t(toInt64(v))); });
  case DType::I8:
    return storeLoop<int8_t>(p, stride, in, n,
                             [](T v) { return int8_t(uint8_t(toInt64(v))); });
  case DType::U8:
    return storeLoop<uint8_t>(p, stride, in, n,
                              [](T v) { return uint8_t(toInt64(v)); });
  case DType::Bool:
    if constexpr (std::is_same_v<T, double>)
      if (stride == 1)
        return kernels::f64ToBool(in, p, n);
    return storeLoop<uint8_t>(p, stride, in, n,
                              [](T v) { return uint8_t(v != T(0)); });
  }
}

} // namespace neuron::runtime
