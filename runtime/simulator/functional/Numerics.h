// Conversions between storage dtypes and the compute types (float, double,
// int64).
//
// bf16 and fp16 stores round to nearest even; NaN stays NaN (quiet). fp8 stores are PyTorch's
// CPU casts (torch 2.13): round to nearest even from fp32; e4m3fn saturates every value beyond
// 448, infinities included, to +-448 and keeps NaN a NaN (0x7f, sign kept); e5m2 overflows to
// inf (no saturation). Trainium's own overflow rule is not documented: not modelled.
// Integer loads are exact (u8 is unsigned: 200 is 200, never -56).
// int64 -> narrower integer stores wrap (two's complement), as torch.
// Float -> integer stores are torch's .to(dtype) on x86-64 (C++ leaves the
// out-of-range cases undefined; these are what torch's casts do there):
//  - i64: truncation toward zero; NaN, +-inf and values outside the int64
//    range give INT64_MIN (the x86 "integer indefinite" value);
//  - i32: the same with the int32 range and INT32_MIN;
//  - i8, u8: the low byte of the i32 result (300.0 -> u8 44, -1.0 -> u8 255,
//    200.0 -> i8 -56; NaN, inf and values beyond the int32 range -> 0). For
//    fp32 values this is also the low byte of the int64 truncation, which is
//    what torch gives for float64 sources (the simulator has none);
//  - i1: 1 for every non-zero value, NaN included.
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

inline float fp8e4m3fnToFloat(uint8_t b) {
  const uint32_t exp = (b >> 3) & 0xf, mant = b & 7;
  float mag;
  if (exp == 15 && mant == 7)
    mag = bitsToFloat(0x7fc00000u);
  else if (exp == 0)
    mag = float(mant) * 0.001953125f; // mant * 2^-9
  else
    mag = bitsToFloat(((exp + 120) << 23) | (mant << 20));
  return (b & 0x80) ? -mag : mag;
}

inline uint8_t floatToFp8e4m3fn(float f) {
  uint32_t u = floatToBits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint8_t out;
  if (u > 0x7f800000u) { // NaN
    out = 0x7f;
  } else if (u >= 0x43e00000u) { // >= 448, inf included: saturates to 448 (PyTorch's cast)
    out = 0x7e;
  } else if (u < 121u << 23) { // below 2^-6: a subnormal (or zero) of e4m3fn
    const uint32_t magic = 141u << 23;
    out = uint8_t(floatToBits(bitsToFloat(u) + bitsToFloat(magic)) - magic);
  } else {
    const uint32_t mantOdd = (u >> 20) & 1;
    u += (uint32_t(7 - 127) << 23) + 0x7ffffu + mantOdd; // rebias, round to nearest even
    out = uint8_t(u >> 20);
  }
  return uint8_t(out | (sign >> 24));
}

inline float fp8e5m2ToFloat(uint8_t b) { return halfToFloat(uint16_t(b) << 8); }

inline uint8_t floatToFp8e5m2(float f) {
  uint32_t u = floatToBits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint8_t out;
  if (u >= 143u << 23) { // >= 65536: inf (overflow), or NaN
    out = u > 0x7f800000u ? 0x7f : 0x7c;
  } else if (u < 113u << 23) { // below 2^-14: a subnormal (or zero) of e5m2
    const uint32_t magic = 134u << 23;
    out = uint8_t(floatToBits(bitsToFloat(u) + bitsToFloat(magic)) - magic);
  } else {
    const uint32_t mantOdd = (u >> 21) & 1;
    u += (uint32_t(15 - 127) << 23) + 0xfffffu + mantOdd;
    out = uint8_t(u >> 21);
  }
  return uint8_t(out | (sign >> 24));
}

inline bool isFp8DType(DType t) { return t == DType::F8E4M3FN || t == DType::F8E5M2; }

inline bool isIntegerDType(DType t) {
  return t != DType::F32 && t != DType::BF16 && t != DType::F16 && !isFp8DType(t);
}

/// Float -> i64 as torch on x86-64 (see above). The range test is exact in
/// double; out-of-range C++ conversions are undefined, so they never run
/// (written without branches: loops of it vectorize).
template <class T> inline int64_t toInt64(T v) {
  const double d = double(v);
  const bool ok = d >= -0x1p63 && d < 0x1p63; // false for NaN
  const int64_t t = int64_t(ok ? d : 0.0);
  return ok ? t : INT64_MIN;
}

/// Float -> i32 as torch on x86-64 (see above).
template <class T> inline int32_t toInt32(T v) {
  const double d = double(v);
  const bool ok = d > -2147483649.0 && d < 2147483648.0;
  const int32_t t = int32_t(ok ? d : 0.0);
  return ok ? t : INT32_MIN;
}

/// The value of compute type T (float, double or int64) stored as integer
/// type S (int64_t, int32_t, int8_t, uint8_t; i1 is separate).
template <class S, class T> inline S toIntStorage(T v) {
  if constexpr (std::is_integral_v<T>)
    return S(std::make_unsigned_t<S>(v)); // wraps
  else if constexpr (sizeof(S) == 8)
    return toInt64(v);
  else if constexpr (std::is_same_v<S, uint32_t>)
    return S(uint64_t(toInt64(v))); // every uint32 is exact in int64
  else
    return S(std::make_unsigned_t<S>(toInt32(v)));
}

/// Storage value v (of any dtype's C type) as compute type T: int64 from a
/// float is toInt64, everything else a plain (exact or rounding) conversion.
template <class T, class S> inline T fromStorage(S v) {
  if constexpr (std::is_integral_v<T> && !std::is_integral_v<S>)
    return toInt64(v);
  else
    return T(v);
}

namespace detail {

template <class S, class T, class Cvt>
inline void loadLoop(const uint8_t *p, int64_t stride, T *out, int64_t n,
                     Cvt cvt) {
  if (stride == 0) { // a broadcast: one element, n times
    S v;
    std::memcpy(&v, p, sizeof(S));
    std::fill(out, out + n, fromStorage<T>(cvt(v)));
  } else if (stride == int64_t(sizeof(S))) {
    for (int64_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, p + i * int64_t(sizeof(S)), sizeof(S));
      out[i] = fromStorage<T>(cvt(v));
    }
  } else {
    for (int64_t i = 0; i < n; ++i, p += stride) {
      S v;
      std::memcpy(&v, p, sizeof(S));
      out[i] = fromStorage<T>(cvt(v));
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
  case DType::U32:
    return loadLoop<uint32_t>(p, stride, out, n, id);
  case DType::U16:
    return loadLoop<uint16_t>(p, stride, out, n, id);
  case DType::F8E4M3FN:
    return loadLoop<uint8_t>(p, stride, out, n, fp8e4m3fnToFloat);
  case DType::F8E5M2:
    return loadLoop<uint8_t>(p, stride, out, n, fp8e5m2ToFloat);
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
    if (stride == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
      int64_t *q = reinterpret_cast<int64_t *>(p);
      if constexpr (std::is_same_v<T, double>)
        return kernels::f64ToI64(in, q, n);
      for (int64_t i = 0; i < n; ++i) // vectorizes (no memcpy per element)
        q[i] = toIntStorage<int64_t>(in[i]);
      return;
    }
    return storeLoop<int64_t>(p, stride, in, n,
                              [](T v) { return toIntStorage<int64_t>(v); });
  case DType::I32:
    return storeLoop<int32_t>(p, stride, in, n,
                              [](T v) { return toIntStorage<int32_t>(v); });
  case DType::I8:
    return storeLoop<int8_t>(p, stride, in, n,
                             [](T v) { return toIntStorage<int8_t>(v); });
  case DType::U8:
    return storeLoop<uint8_t>(p, stride, in, n,
                              [](T v) { return toIntStorage<uint8_t>(v); });
  case DType::U32:
    return storeLoop<uint32_t>(p, stride, in, n,
                               [](T v) { return toIntStorage<uint32_t>(v); });
  case DType::U16:
    return storeLoop<uint16_t>(p, stride, in, n,
                               [](T v) { return toIntStorage<uint16_t>(v); });
  case DType::F8E4M3FN:
    return storeLoop<uint8_t>(p, stride, in, n,
                              [](T v) { return floatToFp8e4m3fn(float(v)); });
  case DType::F8E5M2:
    return storeLoop<uint8_t>(p, stride, in, n,
                              [](T v) { return floatToFp8e5m2(float(v)); });
  case DType::Bool:
    if constexpr (std::is_same_v<T, double>)
      if (stride == 1)
        return kernels::f64ToBool(in, p, n);
    return storeLoop<uint8_t>(p, stride, in, n,
                              [](T v) { return uint8_t(v != T(0)); });
  }
}

} // namespace neuron::runtime
