// The GpSimd engine's cross-partition data movement of Isa.def: local_gather (each GpSimd core
// gathers inside its 16 partitions) and sequence_bounds (segment runs of one partition).
// Numerics against loops written from NKI's numpy references, costs against Isa.def's
// formulas, legality and serialization.
#include "runtime/program/Isa.h"
#include "runtime/program/Serialize.h"

#include "IsaHarness.h"

#include <catch2/catch.hpp>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using namespace neuron::runtime::test::isa;
using Catch::Matchers::Contains;

TEST_CASE("local_gather: each GpSimd core gathers runs of its rows at its indices, partition "
          "first", "[isa][local_gather]") {
  constexpr int64_t P = 32, N = 40, K = 3, E = 2, V = 37;
  const std::vector<float> x = randoms(P * N, 11);
  std::vector<float> ix(P * K);
  for (size_t i = 0; i < ix.size(); ++i)
    ix[i] = float((i * 7 + 3) % (N - E + 1));
  for (const char *name : {"trn1", "trn2", "trn3"}) {
    Harness h(name);
    AccessPattern xs = h.in(P, N, x), fi = h.in(P, K, ix);
    AccessPattern idx = sbuf(DType::U16, 0, h.sbufOffset, P, {K});
    h.sbufOffset += K * 2;
    h.b.add(make(Opcode::TensorCopy, kQueueVector, idx, {fi}));
    AccessPattern dst = h.tile(P, V * E);
    Instruction in = make(Opcode::LocalGather, kQueueGpSimd, dst, {xs, idx});
    in.imm[0] = E;
    in.imm[1] = V;
    h.b.add(in);
    const std::vector<float> y = h.read({dst})[0];
    for (int64_t core = 0; core < P / 16; ++core)
      for (int64_t v = 0; v < V; ++v) {
        const int64_t at = int64_t(ix[size_t((16 * core + v % 16) * K + v / 16)]);
        for (int64_t p = 16 * core; p < 16 * core + 16; ++p)
          for (int64_t e = 0; e < E; ++e)
            CHECK(bits(y[size_t(p * V * E + v * E + e)]) == bits(x[size_t(p * N + at + e)]));
      }
  }
  const AccessPattern src = sbuf(DType::BF16, 0, 0, 128, {512}),
                      index = sbuf(DType::U16, 0, 2048, 128, {4}),
                      dst = sbuf(DType::BF16, 0, 4096, 128, {64 * 4});
  Instruction c = make(Opcode::LocalGather, kQueueGpSimd, dst, {src, index});
  c.imm[0] = 4;
  c.imm[1] = 64;
  CHECK(rejection(target("trn1"), c).empty());
  Instruction bad = c;
  bad.srcs[1].dtype = DType::I32;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("takes u16 indices (srcs[1]), not i32"));
  bad = c;
  bad.imm[0] = 3;
  CHECK_THAT(rejection(target("trn2"), bad),
             Contains("num_elem_per_idx imm[0] must be 1, 2, 4, 8, 16 or 32, got 3"));
  bad = c;
  bad.imm[1] = 65;
  CHECK_THAT(rejection(target("trn2"), bad),
             Contains("num_valid_indices imm[1] must be an integer in [1, 64]"));
  bad = c;
  bad.dst.dtype = DType::F32;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("differs from srcs[0] bf16"));
  bad = c;
  bad.srcs[0] = sbuf(DType::BF16, 0, 0, 120, {512});
  bad.srcs[1] = sbuf(DType::U16, 0, 2048, 120, {4});
  CHECK_THAT(rejection(target("trn2"), bad), Contains("same multiple of 16 partitions"));
  bad = c;
  bad.dst = sbuf(DType::BF16, 0, 4096, 128, {64});
  CHECK_THAT(rejection(target("trn2"), bad), Contains("dst must be [128, 256]"));
  bad = c;
  bad.queue = kQueueVector;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("it runs on gpsimd"));
  // ESTIMATE: 150 + M, M = V x E gathered elements per partition.
  for (const char *name : {"trn1", "trn2", "trn3"})
    for (int64_t v : {int64_t(16), int64_t(64), int64_t(512)}) {
      Instruction k = c;
      k.srcs[1].dims.back() = {1, v / 16};
      k.imm[1] = double(v);
      k.dst.dims.back() = {1, 4 * v};
      CHECK(cyclesOf(target(name), k) == 150.0 + 4.0 * double(v));
    }
  Builder rb;
  rb.add(c);
  for (const Program &p : {programFromJson(programToJson(rb.prog)),
                           programFromCbor(programToCbor(rb.prog))}) {
    CHECK(p.instructions[0].opcode == Opcode::LocalGather);
    CHECK(p.instructions[0].imm[0] == 4);
    CHECK(p.instructions[0].imm[1] == 64);
  }
}

TEST_CASE("local_gather: an index whose run leaves the row is an error", "[isa][local_gather]") {
  Harness h("trn2");
  AccessPattern xs = h.in(16, 8, randoms(16 * 8, 3));
  std::vector<float> at(16, 0.0f);
  at[5] = 7; // partition 5's index: valid index 5 of core 0
  AccessPattern fi = h.in(16, 1, at);
  AccessPattern idx = sbuf(DType::U16, 0, h.sbufOffset, 16, {1});
  h.sbufOffset += 2;
  h.b.add(make(Opcode::TensorCopy, kQueueVector, idx, {fi}));
  AccessPattern dst = h.tile(16, 32);
  Instruction in = make(Opcode::LocalGather, kQueueGpSimd, dst, {xs, idx});
  in.imm[0] = 2;
  in.imm[1] = 16;
  h.b.add(in);
  CHECK_THROWS_WITH(h.read({dst}),
                    Contains("index 7 (valid index 5 of GpSimd core 0) reads elements [7, 9) of "
                             "rows of 8 (srcs[0])"));
}

TEST_CASE("sequence_bounds: the start and one-past-end of every element's run of ids",
          "[isa][sequence_bounds]") {
  const std::vector<float> ids = {0, 1, 1, 2, 2, 2, 0, 3, 3, 4, 0, 0, 5};
  const int64_t n = int64_t(ids.size());
  // NKI's numpy reference: padding (id 0) is [n, -1].
  std::vector<float> want(size_t(2 * n));
  for (int64_t i = 0; i < n; ++i)
    want[size_t(i)] = ids[size_t(i)] == 0                          ? float(n)
                      : i && ids[size_t(i)] == ids[size_t(i - 1)] ? want[size_t(i - 1)]
                                                                  : float(i);
  for (int64_t i = n - 1; i >= 0; --i)
    want[size_t(n + i)] = ids[size_t(i)] == 0 ? -1.0f
                          : i + 1 < n && ids[size_t(i)] == ids[size_t(i + 1)]
                              ? want[size_t(n + i + 1)]
                              : float(i + 1);
  CHECK(want[1] == 1);
  CHECK(want[size_t(n + 3)] == 6);
  for (DType dt : {DType::F32, DType::I32}) {
    Harness h("trn2");
    AccessPattern fs = h.in(1, n, ids), xs = fs;
    if (dt == DType::I32) {
      xs = sbuf(DType::I32, 0, h.sbufOffset, 1, {n});
      h.sbufOffset += n * 4;
      h.b.add(make(Opcode::TensorCopy, kQueueVector, xs, {fs}));
    }
    AccessPattern dst = sbuf(dt, 0, h.sbufOffset, 1, {2 * n});
    h.sbufOffset += 2 * n * 4;
    h.b.add(make(Opcode::SequenceBounds, kQueueGpSimd, dst, {xs}));
    AccessPattern back = h.tile(1, 2 * n);
    h.b.add(make(Opcode::TensorCopy, kQueueVector, back, {dst}));
    CHECK(h.read({back})[0] == want);
  }
  const AccessPattern src = sbuf(DType::I32, 0, 0, 1, {512}),
                      dst = sbuf(DType::I32, 0, 4096, 1, {1024});
  Instruction c = make(Opcode::SequenceBounds, kQueueGpSimd, dst, {src});
  CHECK(rejection(target("trn1"), c).empty());
  Instruction bad = c;
  bad.srcs[0] = sbuf(DType::I32, 0, 0, 2, {512});
  bad.dst = sbuf(DType::I32, 0, 4096, 2, {1024});
  CHECK_THAT(rejection(target("trn2"), bad), Contains("takes one partition of segment ids, got 2"));
  bad = c;
  bad.srcs[0].dtype = bad.dst.dtype = DType::BF16;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("takes f32 or i32 segment ids, not bf16"));
  bad = c;
  bad.dst = sbuf(DType::I32, 0, 4096, 1, {512});
  CHECK_THAT(rejection(target("trn2"), bad), Contains("dst must be [1, 1024]"));
  // ESTIMATE: 150 + 2N.
  for (const char *name : {"trn1", "trn2", "trn3"})
    for (int64_t m : {int64_t(32), int64_t(512), int64_t(4096)}) {
      Instruction k = c;
      k.srcs[0].dims.back() = {1, m};
      k.dst.dims.back() = {1, 2 * m};
      CHECK(cyclesOf(target(name), k) == 150.0 + 2.0 * double(m));
    }
  Builder rb;
  rb.add(c);
  CHECK(programFromCbor(programToCbor(rb.prog)).instructions[0].opcode == Opcode::SequenceBounds);
  CHECK(programFromJson(programToJson(rb.prog)).instructions[0].opcode == Opcode::SequenceBounds);
}
