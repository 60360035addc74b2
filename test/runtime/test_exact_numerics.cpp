// Tests that the functional simulator computes what torch computes where
// doubles or C++ would silently differ: int64 arithmetic above 2^53 and on
// overflow (two's-complement wrap), integer div/mod by zero (an error),
// float <-> u8/i8/i32/i64 conversions (torch on x86-64), and NaN through
// max/min ops and reductions (torch.maximum / amax return NaN).
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/Numerics.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t k2p53 = int64_t(1) << 53;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

/// One [1, n] source tile: its dtype and raw bytes.
struct Src {
  DType dt;
  std::vector<uint8_t> bytes;
  int64_t n;
};
template <class T> Src src(DType dt, const std::vector<T> &v) {
  REQUIRE(dtypeSize(dt) == int64_t(sizeof(T)));
  return {dt, bytesOf(v), int64_t(v.size())};
}

/// Runs `inst` (opcode, queue, alu, imm, ... set; dst and srcs filled in
/// here) on [1, n] SBUF tiles: each source is DMA'd in from its own input,
/// dst is a [1, outN] tile of `outDt` stored to the output, returned as Out.
template <class Out>
std::vector<Out> runOne(Instruction inst, const std::vector<Src> &srcs,
                        DType outDt, int64_t outN) {
  Builder b;
  inst.srcs.clear();
  for (size_t k = 0; k < srcs.size(); ++k) {
    const Src &s = srcs[k];
    const int64_t off = int64_t(k) * 16384;
    uint32_t in = b.input("x" + std::to_string(k), s.dt, {1, s.n});
    b.dma(kQueueDma0 + int(k), sbuf(s.dt, 0, off, 1, {s.n}),
          hbm(in, s.dt, 0, {{s.n, 1}, {1, s.n}}));
    inst.srcs.push_back(sbuf(s.dt, 0, off, 1, {s.n}));
  }
  inst.dst = sbuf(outDt, 0, 65536, 1, {outN});
  b.add(inst);
  uint32_t out = b.output("y", outDt, {1, outN});
  b.dma(kQueueDma0 + 8, hbm(out, outDt, 0, {{outN, 1}, {1, outN}}),
        sbuf(outDt, 0, 65536, 1, {outN}));
  b.sequential();
  std::vector<const void *> ins;
  for (const Src &s : srcs)
    ins.push_back(s.bytes.data());
  std::vector<Out> y(static_cast<size_t>(outN));
  simulate(b.prog, trn2(), ins, {y.data()});
  return y;
}

Instruction make(Opcode op, int queue, AluOp alu = AluOp::Add,
                 double imm0 = 0, bool reverse = false) {
  Instruction in;
  in.opcode = op;
  in.queue = uint16_t(queue);
  in.alu = alu;
  in.imm[0] = imm0;
  in.reverse = reverse;
  if (op == Opcode::Activation)
    in.imm[0] = 1.0;
  return in;
}

template <class T>
std::vector<T> tt(AluOp alu, DType dt, const std::vector<T> &a,
                  const std::vector<T> &b, DType outDt = DType::F32) {
  if (outDt == DType::F32 && std::is_integral_v<T>)
    outDt = dt;
  return runOne<T>(make(Opcode::TensorTensor, kQueueVector, alu),
                   {src(dt, a), src(dt, b)}, outDt, int64_t(a.size()));
}

template <class T>
std::vector<T> ts(AluOp alu, DType dt, const std::vector<T> &a, double imm,
                  bool reverse = false) {
  return runOne<T>(make(Opcode::TensorScalar, kQueueGpSimd, alu, imm, reverse),
                   {src(dt, a)}, dt, int64_t(a.size()));
}

/// The reduction of `a` into one element of outDt, whose C type is Out.
template <class Out = void, class T>
auto reduce(AluOp alu, DType dt, const std::vector<T> &a, DType outDt) {
  using O = std::conditional_t<std::is_void_v<Out>, T, Out>;
  REQUIRE(dtypeSize(outDt) == int64_t(sizeof(O)));
  return runOne<O>(make(Opcode::TensorReduce, kQueueVector, alu), {src(dt, a)},
                   outDt, 1)[0];
}

template <class Out, class In>
std::vector<Out> convert(DType from, const std::vector<In> &x, DType to) {
  return runOne<Out>(make(Opcode::TensorCopy, kQueueVector), {src(from, x)},
                     to, int64_t(x.size()));
}

bool sameFloats(const std::vector<float> &got, const std::vector<float> &want) {
  if (got.size() != want.size())
    return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i])
      return false;
  return true;
}

} // namespace

TEST_CASE("int64 add, mul and sum are exact above 2^53", "[numerics][int]") {
  const std::vector<int64_t> a = {k2p53 + 1, (int64_t(1) << 60) + 3,
                                  -(int64_t(1) << 62) + 5, 7};
  const std::vector<int64_t> b = {k2p53 + 2, 1, -3, (int64_t(1) << 55) + 1};
  CHECK(tt(AluOp::Add, DType::I64, a, b) ==
        std::vector<int64_t>{2 * k2p53 + 3, (int64_t(1) << 60) + 4,
                             -(int64_t(1) << 62) + 2,
                             (int64_t(1) << 55) + 8});
  CHECK(tt(AluOp::Sub, DType::I64, a, b) ==
        std::vector<int64_t>{-1, (int64_t(1) << 60) + 2,
                             -(int64_t(1) << 62) + 8,
                             7 - (int64_t(1) << 55) - 1});
  CHECK(tt(AluOp::Mul, DType::I64, std::vector<int64_t>{k2p53 + 1, 3},
           std::vector<int64_t>{3, k2p53 + 1}) ==
        std::vector<int64_t>{3 * k2p53 + 3, 3 * k2p53 + 3});
  CHECK(ts(AluOp::Mul, DType::I64, a, 3.0) ==
        std::vector<int64_t>{3 * k2p53 + 3, 3 * ((int64_t(1) << 60) + 3),
                             4611686018427387919 /* wrapped */, 21});
  CHECK(ts(AluOp::Add, DType::I64, a, 1.0) ==
        std::vector<int64_t>{k2p53 + 2, (int64_t(1) << 60) + 4,
                             -(int64_t(1) << 62) + 6, 8});
  // A double sum loses the +1s: 2^53 + 1 + 1 + 1 is 2^53 in double.
  CHECK(reduce(AluOp::Add, DType::I64,
               std::vector<int64_t>{k2p53, 1, 1, 1, -5, k2p53}, DType::I64) ==
        2 * k2p53 - 2);
  CHECK(reduce(AluOp::Max, DType::I64,
               std::vector<int64_t>{k2p53 + 1, k2p53, k2p53 - 1}, DType::I64) ==
        k2p53 + 1);
  CHECK(reduce(AluOp::Min, DType::I64,
               std::vector<int64_t>{-k2p53, -k2p53 - 1, 0}, DType::I64) ==
        -k2p53 - 1);
}

TEST_CASE("int64 arithmetic wraps on overflow like torch", "[numerics][int]") {
  CHECK(tt(AluOp::Add, DType::I64, std::vector<int64_t>{kI64Max, kI64Min},
           std::vector<int64_t>{1, -1}) ==
        std::vector<int64_t>{kI64Min, kI64Max});
  CHECK(ts(AluOp::Mul, DType::I64, std::vector<int64_t>{int64_t(1) << 62},
           4.0) == std::vector<int64_t>{0});
  CHECK(ts(AluOp::Sub, DType::I64, std::vector<int64_t>{kI64Min}, 0.0,
           /*reverse=*/true) == std::vector<int64_t>{kI64Min}); // 0 - MIN
  CHECK(reduce(AluOp::Add, DType::I64, std::vector<int64_t>{kI64Max, 1},
               DType::I64) == kI64Min);
  CHECK(reduce(AluOp::Mul, DType::I64,
               std::vector<int64_t>{int64_t(1) << 32, int64_t(1) << 32, 5},
               DType::I64) == 0);
  // neg and abs of INT64_MIN are INT64_MIN (torch.neg / torch.abs).
  for (ActFunc f : {ActFunc::Neg, ActFunc::Abs}) {
    Instruction act = make(Opcode::Activation, kQueueScalar);
    act.func = f;
    CHECK(runOne<int64_t>(act,
                          {src(DType::I64, std::vector<int64_t>{
                                               kI64Min, k2p53 + 1, -5})},
                          DType::I64, 3) ==
          std::vector<int64_t>{kI64Min,
                               f == ActFunc::Neg ? -k2p53 - 1 : k2p53 + 1,
                               f == ActFunc::Neg ? 5 : 5});
  }
  // Narrow integer results wrap on store: int32 and u8 as torch.
  CHECK(tt(AluOp::Add, DType::I32, std::vector<int32_t>{INT32_MAX},
           std::vector<int32_t>{1}) == std::vector<int32_t>{INT32_MIN});
  CHECK(tt(AluOp::Add, DType::U8, std::vector<uint8_t>{200, 0},
           std::vector<uint8_t>{100, 0}) == std::vector<uint8_t>{44, 0});
  CHECK(ts(AluOp::Sub, DType::U8, std::vector<uint8_t>{0, 3}, 1.0) ==
        std::vector<uint8_t>{255, 2});
  CHECK(tt(AluOp::Mul, DType::I8, std::vector<int8_t>{100, -128},
           std::vector<int8_t>{3, -1}) == std::vector<int8_t>{44, -128});
}

TEST_CASE("u8 arithmetic is unsigned", "[numerics][int]") {
  const std::vector<uint8_t> a = {200, 100, 255}, b = {100, 200, 1};
  CHECK(tt(AluOp::Gt, DType::U8, a, b, DType::U8) ==
        std::vector<uint8_t>{1, 0, 1});
  CHECK(tt(AluOp::Max, DType::U8, a, b) == std::vector<uint8_t>{200, 200, 255});
  CHECK(tt(AluOp::Min, DType::U8, a, b) == std::vector<uint8_t>{100, 100, 1});
  // u8 sum into int64 (torch sums u8 to int64): 200 + 100 + 255.
  CHECK(reduce<int64_t>(AluOp::Add, DType::U8, a, DType::I64) == 555);
  // Widening copies keep the unsigned value.
  CHECK(convert<int64_t>(DType::U8, a, DType::I64) ==
        std::vector<int64_t>{200, 100, 255});
  CHECK(convert<int32_t>(DType::U8, a, DType::I32) ==
        std::vector<int32_t>{200, 100, 255});
  CHECK(convert<int8_t>(DType::U8, a, DType::I8) ==
        std::vector<int8_t>{-56, 100, -1});
  CHECK(convert<uint8_t>(DType::I64, std::vector<int64_t>{-5, 300, 256},
                         DType::U8) == std::vector<uint8_t>{251, 44, 0});
}

TEST_CASE("integer comparisons and logic are exact", "[numerics][int]") {
  CHECK(tt(AluOp::Lt, DType::I64, std::vector<int64_t>{k2p53, k2p53 + 1},
           std::vector<int64_t>{k2p53 + 1, k2p53}, DType::I64) ==
        std::vector<int64_t>{1, 0});
  CHECK(tt(AluOp::Eq, DType::I64, std::vector<int64_t>{k2p53, k2p53 + 1},
           std::vector<int64_t>{k2p53 + 1, k2p53 + 1}, DType::I64) ==
        std::vector<int64_t>{0, 1});
  const std::vector<int64_t> a = {2, 0, -1, 6}, b = {1, 1, 4, 3};
  // bitwise_and / or / xor of integer tensors.
  CHECK(tt(AluOp::And, DType::I64, a, b) == std::vector<int64_t>{0, 0, 4, 2});
  CHECK(tt(AluOp::Or, DType::I64, a, b) == std::vector<int64_t>{3, 1, -1, 7});
  CHECK(tt(AluOp::Xor, DType::I64, a, b) == std::vector<int64_t>{3, 1, -5, 5});
  // logical_and / logical_or of integer tensors: a bool dst.
  auto logical = [&](AluOp op) {
    return runOne<uint8_t>(make(Opcode::TensorTensor, kQueueVector, op),
                           {src(DType::I64, a), src(DType::I64, b)},
                           DType::Bool, 4);
  };
  CHECK(logical(AluOp::And) == std::vector<uint8_t>{1, 0, 1, 1});
  CHECK(logical(AluOp::Or) == std::vector<uint8_t>{1, 1, 1, 1});
  CHECK(logical(AluOp::Xor) == std::vector<uint8_t>{0, 1, 0, 0});
}

TEST_CASE("integer div truncates and mod is torch.remainder",
          "[numerics][int]") {
  const std::vector<int64_t> a = {-7, 7, -7, 7, kI64Min, kI64Min, k2p53 + 1},
                             b = {2, -2, -2, 2, -1, 3, 2};
  CHECK(tt(AluOp::Div, DType::I64, a, b) ==
        std::vector<int64_t>{-3, -3, 3, 3, kI64Min, kI64Min / 3,
                             (k2p53 + 1) / 2});
  CHECK(tt(AluOp::Mod, DType::I64, a, b) ==
        std::vector<int64_t>{1, -1, -1, 1, 0, 1, 1});
  CHECK(tt(AluOp::Fmod, DType::I64, a, b) ==
        std::vector<int64_t>{-1, 1, -1, 1, 0, kI64Min % 3, 1});
  CHECK(ts(AluOp::Mod, DType::I64, std::vector<int64_t>{-7, 7}, 3.0) ==
        std::vector<int64_t>{2, 1});
  CHECK(ts(AluOp::Mod, DType::I64, std::vector<int64_t>{-7, 7}, 3.0,
           /*reverse=*/true) == std::vector<int64_t>{-4, 3}); // 3 % a
  CHECK(tt(AluOp::Pow, DType::I64, std::vector<int64_t>{3, 2, -1, 2, 1},
           std::vector<int64_t>{39, 64, -3, -1, -5}) ==
        std::vector<int64_t>{4052555153018976267, 0, -1, 0, 1});
}

TEST_CASE("integer division by zero is a SimulationError", "[numerics][int]") {
  const std::vector<int64_t> a = {1, 2, 3}, zeroAt2 = {1, 1, 0};
  CHECK_THROWS_WITH(
      tt(AluOp::Div, DType::I64, a, zeroAt2),
      Contains("(tensor_tensor") && Contains("integer div by zero") &&
          Contains("ZeroDivisionError") && Contains("element 2"));
  CHECK_THROWS_WITH(tt(AluOp::Mod, DType::I32,
                          std::vector<int32_t>{1, 2},
                          std::vector<int32_t>{0, 1}),
                       Contains("integer mod by zero") &&
                           Contains("element 0"));
  CHECK_THROWS_WITH(ts(AluOp::Mod, DType::I64, a, 0.0),
                       Contains("(tensor_scalar") &&
                           Contains("integer mod by zero") &&
                           Contains("the immediate"));
  CHECK_THROWS_AS(ts(AluOp::Div, DType::U8, std::vector<uint8_t>{4, 0}, 8.0,
                     /*reverse=*/true),
                  SimulationError);
  CHECK_THROWS_WITH(ts(AluOp::Div, DType::U8, std::vector<uint8_t>{4, 0},
                          8.0, /*reverse=*/true),
                       Contains("integer div by zero") &&
                           Contains("element 1"));
  // Float division by zero stays IEEE (inf), as torch.
  CHECK(tt(AluOp::Div, DType::F32, std::vector<float>{1.0f},
           std::vector<float>{0.0f}) == std::vector<float>{kInf});
}

TEST_CASE("integer select, iota and memset are exact", "[numerics][int]") {
  // Select with int64 values and a float condition (NaN and 0.5 are true).
  const std::vector<float> cond = {0.5f, 0.0f, kNaN, -0.0f};
  const std::vector<int64_t> x = {k2p53 + 1, k2p53 + 3, kI64Max, 1},
                             y = {-1, k2p53 + 5, 0, kI64Min};
  CHECK(runOne<int64_t>(make(Opcode::Select, kQueueVector),
                        {src(DType::F32, cond), src(DType::I64, x),
                         src(DType::I64, y)},
                        DType::I64, 4) ==
        std::vector<int64_t>{k2p53 + 1, k2p53 + 5, kI64Max, kI64Min});
  const std::vector<uint8_t> bcond = {1, 0, 1, 0};
  CHECK(runOne<int64_t>(make(Opcode::Select, kQueueVector),
                        {src(DType::Bool, bcond), src(DType::I64, x),
                         src(DType::I64, y)},
                        DType::I64, 4) ==
        std::vector<int64_t>{k2p53 + 1, k2p53 + 5, kI64Max, kI64Min});

  Instruction iota = make(Opcode::Iota, kQueueGpSimd);
  iota.imm[0] = double(k2p53);
  iota.imm[1] = 0;
  CHECK(runOne<int64_t>(iota, {}, DType::I64, 4) ==
        std::vector<int64_t>{k2p53, k2p53 + 1, k2p53 + 2, k2p53 + 3});
  Instruction set = make(Opcode::Memset, kQueueVector, AluOp::Add,
                         double(int64_t(1) << 62));
  CHECK(runOne<int64_t>(set, {}, DType::I64, 2) ==
        std::vector<int64_t>{int64_t(1) << 62, int64_t(1) << 62});
}

TEST_CASE("a fractional immediate on integers computes in double",
          "[numerics][int]") {
  // Not exact in int64: the instruction computes in double and the store
  // truncates toward zero (as .to(torch.int64) of the float result would).
  CHECK(ts(AluOp::Mul, DType::I64, std::vector<int64_t>{5, -5, 7}, 0.5) ==
        std::vector<int64_t>{2, -2, 3});
  CHECK(ts(AluOp::Add, DType::I32, std::vector<int32_t>{1, -1}, 0.75) ==
        std::vector<int32_t>{1, 0});
}

TEST_CASE("float to integer conversions match torch on x86-64",
          "[numerics][convert]") {
  // torch.tensor(x).to(dtype) on x86-64 for every value (the out-of-range
  // ones are undefined in C++; these are what torch returns there).
  const std::vector<float> x = {200.0f, 300.0f, -1.0f, 255.9f, -3.7f,
                                kNaN,   kInf,   -kInf, 1e10f,  -129.0f,
                                3e9f,   70000.0f};
  CHECK(convert<uint8_t>(DType::F32, x, DType::U8) ==
        std::vector<uint8_t>{200, 44, 255, 255, 253, 0, 0, 0, 0, 127, 0, 112});
  CHECK(convert<int8_t>(DType::F32, x, DType::I8) ==
        std::vector<int8_t>{-56, 44, -1, -1, -3, 0, 0, 0, 0, 127, 0, 112});
  CHECK(convert<int32_t>(DType::F32, x, DType::I32) ==
        std::vector<int32_t>{200, 300, -1, 255, -3, INT32_MIN, INT32_MIN,
                             INT32_MIN, INT32_MIN, -129, INT32_MIN, 70000});
  CHECK(convert<int64_t>(DType::F32, x, DType::I64) ==
        std::vector<int64_t>{200, 300, -1, 255, -3, kI64Min, kI64Min, kI64Min,
                             10000000000, -129, 3000000000, 70000});
  CHECK(convert<int64_t>(DType::F32, std::vector<float>{9.3e18f, -9.3e18f},
                         DType::I64) ==
        std::vector<int64_t>{kI64Min, kI64Min});
  CHECK(convert<int64_t>(DType::F32, std::vector<float>{-0x1p63f, 0x1p62f},
                         DType::I64) ==
        std::vector<int64_t>{kI64Min, int64_t(1) << 62});
  CHECK(convert<uint8_t>(DType::F32, std::vector<float>{kNaN, 0.0f, -0.0f},
                         DType::Bool) == std::vector<uint8_t>{1, 0, 0});
  // bf16 sources convert through fp32 as well.
  CHECK(convert<uint8_t>(DType::BF16,
                         std::vector<uint16_t>{floatToBf16(200.0f),
                                               floatToBf16(300.0f)},
                         DType::U8) == std::vector<uint8_t>{200, 44});
}

TEST_CASE("u8 and i8 convert to float by value", "[numerics][convert]") {
  CHECK(convert<float>(DType::U8, std::vector<uint8_t>{200, 0, 255, 128},
                       DType::F32) ==
        std::vector<float>{200.0f, 0.0f, 255.0f, 128.0f});
  CHECK(convert<float>(DType::I8, std::vector<int8_t>{-56, 0, 127, -128},
                       DType::F32) ==
        std::vector<float>{-56.0f, 0.0f, 127.0f, -128.0f});
  CHECK(convert<uint16_t>(DType::U8, std::vector<uint8_t>{200}, DType::BF16) ==
        std::vector<uint16_t>{floatToBf16(200.0f)});
  // int64 -> fp32 rounds to nearest once (torch's .to(torch.float32)):
  // 2^62 + 2^38 + 1 is above the tie; through double it would round to the
  // tie 2^62 + 2^38 and then to even, 2^62.
  const int64_t aboveTie = (int64_t(1) << 62) + (int64_t(1) << 38) + 1;
  CHECK(convert<float>(DType::I64,
                       std::vector<int64_t>{k2p53 + 1, kI64Min, aboveTie},
                       DType::F32) ==
        std::vector<float>{float(k2p53), -0x1p63f, 0x1p62f + 0x1p39f});
  // u8 through a float computation: 200 * 1.5 = 300 stays unsigned-correct.
  CHECK(runOne<float>(make(Opcode::TensorScalar, kQueueVector, AluOp::Mul, 1.5),
                      {src(DType::U8, std::vector<uint8_t>{200, 255})},
                      DType::F32, 2) == std::vector<float>{300.0f, 382.5f});
}

TEST_CASE("max and min propagate NaN as torch.maximum / minimum",
          "[numerics][nan]") {
  // 37 elements: the 8-wide vector loops and the scalar tail both see NaNs.
  const int n = 37;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[size_t(i)] = float(i) - 10.0f;
    b[size_t(i)] = 5.0f - float(i);
  }
  for (int i : {0, 9, 36})
    a[size_t(i)] = kNaN;
  for (int i : {3, 17, 35})
    b[size_t(i)] = kNaN;
  std::vector<float> wantMax(n), wantMin(n);
  for (int i = 0; i < n; ++i) {
    const float x = a[size_t(i)], y = b[size_t(i)];
    const bool nan = std::isnan(x) || std::isnan(y);
    wantMax[size_t(i)] = nan ? kNaN : std::max(x, y);
    wantMin[size_t(i)] = nan ? kNaN : std::min(x, y);
  }
  CHECK(sameFloats(tt(AluOp::Max, DType::F32, a, b), wantMax));
  CHECK(sameFloats(tt(AluOp::Min, DType::F32, a, b), wantMin));
  // bf16 operands (converted through fp32 scratch).
  std::vector<uint16_t> ah(n), bh(n);
  for (int i = 0; i < n; ++i) {
    ah[size_t(i)] = floatToBf16(a[size_t(i)]);
    bh[size_t(i)] = floatToBf16(b[size_t(i)]);
  }
  auto maxH = tt(AluOp::Max, DType::BF16, ah, bh, DType::BF16);
  std::vector<float> maxHf(n);
  for (int i = 0; i < n; ++i)
    maxHf[size_t(i)] = bf16ToFloat(maxH[size_t(i)]);
  CHECK(sameFloats(maxHf, wantMax));

  // Tensor-scalar: NaN in the tensor, and a NaN immediate.
  std::vector<float> wantTs(n);
  for (int i = 0; i < n; ++i)
    wantTs[size_t(i)] = std::isnan(a[size_t(i)]) ? kNaN
                                                 : std::max(a[size_t(i)], 0.0f);
  CHECK(sameFloats(ts(AluOp::Max, DType::F32, a, 0.0), wantTs));
  CHECK(sameFloats(ts(AluOp::Min, DType::F32, a, 0.0, true),
                   [&] {
                     std::vector<float> w(n);
                     for (int i = 0; i < n; ++i)
                       w[size_t(i)] = std::isnan(a[size_t(i)])
                                          ? kNaN
                                          : std::min(0.0f, a[size_t(i)]);
                     return w;
                   }()));
  CHECK(sameFloats(ts(AluOp::Max, DType::F32, b, double(kNaN)),
                   std::vector<float>(n, kNaN)));
  CHECK(sameFloats(ts(AluOp::Min, DType::F32, b, double(kNaN), true),
                   std::vector<float>(n, kNaN)));

  // Mixed float and integer operands (the double path).
  std::vector<int32_t> ints(n, 3);
  auto mixed = runOne<float>(make(Opcode::TensorTensor, kQueueVector, AluOp::Max),
                             {src(DType::F32, a), src(DType::I32, ints)},
                             DType::F32, n);
  for (int i = 0; i < n; ++i)
    CHECK(std::isnan(mixed[size_t(i)]) == std::isnan(a[size_t(i)]));
}

TEST_CASE("max and min reductions return NaN if any element is NaN",
          "[numerics][nan]") {
  // NaN at the start, in the vector body, in the tail; lengths that cover the
  // order-free fast path (no NaN) and the fallback.
  for (int n : {1, 7, 8, 33, 100, 5000}) {
    for (int at : {0, n / 2, n - 1}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i)
        x[size_t(i)] = float((i * 37) % 101) - 50.0f;
      x[size_t(at)] = kNaN;
      for (AluOp op : {AluOp::Max, AluOp::Min}) {
        INFO("n " << n << " NaN at " << at << " op " << aluOpName(op));
        CHECK(std::isnan(reduce(op, DType::F32, x, DType::F32)));
      }
      std::vector<uint16_t> xh(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i)
        xh[size_t(i)] = floatToBf16(x[size_t(i)]);
      INFO("bf16 n " << n << " NaN at " << at);
      CHECK(std::isnan(
          bf16ToFloat(reduce(AluOp::Max, DType::BF16, xh, DType::BF16))));
    }
  }
  // Without NaN: the true extremes (inf included).
  CHECK(reduce(AluOp::Max, DType::F32, std::vector<float>{-kInf, -3.0f, -kInf},
               DType::F32) == -3.0f);
  CHECK(reduce(AluOp::Min, DType::F32, std::vector<float>{kInf, 2.0f, -kInf},
               DType::F32) == -kInf);
}

TEST_CASE("mixed integer and float operands compute in fp32 as torch",
          "[numerics][int]") {
  // torch promotes the int64 operand to float32 first: 2^24 + 1 becomes 2^24.
  const std::vector<int64_t> a = {(int64_t(1) << 24) + 1, -3,
                                  (int64_t(1) << 62) + (int64_t(1) << 38) + 1};
  const std::vector<float> b = {16777216.0f, -2.5f, 0.0f};
  CHECK(runOne<uint8_t>(make(Opcode::TensorTensor, kQueueVector, AluOp::Gt),
                        {src(DType::I64, a), src(DType::F32, b)}, DType::Bool,
                        3) == std::vector<uint8_t>{0, 0, 1});
  CHECK(runOne<float>(make(Opcode::TensorTensor, kQueueVector, AluOp::Add),
                      {src(DType::I64, a), src(DType::F32, b)}, DType::F32,
                      3) ==
        std::vector<float>{33554432.0f, -5.5f, 0x1p62f + 0x1p39f});
}
