// See IsaOps.h. Operands are read whole, row-major over their dims (partition first), so
// element p * F + f of a [P, F] operand is partition p, free index f.
#include "runtime/simulator/functional/IsaOps.h"

#include "runtime/program/Isa.h"
#include "runtime/simulator/functional/ElementOps.h"
#include "runtime/simulator/functional/Kernels.h"
#include "runtime/simulator/functional/Random.h"
#include "runtime/simulator/functional/StridedView.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace neuron::runtime {

namespace {

template <class T> std::vector<T> load(Memory &mem, const AccessPattern &ap) {
  std::vector<T> out(size_t(ap.numElements()));
  Cursor c(mem.view(ap));
  gather(c, out.data(), int64_t(out.size()));
  return out;
}

template <class T> void store(Memory &mem, const AccessPattern &ap, const std::vector<T> &v) {
  Cursor c(mem.view(ap));
  scatter(c, v.data(), int64_t(v.size()));
}

float alu(AluOp op, float a, float b) {
  float r = 0;
  withAluOp<float>(op, [&](auto f) { r = f(a, b); });
  return r;
}

/// op(a, b), or op(b, a) when `reverse`.
float alu(AluOp op, float a, float b, bool reverse) {
  return reverse ? alu(op, b, a) : alu(op, a, b);
}

int64_t partitionsOf(const AccessPattern &ap) {
  return ap.dims[0][1]; // the partition dim (an HBM source: its rows)
}

/// The per-partition scalar of tensor_scalar / scalar_tensor_tensor: imm[0], or the first
/// element of each partition of the tile srcs.back() (read with free stride 0) when scaleTile.
std::vector<float> scalars(Memory &mem, const Instruction &inst, int64_t parts) {
  std::vector<float> s(size_t(parts), float(inst.imm[0]));
  if (inst.scaleTile) {
    const std::vector<float> tile = load<float>(mem, inst.srcs.back());
    const size_t n = tile.size() / size_t(parts);
    for (int64_t p = 0; p < parts; ++p)
      s[size_t(p)] = tile[size_t(p) * n];
  }
  return s;
}

void tensorScalar(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  const std::vector<float> s = scalars(mem, inst, parts);
  const float s1 = float(inst.imm[1]);
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < n; ++i) {
      float &v = x[size_t(p * n + i)];
      v = alu(inst.alu, v, s[size_t(p)], inst.reverse);
      if (inst.twoOps)
        v = alu(inst.alu2, v, s1, inst.reverse2);
    }
  store(mem, inst.dst, x);
}

/// The first value of a reduction by `op` (add 0, mul 1, max -inf, min +inf).
float reduceIdentity(AluOp op) {
  switch (op) {
  case AluOp::Mul:
    return 1.0f;
  case AluOp::Max:
    return -std::numeric_limits<float>::infinity();
  case AluOp::Min:
    return std::numeric_limits<float>::infinity();
  default:
    return 0.0f;
  }
}

/// tensor_scalar with one op, and reduce<alu2> of each partition's fp32 results into the last
/// source (a [P, 1] tile).
/// Partition p's accumulator register of the Vector engine that runs `inst` (the register of
/// dst's partition p), after the instruction's reduceCmd: reset to the reduce's identity, loaded
/// with imm[1], or kept.
float &accumulator(Memory &mem, const Instruction &inst, int64_t p) {
  const int64_t step = partitionsOf(inst.dst) > 1 ? inst.dst.dims[0][0] : 1;
  float &r = mem.vectorAccumulators(coreOfQueue(inst.queue))[size_t(
      int64_t(inst.dst.partition) + p * step)];
  if (inst.reduceCmd == ReduceCmd::ResetReduce)
    r = reduceIdentity(inst.alu2);
  else if (inst.reduceCmd == ReduceCmd::LoadReduce)
    r = float(inst.imm[1]);
  return r;
}

void tensorScalarReduce(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  std::vector<float> s(size_t(parts), float(inst.imm[0]));
  if (inst.scaleTile) {
    const std::vector<float> tile = load<float>(mem, inst.srcs[1]);
    const size_t m = tile.size() / size_t(parts);
    for (int64_t p = 0; p < parts; ++p)
      s[size_t(p)] = tile[size_t(p) * m];
  }
  // The reduce runs in the Vector engine's accumulator registers (reduceCmd).
  std::vector<float> red(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    float &r = accumulator(mem, inst, p);
    for (int64_t i = 0; i < n; ++i) {
      float &v = x[size_t(p * n + i)];
      v = alu(inst.alu, v, s[size_t(p)], inst.reverse);
      r = alu(inst.alu2, r, v);
    }
    red[size_t(p)] = r;
  }
  store(mem, inst.dst, x);
  store(mem, inst.srcs.back(), red);
}

/// r = (x op0 imm0) op1 r along each row, dst = r, through the Vector engine's accumulator
/// registers (the partition's register of the dst partition).
void tensorScalarCumulative(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  const float s0 = float(inst.imm[0]);
  for (int64_t p = 0; p < parts; ++p) {
    float &r = accumulator(mem, inst, p);
    for (int64_t i = 0; i < n; ++i) {
      float &v = x[size_t(p * n + i)];
      r = alu(inst.alu2, alu(inst.alu, v, s0, inst.reverse), r);
      v = r;
    }
  }
  store(mem, inst.dst, x);
}

/// The first element of each partition of a [P, 1] tile.
std::vector<float> perPartition(Memory &mem, const AccessPattern &ap, int64_t parts) {
  const std::vector<float> tile = load<float>(mem, ap);
  const size_t m = tile.size() / size_t(parts);
  std::vector<float> out(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p)
    out[size_t(p)] = tile[size_t(p) * m];
  return out;
}

/// max as the Vector engine's (NaN if either is NaN).
float maxOf(float a, float b) { return alu(AluOp::Max, a, b); }

void rangeSelect(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  const std::vector<float> lo = perPartition(mem, inst.srcs[1], parts),
                           hi = perPartition(mem, inst.srcs[2], parts);
  const float start = float(inst.imm[0]), fill = float(inst.imm[1]);
  std::vector<float> red(size_t(parts), -std::numeric_limits<float>::infinity());
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < n; ++i) {
      const float at = float(i) + start;
      float &v = x[size_t(p * n + i)];
      if (alu(inst.alu, at, lo[size_t(p)]) == 0 || alu(inst.alu2, at, hi[size_t(p)]) == 0)
        v = fill;
      red[size_t(p)] = maxOf(red[size_t(p)], v);
    }
  store(mem, inst.dst, x);
  store(mem, inst.srcs.back(), red);
}

void selectReduce(Memory &mem, const Instruction &inst) {
  const std::vector<double> pred = load<double>(mem, inst.srcs[0]);
  std::vector<float> x = load<float>(mem, inst.srcs[1]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  const std::vector<float> other =
      inst.scaleTile ? perPartition(mem, inst.srcs[2], parts)
                     : std::vector<float>(size_t(parts), float(inst.imm[0]));
  std::vector<float> red(size_t(parts), -std::numeric_limits<float>::infinity());
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(p * n + i);
      if ((pred[k] != 0) == inst.reverse)
        x[k] = other[size_t(p)];
      red[size_t(p)] = maxOf(red[size_t(p)], x[k]);
    }
  store(mem, inst.dst, x);
  store(mem, inst.srcs.back(), red);
}

/// The first value of a reduction into accumulator registers by `op` (add 0, max -inf, min
/// +inf, abs_max 0, abs_min +inf).
float registerIdentity(AluOp op) {
  switch (op) {
  case AluOp::AbsMax:
    return 0.0f;
  case AluOp::AbsMin:
    return std::numeric_limits<float>::infinity();
  default:
    return reduceIdentity(op);
  }
}

/// acc <op> v for a register reduce: add, max, min (NaN-propagating), abs_max, abs_min (of the
/// magnitudes).
float registerReduce(AluOp op, float acc, float v) {
  switch (op) {
  case AluOp::AbsMax:
    return alu(AluOp::Max, std::fabs(acc), std::fabs(v));
  case AluOp::AbsMin:
    return alu(AluOp::Min, std::fabs(acc), std::fabs(v));
  default:
    return alu(op, acc, v);
  }
}

/// The per-partition values of an immediate operand: imm, or the tile srcs[k] (advancing k).
std::vector<float> immOrTile(Memory &mem, const Instruction &inst, bool tile, double imm,
                             size_t &k, int64_t parts) {
  if (tile)
    return perPartition(mem, inst.srcs[k++], parts);
  return std::vector<float>(size_t(parts), float(imm));
}

/// activate2 (trn3, Scalar): v = (x op0 imm0) op1 imm1 (either op may be bypass), dst =
/// func(v); with `accumulate` the fp32 results reduce element by element into the Scalar
/// engine's registers by reduceOp and reduceCmd; the optional reduce result reads them.
void activate2(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  size_t k = 1;
  const std::vector<float> s0 = immOrTile(mem, inst, inst.scaleTile, inst.imm[0], k, parts);
  const std::vector<float> s1 = immOrTile(mem, inst, inst.biasTile, inst.imm[1], k, parts);
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < n; ++i) {
      float &v = x[size_t(p * n + i)];
      if (inst.alu != AluOp::Bypass)
        v = alu(inst.alu, v, s0[size_t(p)], inst.reverse);
      if (inst.alu2 != AluOp::Bypass)
        v = alu(inst.alu2, v, s1[size_t(p)], inst.reverse2);
    }
  kernels::activation(inst.func, x.data(), x.data(), int64_t(x.size()), 1.0f, 0.0f);
  if (inst.accumulate) {
    float *regs = mem.scalarAccumulators(coreOfQueue(inst.queue));
    const int64_t step = parts > 1 ? inst.dst.dims[0][0] : 1;
    const ReduceCmd cmd = inst.reduceCmd;
    std::vector<float> red(static_cast<size_t>(parts));
    for (int64_t p = 0; p < parts; ++p) {
      float &r = regs[size_t(int64_t(inst.dst.partition) + p * step)];
      if (cmd == ReduceCmd::Reset || cmd == ReduceCmd::ResetReduce)
        r = registerIdentity(inst.reduceOp);
      if (cmd == ReduceCmd::Reduce || cmd == ReduceCmd::ResetReduce)
        for (int64_t i = 0; i < n; ++i)
          r = registerReduce(inst.reduceOp, r, x[size_t(p * n + i)]);
      red[size_t(p)] = r;
    }
    if (optionalReduceResult(inst))
      store(mem, inst.srcs.back(), red);
  }
  store(mem, inst.dst, x);
}

/// exponential (trn3, Vector): dst = exp(x - m), m = imm[0] or the per-partition tile srcs[1];
/// unless reduceCmd is idle, the fp32 results add into the Vector engine's registers (reset to 0
/// by reset_reduce, loaded with imm[1] by load_reduce, kept by reduce); the optional reduce
/// result reads them.
void exponential(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  size_t k = 1;
  const std::vector<float> m = immOrTile(mem, inst, inst.scaleTile, inst.imm[0], k, parts);
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < n; ++i)
      x[size_t(p * n + i)] -= m[size_t(p)];
  kernels::activation(ActFunc::Exp, x.data(), x.data(), int64_t(x.size()), 1.0f, 0.0f);
  if (inst.reduceCmd != ReduceCmd::Idle) {
    float *regs = mem.vectorAccumulators(coreOfQueue(inst.queue));
    const int64_t step = parts > 1 ? inst.dst.dims[0][0] : 1;
    std::vector<float> red(static_cast<size_t>(parts));
    for (int64_t p = 0; p < parts; ++p) {
      float &r = regs[size_t(int64_t(inst.dst.partition) + p * step)];
      if (inst.reduceCmd == ReduceCmd::ResetReduce)
        r = 0.0f;
      else if (inst.reduceCmd == ReduceCmd::LoadReduce)
        r = float(inst.imm[1]);
      for (int64_t i = 0; i < n; ++i)
        r += x[size_t(p * n + i)];
      red[size_t(p)] = r;
    }
    if (optionalReduceResult(inst))
      store(mem, inst.srcs.back(), red);
  }
  store(mem, inst.dst, x);
}

/// The generator words of one partition lane: 24 on the Vector engine (4 XORWOW generators), 6
/// on GpSimd (one).
int64_t rngWords(Engine e) { return e == Engine::GpSimd ? 6 : 24; }

/// Partition p's (of dst) generator state on the engine that runs `inst`.
uint32_t *rngLane(Memory &mem, const Instruction &inst, int64_t p) {
  const int64_t step = partitionsOf(inst.dst) > 1 ? inst.dst.dims[0][0] : 1;
  return mem.rngState(coreOfQueue(inst.queue), engineOfQueue(inst.queue),
                      int64_t(inst.dst.partition) + p * step);
}

/// The next 32 random bits of element f of a row: the Vector engine's element f draws from its
/// lane's generator f % 4, GpSimd's from its lane's one.
uint32_t nextBits(uint32_t *lane, Engine e, int64_t f) {
  return xorwowNext(e == Engine::GpSimd ? lane : lane + 6 * (f % 4));
}

/// rng: 32 random bits per element, truncated to dst's integer type (its low bits).
void rng(Memory &mem, const Instruction &inst) {
  const Engine e = engineOfQueue(inst.queue);
  const int64_t parts = partitionsOf(inst.dst), n = inst.dst.numElements() / parts;
  std::vector<int64_t> out(size_t(parts * n));
  for (int64_t p = 0; p < parts; ++p) {
    uint32_t *lane = rngLane(mem, inst, p);
    for (int64_t f = 0; f < n; ++f) {
      const uint32_t u = nextBits(lane, e, f);
      int64_t v = int32_t(u);
      if (inst.dst.dtype == DType::U8)
        v = int64_t(u & 0xffu);
      else if (inst.dst.dtype == DType::I8)
        v = int8_t(uint8_t(u & 0xffu));
      out[size_t(p * n + f)] = v;
    }
  }
  store(mem, inst.dst, out);
}

/// rand2: uniform in [imm[0], imm[1]): lo + u * (hi - lo) in fp32, u the top 24 of 32 random bits
/// times 2^-24.
void rand2(Memory &mem, const Instruction &inst) {
  const int64_t parts = partitionsOf(inst.dst), n = inst.dst.numElements() / parts;
  const float lo = float(inst.imm[0]), width = float(inst.imm[1]) - lo;
  std::vector<float> out(size_t(parts * n));
  for (int64_t p = 0; p < parts; ++p) {
    uint32_t *lane = rngLane(mem, inst, p);
    for (int64_t f = 0; f < n; ++f) {
      const float u = float(nextBits(lane, Engine::Vector, f) >> 8) * 0x1p-24f;
      out[size_t(p * n + f)] = lo + u * width;
    }
  }
  store(mem, inst.dst, out);
}

/// rand_set_state (`set`) / rand_get_state: each partition lane's generator words from / to
/// dst's row (i32 holding the uint32 words).
void randState(Memory &mem, const Instruction &inst, bool set) {
  const int64_t parts = partitionsOf(inst.dst), words = rngWords(engineOfQueue(inst.queue));
  std::vector<int64_t> row = set ? load<int64_t>(mem, inst.dst)
                                 : std::vector<int64_t>(size_t(parts * words));
  for (int64_t p = 0; p < parts; ++p) {
    uint32_t *lane = rngLane(mem, inst, p);
    for (int64_t w = 0; w < words; ++w) {
      int64_t &v = row[size_t(p * words + w)];
      if (set)
        lane[w] = uint32_t(v);
      else
        v = int32_t(lane[w]);
    }
  }
  if (!set)
    store(mem, inst.dst, row);
}

/// set_rng_seed: every Vector-engine generator of the core from the 32-bit seed in dst [1, 1].
void setRngSeed(Memory &mem, const Instruction &inst) {
  const uint32_t seed = uint32_t(load<int64_t>(mem, inst.dst)[0]);
  mem.seedVectorRng(coreOfQueue(inst.queue), seed);
}

void scalarTensorTensor(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const std::vector<float> y = load<float>(mem, inst.srcs[1]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  const std::vector<float> s = scalars(mem, inst, parts);
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(p * n + i);
      x[k] = alu(inst.alu2, alu(inst.alu, x[k], s[size_t(p)], inst.reverse), y[k],
                 inst.reverse2);
    }
  store(mem, inst.dst, x);
}

void reciprocal(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  for (float &v : x)
    v = 1.0f / v;
  store(mem, inst.dst, x);
}

/// Per partition: count, mean, mean-centred sum of squares of the even elements, then of the
/// odd ones (Welford's update, in fp32).
void bnStats(Memory &mem, const Instruction &inst) {
  const std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.srcs[0]), n = int64_t(x.size()) / parts;
  std::vector<float> out(size_t(parts * 6));
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t half = 0; half < 2; ++half) {
      float count = 0, mean = 0, m2 = 0;
      for (int64_t i = half; i < n; i += 2) {
        const float v = x[size_t(p * n + i)];
        count += 1;
        const float delta = v - mean;
        mean += delta / count;
        m2 += delta * (v - mean);
      }
      float *o = &out[size_t(p * 6 + half * 3)];
      o[0] = count;
      o[1] = mean;
      o[2] = m2;
    }
  store(mem, inst.dst, out);
}

/// Combines the (count, mean, M2) triples of a partition (Chan et al.) into its mean and
/// population variance.
void bnAggr(Memory &mem, const Instruction &inst) {
  const std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.srcs[0]), n = int64_t(x.size()) / parts;
  std::vector<float> out(size_t(parts * 2));
  for (int64_t p = 0; p < parts; ++p) {
    float count = 0, mean = 0, m2 = 0;
    for (int64_t t = 0; t + 3 <= n; t += 3) {
      const float *g = &x[size_t(p * n + t)];
      if (g[0] == 0)
        continue;
      const float total = count + g[0];
      const float delta = g[1] - mean;
      mean += delta * (g[0] / total);
      m2 += g[2] + delta * delta * (count * g[0] / total);
      count = total;
    }
    out[size_t(p * 2)] = count > 0 ? mean : std::numeric_limits<float>::quiet_NaN();
    out[size_t(p * 2 + 1)] = count > 0 ? m2 / count : std::numeric_limits<float>::quiet_NaN();
  }
  store(mem, inst.dst, out);
}

void tensorTensorScan(Memory &mem, const Instruction &inst) {
  const std::vector<float> a = load<float>(mem, inst.srcs[0]), b = load<float>(mem, inst.srcs[1]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(a.size()) / parts;
  std::vector<float> out(a.size());
  const std::vector<float> initial = scalars(mem, inst, parts); // imm[0] or the srcs[2] tile
  for (int64_t p = 0; p < parts; ++p) {
    float r = initial[size_t(p)];
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(p * n + i);
      r = alu(inst.alu2, alu(inst.alu, a[k], r), b[k]);
      out[k] = r;
    }
  }
  store(mem, inst.dst, out);
}

void partitionReduce(Memory &mem, const Instruction &inst) {
  const std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.srcs[0]), n = int64_t(x.size()) / parts;
  std::vector<float> out(x.begin(), x.begin() + n);
  for (int64_t p = 1; p < parts; ++p)
    for (int64_t i = 0; i < n; ++i)
      out[size_t(i)] = alu(inst.alu, out[size_t(i)], x[size_t(p * n + i)]);
  store(mem, inst.dst, out);
}

/// dst[f, p] = src[p, f], exact for every dtype (integers through int64, floats unchanged).
template <class T> void transposeAs(Memory &mem, const Instruction &inst) {
  const std::vector<T> x = load<T>(mem, inst.srcs[0]);
  const int64_t rows = inst.srcs[0].dims[0][1], cols = inst.srcs[0].dims[1][1];
  std::vector<T> out(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[size_t(c * rows + r)] = x[size_t(r * cols + c)];
  store(mem, inst.dst, out);
}

void transpose(Memory &mem, const Instruction &inst) {
  if (isIntegerDType(inst.srcs[0].dtype))
    transposeAs<int64_t>(mem, inst);
  else
    transposeAs<float>(mem, inst);
}

/// Orders NaN above every number (as a hardware max does not skip it).
bool above(float a, float b) { return (a != a && b == b) || a > b; }

void max8(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const int64_t parts = partitionsOf(inst.srcs[0]), n = int64_t(x.size()) / parts;
  std::vector<float> out(size_t(parts * 8));
  for (int64_t p = 0; p < parts; ++p) {
    auto row = x.begin() + p * n;
    std::partial_sort(row, row + 8, row + n, above);
    std::copy(row, row + 8, out.begin() + p * 8);
  }
  store(mem, inst.dst, out);
}

/// The index of the first of `n` values equal to `want` (NaN matches NaN), or -1.
int64_t firstEqual(const float *values, int64_t n, float want) {
  for (int64_t i = 0; i < n; ++i)
    if (values[i] == want || (values[i] != values[i] && want != want))
      return i;
  return -1;
}

void findIndex8(Memory &mem, const Instruction &inst) {
  const std::vector<float> x = load<float>(mem, inst.srcs[0]), v = load<float>(mem, inst.srcs[1]);
  const int64_t parts = partitionsOf(inst.srcs[0]), n = int64_t(x.size()) / parts;
  std::vector<int64_t> out(size_t(parts * 8));
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t k = 0; k < 8; ++k)
      out[size_t(p * 8 + k)] = firstEqual(&x[size_t(p * n)], n, v[size_t(p * 8 + k)]);
  store(mem, inst.dst, out);
}

void matchReplace8(Memory &mem, const Instruction &inst) {
  std::vector<float> x = load<float>(mem, inst.srcs[0]);
  const std::vector<float> v = load<float>(mem, inst.srcs[1]);
  const int64_t parts = partitionsOf(inst.srcs[0]), n = int64_t(x.size()) / parts;
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t k = 0; k < 8; ++k)
      if (int64_t i = firstEqual(&x[size_t(p * n)], n, v[size_t(p * 8 + k)]); i >= 0)
        x[size_t(p * n + i)] = float(inst.imm[0]);
  store(mem, inst.dst, x);
}

template <class T> void copyPredicatedAs(Memory &mem, const Instruction &inst) {
  const std::vector<T> x = load<T>(mem, inst.srcs[0]);
  const std::vector<double> pred = load<double>(mem, inst.srcs[1]);
  std::vector<T> out = load<T>(mem, inst.dst);
  for (size_t i = 0; i < out.size(); ++i)
    if ((pred[i] != 0) != inst.reverse)
      out[i] = x[i];
  store(mem, inst.dst, out);
}

/// dst partition 32q + i = src partition 32q + mask[i] (255: dst's own), exact for every dtype.
template <class T> void streamShuffleAs(Memory &mem, const Instruction &inst) {
  const std::vector<T> x = load<T>(mem, inst.srcs[0]);
  std::vector<T> out = load<T>(mem, inst.dst);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts;
  for (int64_t q = 0; q < parts; q += 32)
    for (int64_t i = 0; i < 32; ++i) {
      const int64_t from = inst.affine[size_t(i)];
      if (from == 255)
        continue;
      std::copy_n(x.begin() + (q + from) * n, n, out.begin() + (q + i) * n);
    }
  store(mem, inst.dst, out);
}

/// dst[p, j] = data[p, idx[p, j]], exact for every dtype; an index out of range is an error.
template <class T> void nGatherAs(Memory &mem, size_t index, const Instruction &inst) {
  const std::vector<T> x = load<T>(mem, inst.srcs[0]);
  const std::vector<int64_t> idx = load<int64_t>(mem, inst.srcs[1]);
  const int64_t parts = partitionsOf(inst.dst), n = int64_t(x.size()) / parts,
                m = int64_t(idx.size()) / parts;
  std::vector<T> out(idx.size());
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t j = 0; j < m; ++j) {
      const int64_t at = idx[size_t(p * m + j)];
      if (at < 0 || at >= n)
        failInstruction(index, inst,
                        "index " + std::to_string(at) + " at partition " + std::to_string(p) +
                            ", element " + std::to_string(j) + " is outside [0, " +
                            std::to_string(n) + ") (srcs[0]'s elements per partition)");
      out[size_t(p * m + j)] = x[size_t(p * n + at)];
    }
  store(mem, inst.dst, out);
}

/// Each GpSimd core's 16 partitions gather E-element runs of their own rows at the first V of
/// the core's indices (taken partition first), exact for every dtype; a run leaving the row is
/// an error.
template <class T> void localGatherAs(Memory &mem, size_t index, const Instruction &inst) {
  const std::vector<T> x = load<T>(mem, inst.srcs[0]);
  const std::vector<int64_t> idx = load<int64_t>(mem, inst.srcs[1]);
  const int64_t parts = partitionsOf(inst.srcs[0]), n = int64_t(x.size()) / parts,
                k = int64_t(idx.size()) / parts;
  const int64_t e = int64_t(inst.imm[0]), v = int64_t(inst.imm[1]);
  std::vector<T> out(size_t(parts * v * e));
  for (int64_t core = 0; core < parts / 16; ++core)
    for (int64_t j = 0; j < v; ++j) {
      // indices_1d[j] = index[16 core + j % 16, j / 16] (numpy's flatten(order='F'))
      const int64_t at = idx[size_t((16 * core + j % 16) * k + j / 16)];
      if (at + e > n)
        failInstruction(index, inst,
                        "index " + std::to_string(at) + " (valid index " + std::to_string(j) +
                            " of GpSimd core " + std::to_string(core) + ") reads elements [" +
                            std::to_string(at) + ", " + std::to_string(at + e) +
                            ") of rows of " + std::to_string(n) + " (srcs[0])");
      for (int64_t p = 16 * core; p < 16 * core + 16; ++p)
        std::copy_n(x.begin() + p * n + at, e, out.begin() + (p * v + j) * e);
    }
  store(mem, inst.dst, out);
}

/// For each segment id: the first index of its run of equal ids and one past the last (N and
/// -1 for the padding id 0), starts then ends.
template <class T> void sequenceBoundsAs(Memory &mem, const Instruction &inst) {
  const std::vector<T> ids = load<T>(mem, inst.srcs[0]);
  const int64_t n = int64_t(ids.size());
  std::vector<T> out(size_t(2 * n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = ids[size_t(i)] == T(0)                          ? T(n)
                     : i > 0 && ids[size_t(i)] == ids[size_t(i - 1)] ? out[size_t(i - 1)]
                                                                     : T(i);
  for (int64_t i = n - 1; i >= 0; --i)
    out[size_t(n + i)] = ids[size_t(i)] == T(0)                              ? T(-1)
                         : i + 1 < n && ids[size_t(i)] == ids[size_t(i + 1)] ? out[size_t(n + i + 1)]
                                                                             : T(i + 1);
  store(mem, inst.dst, out);
}

/// Partitions 0, 16, ... of the tile: the nonzero elements' indices + imm[0], imm[1] padding,
/// the count last; dst's other partitions unchanged.
void nonzeroWithCount(Memory &mem, const Instruction &inst) {
  const std::vector<double> x = load<double>(mem, inst.srcs[0]);
  std::vector<int64_t> out = load<int64_t>(mem, inst.dst);
  const int64_t parts = partitionsOf(inst.srcs[0]), t = int64_t(x.size()) / parts;
  const int64_t offset = int64_t(inst.imm[0]), pad = int64_t(inst.imm[1]);
  for (int64_t p = 0; p < parts; p += 16) {
    int64_t *row = &out[size_t(p * (t + 1))];
    int64_t count = 0;
    for (int64_t f = 0; f < t; ++f)
      if (x[size_t(p * t + f)] != 0) // NaN is nonzero
        row[count++] = f + offset;
    std::fill(row + count, row + t, pad);
    row[t] = count;
  }
  store(mem, inst.dst, out);
}

/// dst = (affine value cmp 0) ? src : imm[0], the value from each element's partition and
/// free indices (dst's dims). Integers copy exactly, floats in fp32.
template <class T> void affineSelectAs(Memory &mem, const Instruction &inst) {
  std::vector<T> x = load<T>(mem, inst.srcs[0]);
  const auto &dims = inst.dst.dims;
  const T fill = T(inst.imm[0]);
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t v = inst.affine[0];
    for (size_t k = 0; k < dims.size(); ++k)
      v += inst.affine[k + 1] * index[k];
    float keep = 0;
    withAluOp<float>(inst.alu, [&](auto f) { keep = f(float(v), 0.0f); });
    if (keep == 0)
      x[e] = fill;
    for (size_t k = dims.size(); k-- > 0;) { // the next index, row-major
      if (++index[k] < dims[k][1])
        break;
      index[k] = 0;
    }
  }
  store(mem, inst.dst, x);
}

/// iota with affine coefficients: dst = affine[0] + affine[1] * p + sum_k affine[1 + k] * i_k.
template <class T> void affineIotaAs(Memory &mem, const Instruction &inst) {
  const auto &dims = inst.dst.dims;
  int64_t n = 1;
  for (const auto &d : dims)
    n *= d[1];
  std::vector<T> out(static_cast<size_t>(n));
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t v = inst.affine[0];
    for (size_t k = 0; k < dims.size(); ++k)
      v += inst.affine[k + 1] * index[k];
    out[size_t(e)] = T(v);
    for (size_t k = dims.size(); k-- > 0;) { // the next index, row-major
      if (++index[k] < dims[k][1])
        break;
      index[k] = 0;
    }
  }
  store(mem, inst.dst, out);
}

} // namespace

bool runIsaOp(Memory &mem, size_t index, const Instruction &inst, const InstrShape &shape) {
  (void)shape;
  switch (inst.opcode) {
  case Opcode::TensorScalar:
    if (!inst.twoOps && !inst.scaleTile)
      return false;
    tensorScalar(mem, inst);
    return true;
  case Opcode::ScalarTensorTensor:
    scalarTensorTensor(mem, inst);
    return true;
  case Opcode::Reciprocal:
    reciprocal(mem, inst);
    return true;
  case Opcode::TensorScalarReduce:
    tensorScalarReduce(mem, inst);
    return true;
  case Opcode::RangeSelect:
    rangeSelect(mem, inst);
    return true;
  case Opcode::TensorScalarCumulative:
    tensorScalarCumulative(mem, inst);
    return true;
  case Opcode::SelectReduce:
    selectReduce(mem, inst);
    return true;
  case Opcode::BnStats:
    bnStats(mem, inst);
    return true;
  case Opcode::BnAggr:
    bnAggr(mem, inst);
    return true;
  case Opcode::TensorTensorScan:
    tensorTensorScan(mem, inst);
    return true;
  case Opcode::TensorPartitionReduce:
    partitionReduce(mem, inst);
    return true;
  case Opcode::Transpose:
  case Opcode::DmaTranspose:
    transpose(mem, inst);
    return true;
  case Opcode::Max8:
    max8(mem, inst);
    return true;
  case Opcode::FindIndex8:
    findIndex8(mem, inst);
    return true;
  case Opcode::MatchReplace8:
    matchReplace8(mem, inst);
    return true;
  case Opcode::Iota:
    if (inst.affine.empty())
      return false;
    if (isIntegerDType(inst.dst.dtype))
      affineIotaAs<int64_t>(mem, inst);
    else
      affineIotaAs<float>(mem, inst);
    return true;
  case Opcode::AffineSelect:
    if (isIntegerDType(inst.dst.dtype))
      affineSelectAs<int64_t>(mem, inst);
    else
      affineSelectAs<float>(mem, inst);
    return true;
  case Opcode::NonzeroWithCount:
    nonzeroWithCount(mem, inst);
    return true;
  case Opcode::Activate2:
    activate2(mem, inst);
    return true;
  case Opcode::Exponential:
    exponential(mem, inst);
    return true;
  case Opcode::Rng:
    rng(mem, inst);
    return true;
  case Opcode::Rand2:
    rand2(mem, inst);
    return true;
  case Opcode::RandSetState:
  case Opcode::RandGetState:
    randState(mem, inst, inst.opcode == Opcode::RandSetState);
    return true;
  case Opcode::SetRngSeed:
    setRngSeed(mem, inst);
    return true;
  case Opcode::LocalGather:
    if (isIntegerDType(inst.dst.dtype))
      localGatherAs<int64_t>(mem, index, inst);
    else
      localGatherAs<float>(mem, index, inst);
    return true;
  case Opcode::SequenceBounds:
    if (isIntegerDType(inst.dst.dtype))
      sequenceBoundsAs<int64_t>(mem, inst);
    else
      sequenceBoundsAs<float>(mem, inst);
    return true;
  case Opcode::NGather:
    if (isIntegerDType(inst.dst.dtype))
      nGatherAs<int64_t>(mem, index, inst);
    else
      nGatherAs<float>(mem, index, inst);
    return true;
  case Opcode::StreamShuffle:
    if (isIntegerDType(inst.dst.dtype))
      streamShuffleAs<int64_t>(mem, inst);
    else
      streamShuffleAs<float>(mem, inst);
    return true;
  case Opcode::CopyPredicated:
    if (isIntegerDType(inst.dst.dtype))
      copyPredicatedAs<int64_t>(mem, inst);
    else
      copyPredicatedAs<float>(mem, inst);
    return true;
  default:
    return false;
  }
}

} // namespace neuron::runtime
