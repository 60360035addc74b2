// runtime-bench: speed of the simulator on the host (not a test; ctest does
// not run it).
//
//   build/dev/test/runtime/runtime-bench [--quick | --reps N] [substring]
//
// Each case reports the best of 5 runs (--quick: 1 run, --reps N: N runs) in
// process CPU time, with the best wall time next to it; a substring selects
// the cases whose label contains it (e.g. "gelu", "GEMM", "timing").
//
// Reports
//  - timing-only speed in instructions per second, on a 200k-instruction mix
//    with semaphores (the program of the test "timing-only mode runs a large
//    program"), on
//    the same mix written as a loop (64 instructions run 3125 times: 200k
//    instruction instances, identical stats; and 100x that, 20M instances),
//    on a looped load/activation/tensor_scalar/store pipeline over 100k tiles
//    (400k instances) and on a tiled 4096^3 bf16 GEMM program;
//  - functional speed in GFLOP/s on 1024^3 GEMM programs (fp32 and bf16
//    inputs), tiled exactly as compiler/Conversion/NTorchToNTile/Linear.cpp
//    tiles them (transposing stationary DMA, moving DMA per K tile, matmul
//    into PSUM, PSUM -> SBUF copy, store);
//  - functional speed in G elements/s on [1024, 4096] elementwise programs
//    tiled as the compiler tiles them (DMA in, one Scalar/Vector instruction
//    per tile of 128 rows x 8 KiB, DMA out; SBUF handed out as a ring).
// Results are checked against references (max error printed).
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/Kernels.h"
#include "runtime/simulator/functional/Numerics.h"

#include "ProgramBuilder.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>

using namespace neuron::runtime;
using namespace neuron::runtime::test;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

std::string gFilter;
bool selected(const std::string &label) {
  return gFilter.empty() || label.find(gFilter) != std::string::npos;
}

/// Best time of `reps` calls of `f`, in seconds: process CPU time (the
/// simulator is single-threaded; CPU time does not count the time other
/// processes hold the core, which on a shared machine makes it the stable
/// measure), and the best wall time in gWallSecs.
double gWallSecs = 0;
double bestOf(int reps, const std::function<void()> &f) {
  double best = 1e30, bestWall = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::clock_t c0 = std::clock();
    f();
    best = std::min(best, double(std::clock() - c0) / CLOCKS_PER_SEC);
    bestWall = std::min(bestWall, std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count());
  }
  gWallSecs = bestWall;
  return best;
}

/// Counts instructions per queue so waits name the right completion count.
struct Counter {
  int64_t n[kNumQueues] = {};
  /// The wait for the instruction just added to `p`.
  SemWait after(const Program &p) {
    int q = p.instructions.back().queue;
    return waitFor(q, ++n[q]);
  }
};

Program mixProgram() {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {128, 64});
  for (int i = 0; i < 50000; ++i) {
    b.dma(kQueueDma0 + i % 16, sbuf(DType::F32, 0, 0, 128, {64}),
          hbm(x, DType::F32, 0, {{64, 128}, {1, 64}}));
    b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 256, 128, {64}),
         {sbuf(DType::F32, 0, 0, 128, {64})},
         {{uint16_t(kQueueDma0 + i % 16), uint32_t(i / 16 + 1)}});
    b.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 512, 128, {64}),
         {sbuf(DType::F32, 0, 256, 128, {64})},
         {{kQueueVector, uint32_t(i + 1)}});
    b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 0, 64, {64}),
         {sbuf(DType::BF16, 0, 1024, 128, {64}),
          sbuf(DType::BF16, 0, 2048, 128, {64})},
         {{kQueueScalar, uint32_t(i + 1)}});
  }
  return b.prog;
}

/// mixProgram's instances as a loop: one iteration runs 16 of its groups (one
/// per DMA queue); `iterations` = 3125 gives the same 200k instances.
Program loopedMixProgram(int64_t iterations) {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {128, 64});
  const size_t body = b.next();
  for (int k = 0; k < 16; ++k) { // group i = 16 * iv + k of mixProgram
    b.dma(kQueueDma0 + k, sbuf(DType::F32, 0, 0, 128, {64}),
          hbm(x, DType::F32, 0, {{64, 128}, {1, 64}}));
    b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 256, 128, {64}),
         {sbuf(DType::F32, 0, 0, 128, {64})},
         {waitFor(kQueueDma0 + k, 1, {term(0, 1)})}); // i / 16 + 1
    b.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 512, 128, {64}),
         {sbuf(DType::F32, 0, 256, 128, {64})},
         {waitFor(kQueueVector, k + 1, {term(0, 16)})}); // i + 1
    b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 0, 64, {64}),
         {sbuf(DType::BF16, 0, 1024, 128, {64}),
          sbuf(DType::BF16, 0, 2048, 128, {64})},
         {waitFor(kQueueScalar, k + 1, {term(0, 16)})});
  }
  b.loop(body, iterations);
  return b.prog;
}

/// y = relu(x) * 2 over `tiles` [128, 64] f32 tiles as one loop: a DMA load
/// (HBM offset term) into a ring of 3 SBUF slots (modulus term), an
/// activation and a tensor_scalar into a second ring, a DMA store; waits with
/// value terms. 4 instruction instances per tile.
Program loopedPipelineProgram(int64_t tiles) {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {tiles * 128, 64});
  uint32_t y = b.output("y", DType::F32, {tiles * 128, 64});
  const int64_t slot = 64 * 4, tile = 128 * 64;
  auto ring = [&](int64_t base) {
    return withTerms(sbuf(DType::F32, 0, base, 128, {64}),
                     {term(0, slot, 3)});
  };
  auto hbmTile = [&](uint32_t buf) {
    return withTerms(hbm(buf, DType::F32, 0, {{64, 128}, {1, 64}}),
                     {term(0, tile)});
  };
  b.dma(kQueueDma0, ring(0), hbmTile(x),
        {waitFor(kQueueDma0 + 1, -2, {term(0, 1)})}); // slot reuse
  b.op(Opcode::Activation, kQueueScalar, ring(3 * slot), {ring(0)},
       {waitFor(kQueueDma0, 1, {term(0, 1)})});
  b.last().func = ActFunc::Relu;
  b.op(Opcode::TensorScalar, kQueueVector, ring(3 * slot), {ring(3 * slot)},
       {waitFor(kQueueScalar, 1, {term(0, 1)})});
  b.last().alu = AluOp::Mul;
  b.last().imm[0] = 2;
  b.dma(kQueueDma0 + 1, hbmTile(y), ring(3 * slot),
        {waitFor(kQueueVector, 1, {term(0, 1)})});
  b.loop(0, tiles);
  return b.prog;
}

/// C[M, N] = A[M, K] @ B[K, N], tiled as the compiler's lowerMatmul does.
Program gemmProgram(int64_t M, int64_t N, int64_t K, DType dt) {
  Builder b;
  Counter cnt;
  const int64_t es = dtypeSize(dt);
  uint32_t a = b.input("a", dt, {M, K});
  uint32_t bb = b.input("b", dt, {K, N});
  uint32_t c = b.output("c", DType::F32, {M, N});
  const int64_t tk = 128, tm = 128, tn = 512;
  const int64_t ktiles = (K + tk - 1) / tk;
  const int64_t movOff = ktiles * tm * es; // after the resident stationaries
  const int64_t resOff = movOff + 2 * tn * es;
  int dmaQ = 0, tile = 0;
  auto nextQ = [&] { return kQueueDma0 + (dmaQ++ % 16); };
  for (int64_t m0 = 0; m0 < M; m0 += tm) {
    const int64_t mm = std::min(tm, M - m0);
    std::vector<SemWait> stWaits;
    for (int64_t k0 = 0, kt = 0; k0 < K; k0 += tk, ++kt) {
      const int64_t kk = std::min(tk, K - k0);
      // Transposing load: lhs[m0 + m, k0 + k] -> tile[k, m].
      b.dma(nextQ(), sbuf(dt, 0, kt * tm * es, kk, {mm}),
            hbm(a, dt, m0 * K + k0, {{1, kk}, {K, mm}}));
      stWaits.push_back(cnt.after(b.prog));
    }
    for (int64_t n0 = 0; n0 < N; n0 += tn, ++tile) {
      const int64_t nn = std::min(tn, N - n0);
      const int64_t bank = (tile % 2) * 2048;
      for (int64_t k0 = 0, kt = 0; k0 < K; k0 += tk, ++kt) {
        const int64_t kk = std::min(tk, K - k0);
        const int64_t mv = movOff + (kt % 2) * tn * es;
        b.dma(nextQ(), sbuf(dt, 0, mv, kk, {nn}),
              hbm(bb, dt, k0 * N + n0, {{N, kk}, {1, nn}}));
        std::vector<SemWait> w = {cnt.after(b.prog), stWaits[size_t(kt)]};
        b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, bank, mm, {nn}),
             {sbuf(dt, 0, kt * tm * es, kk, {mm}), sbuf(dt, 0, mv, kk, {nn})},
             w);
        b.last().accumulate = k0 > 0;
        cnt.after(b.prog);
      }
      b.op(Opcode::TensorCopy, kQueueVector,
           sbuf(DType::F32, 0, resOff, mm, {nn}),
           {psum(DType::F32, 0, bank, mm, {nn})},
           {{kQueueTensor, cnt.n[kQueueTensor]}});
      SemWait v = cnt.after(b.prog);
      b.dma(nextQ(), hbm(c, DType::F32, m0 * N + n0, {{N, mm}, {1, nn}}),
            sbuf(DType::F32, 0, resOff, mm, {nn}), {v});
      cnt.after(b.prog);
    }
  }
  b.prog.flops = uint64_t(2 * M * N * K);
  return b.prog;
}

/// y = op(x) (or x <op> x2) over [R, C], tiled as the compiler tiles
/// elementwise ops (compiler/Conversion/NTorchToNTile: tiles of 128 rows and
/// 8 KiB per partition; SBUF ranges handed out by a next-fit ring).
// The functional benchmarks time kernels; their hand-built programs carry no
// semaphores, so the hazard detection (which would reject them) is off.
const RunOptions kUnchecked = [] {
  RunOptions o;
  o.checkHazards = false;
  return o;
}();

using TileBody = std::function<void(Builder &, int64_t rows, int64_t cols,
                                    int64_t inOff, int64_t in2Off,
                                    int64_t outOff)>;
Program elementwiseProgram(int64_t R, int64_t C, DType dt, const TileBody &body,
                           bool twoInputs) {
  Builder b;
  Counter cnt;
  uint32_t x = b.input("x", dt, {R, C});
  uint32_t x2 = twoInputs ? b.input("x2", dt, {R, C}) : 0;
  uint32_t y = b.output("y", dt, {R, C});
  const int64_t es = dtypeSize(dt), tileCols = std::min<int64_t>(C, 8192 / es);
  const int64_t tileBytes = tileCols * es, sbufBytes = 224 * 1024;
  int64_t ring = 0;
  auto alloc = [&] {
    if (ring + tileBytes > sbufBytes)
      ring = 0;
    int64_t off = ring;
    ring += tileBytes;
    return off;
  };
  int q = 0;
  for (int64_t r0 = 0; r0 < R; r0 += 128) {
    const int64_t rows = std::min<int64_t>(128, R - r0);
    for (int64_t c0 = 0; c0 < C; c0 += tileCols) {
      const int64_t cols = std::min(tileCols, C - c0);
      const int64_t inOff = alloc(), in2Off = twoInputs ? alloc() : 0,
                    outOff = alloc();
      std::vector<SemWait> w;
      b.dma(kQueueDma0 + q++ % 16, sbuf(dt, 0, inOff, rows, {cols}),
            hbm(x, dt, r0 * C + c0, {{C, rows}, {1, cols}}));
      w.push_back(cnt.after(b.prog));
      if (twoInputs) {
        b.dma(kQueueDma0 + q++ % 16, sbuf(dt, 0, in2Off, rows, {cols}),
              hbm(x2, dt, r0 * C + c0, {{C, rows}, {1, cols}}));
        w.push_back(cnt.after(b.prog));
      }
      body(b, rows, cols, inOff, in2Off, outOff);
      b.last().waits = w;
      SemWait done = cnt.after(b.prog);
      b.dma(kQueueDma0 + q++ % 16, hbm(y, dt, r0 * C + c0, {{C, rows}, {1, cols}}),
            sbuf(dt, 0, outOff, rows, {cols}), {done});
      cnt.after(b.prog);
    }
  }
  return b.prog;
}

/// Timing-only speed of looped programs; `flat` is the run of mixProgram,
/// whose stats the looped mix of the same 200k instances must reproduce.
void benchLoopedTiming(int reps, const RunStats &flat) {
  RunOptions o;
  o.timingOnly = true;
  for (int64_t iterations : {3125, 312500}) {
    Program looped = loopedMixProgram(iterations);
    RunStats st;
    double s = bestOf(reps, [&] { st = simulate(looped, trn2(), {}, {}, o); });
    const bool differs = iterations == 3125 &&
                         (st.simNs != flat.simNs ||
                          st.instructions != flat.instructions);
    std::printf("timing-only  looped mix (%.1fM instances)  %8.2f M instr/s "
                "(cpu %.1f ms, wall %.1f ms)%s\n",
                st.instructions / 1e6, st.instructions / s / 1e6, s * 1e3,
                gWallSecs * 1e3,
                differs ? "  STATS DIFFER FROM THE FLAT MIX" : "");
  }
  Program pipe = loopedPipelineProgram(100000);
  RunStats st;
  double s = bestOf(reps, [&] { st = simulate(pipe, trn2(), {}, {}, o); });
  std::printf("timing-only  looped load/act/mul/store (%.1fM instances) "
              "%8.2f M instr/s (cpu %.1f ms, wall %.1f ms)\n",
              st.instructions / 1e6, st.instructions / s / 1e6, s * 1e3,
              gWallSecs * 1e3);
}

void benchTiming(int reps) {
  if (!selected("timing-only"))
    return;
  Program mix = mixProgram();
  RunOptions o;
  o.timingOnly = true;
  RunStats flat;
  double s = bestOf(reps, [&] { flat = simulate(mix, trn2(), {}, {}, o); });
  std::printf("timing-only  mix of 200k instructions     %8.2f M instr/s "
              "(cpu %.1f ms, wall %.1f ms)\n",
              flat.instructions / s / 1e6, s * 1e3, gWallSecs * 1e3);
  benchLoopedTiming(reps, flat);
  Program gemm = gemmProgram(4096, 4096, 4096, DType::BF16);
  RunStats st;
  s = bestOf(reps, [&] { st = simulate(gemm, trn2(), {}, {}, o); });
  std::printf("timing-only  4096^3 bf16 GEMM (%zu instr) %8.2f M instr/s "
              "(cpu %.1f ms, wall %.1f ms; simulated %.0f us)\n",
              gemm.instructions.size(), gemm.instructions.size() / s / 1e6,
              s * 1e3, gWallSecs * 1e3, st.simNs / 1e3);
}

void benchGemm(DType dt, int reps) {
  const int64_t n = 1024;
  if (!selected(std::string("GEMM ") + dtypeName(dt)))
    return;
  Program p = gemmProgram(n, n, n, dt);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  const size_t es = size_t(dtypeSize(dt));
  std::vector<uint8_t> a(size_t(n * n) * es), b(size_t(n * n) * es);
  auto fill = [&](std::vector<uint8_t> &v) {
    for (size_t i = 0; i < size_t(n * n); ++i) {
      float f = dist(rng);
      if (dt == DType::BF16) {
        uint16_t h = floatToBf16(f);
        std::memcpy(&v[i * 2], &h, 2);
      } else {
        std::memcpy(&v[i * 4], &f, 4);
      }
    }
  };
  fill(a);
  fill(b);
  auto at = [&](const std::vector<uint8_t> &v, int64_t i) -> double {
    if (dt == DType::BF16) {
      uint16_t h;
      std::memcpy(&h, &v[size_t(i) * 2], 2);
      return bf16ToFloat(h);
    }
    float f;
    std::memcpy(&f, &v[size_t(i) * 4], 4);
    return f;
  };
  std::vector<float> c(static_cast<size_t>(n * n));
  double s = bestOf(reps, [&] {
    simulate(p, trn2(), {a.data(), b.data()}, {c.data()}, kUnchecked);
  });
  double worst = 0;
  for (int t = 0; t < 64; ++t) {
    int64_t i = (t * 131) % n, j = (t * 977 + 5) % n;
    double ref = 0;
    for (int64_t k = 0; k < n; ++k)
      ref += at(a, i * n + k) * at(b, k * n + j);
    worst = std::max(worst, std::fabs(ref - c[size_t(i * n + j)]));
  }
  std::printf("functional   1024^3 GEMM %-4s (%zu instr)   %8.2f GFLOP/s "
              "(cpu %.1f ms, wall %.1f ms; max abs err %.1e)\n",
              dtypeName(dt), p.instructions.size(), 2.0 * n * n * n / s / 1e9,
              s * 1e3, gWallSecs * 1e3, worst);
  if (worst > 1e-3)
    std::printf("  WRONG RESULT\n");
}

void benchElementwise(const char *name, DType dt, bool two, const TileBody &body,
                      const std::function<double(double, double)> &ref,
                      int reps) {
  const int64_t R = 1024, C = 4096, n = R * C;
  if (!selected(std::string(name) + " " + dtypeName(dt)))
    return;
  Program p = elementwiseProgram(R, C, dt, body, two);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<float> xf(static_cast<size_t>(n)), x2f(static_cast<size_t>(n));
  for (auto &v : xf)
    v = dist(rng);
  for (auto &v : x2f)
    v = dist(rng);
  std::vector<uint16_t> xh(static_cast<size_t>(n)), x2h(xh), yh(xh);
  std::vector<float> y(static_cast<size_t>(n));
  const bool bf = dt == DType::BF16;
  if (bf)
    for (int64_t i = 0; i < n; ++i) {
      xh[size_t(i)] = floatToBf16(xf[size_t(i)]);
      x2h[size_t(i)] = floatToBf16(x2f[size_t(i)]);
      xf[size_t(i)] = bf16ToFloat(xh[size_t(i)]);
      x2f[size_t(i)] = bf16ToFloat(x2h[size_t(i)]);
    }
  std::vector<const void *> ins = {bf ? (const void *)xh.data() : xf.data()};
  if (two)
    ins.push_back(bf ? (const void *)x2h.data() : x2f.data());
  std::vector<void *> outs = {bf ? (void *)yh.data() : y.data()};
  double s = bestOf(reps, [&] { simulate(p, trn2(), ins, outs, kUnchecked); });
  double worst = 0;
  for (int64_t i = 0; i < n; i += 997) {
    double r = ref(xf[size_t(i)], x2f[size_t(i)]);
    double got = bf ? bf16ToFloat(yh[size_t(i)]) : y[size_t(i)];
    worst = std::max(worst, std::fabs(got - r) / std::max(1e-3, std::fabs(r)));
  }
  std::printf("functional   [1024, 4096] %-12s %-4s   %8.3f G elem/s "
              "(cpu %.2f ms, wall %.2f ms; max rel err %.1e)\n",
              name, dtypeName(dt), n / s / 1e9, s * 1e3, gWallSecs * 1e3,
              worst);
}

void act(Builder &b, DType dt, ActFunc f, int64_t rows, int64_t cols,
         int64_t in, int64_t out) {
  b.op(Opcode::Activation, kQueueScalar, sbuf(dt, 0, out, rows, {cols}),
       {sbuf(dt, 0, in, rows, {cols})});
  b.last().func = f;
}

void tt(Builder &b, DType dt, AluOp op, int64_t rows, int64_t cols, int64_t in,
        int64_t in2, int64_t out) {
  b.op(Opcode::TensorTensor, kQueueVector, sbuf(dt, 0, out, rows, {cols}),
       {sbuf(dt, 0, in, rows, {cols}), sbuf(dt, 0, in2, rows, {cols})});
  b.last().alu = op;
}

} // namespace

int main(int argc, char **argv) {
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      reps = 1;
    else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else
      gFilter = argv[i];
  }
  std::printf("kernels: %s\n", neuron::runtime::kernels::isaName());
  benchTiming(reps);
  benchGemm(DType::F32, reps);
  benchGemm(DType::BF16, reps);
  const double kInvSqrt2 = 0.70710678118654752440;
  for (DType dt : {DType::F32, DType::BF16}) {
    benchElementwise(
        "gelu", dt, false,
        [dt](Builder &b, int64_t r, int64_t c, int64_t in, int64_t,
             int64_t out) { act(b, dt, ActFunc::Gelu, r, c, in, out);
        },
        [&](double x, double) {
          return 0.5 * x * (1 + std::erf(x * kInvSqrt2));
        },
        reps);
    benchElementwise(
        "exp", dt, false,
        [dt](Builder &b, int64_t r, int64_t c, int64_t in, int64_t,
             int64_t out) { act(b, dt, ActFunc::Exp, r, c, in, out);
        },
        [](double x, double) { return std::exp(x); }, reps);
    benchElementwise(
        "tanh", dt, false,
        [dt](Builder &b, int64_t r, int64_t c, int64_t in, int64_t,
             int64_t out) { act(b, dt, ActFunc::Tanh, r, c, in, out);
        },
        [](double x, double) { return std::tanh(x); }, reps);
    benchElementwise(
        "add", dt, true,
        [dt](Builder &b, int64_t r, int64_t c, int64_t in, int64_t in2,
             int64_t out) { tt(b, dt, AluOp::Add, r, c, in, in2, out);
        },
        [](double x, double y) { return x + y; }, reps);
    benchElementwise(
        "mul", dt, true,
        [dt](Builder &b, int64_t r, int64_t c, int64_t in, int64_t in2,
             int64_t out) { tt(b, dt, AluOp::Mul, r, c, in, in2, out);
        },
        [](double x, double y) { return x * y; }, reps);
  }
  return 0;
}
