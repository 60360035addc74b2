// Tests of the JSON / CBOR program encodings: round trips and rejection of bad
// input.
#include "runtime/Serialize.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

/// A program that uses every field of the format.
Program fullProgram() {
  Builder b;
  b.prog.flops = 123456789;
  b.prog.origins = {"aten.mm.default (model.py:12)", "aten.gelu.default"};
  uint32_t x = b.input("x", DType::BF16, {128, 64});
  uint32_t y = b.output("y", DType::F32, {128, 64});
  b.buffer(BufferDecl::Kind::Internal, "tmp", DType::I64, {7});
  // Constants of 0..5 bytes exercise every base64 padding case.
  for (int n = 0; n <= 5; ++n) {
    uint32_t c = b.buffer(BufferDecl::Kind::Constant, "c" + std::to_string(n),
                          DType::U8, {n});
    for (int i = 0; i < n; ++i)
      b.prog.buffers[c].data.push_back(uint8_t(250 + i));
  }
  b.dma(kQueueDma0 + 3, sbuf(DType::BF16, 0, 0, 128, {64}),
        hbm(x, DType::BF16, 0, {{64, 128}, {1, 64}}));
  b.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 1024, 128, {64}),
       {sbuf(DType::BF16, 0, 0, 128, {64})}, {{uint16_t(kQueueDma0 + 3), 1}});
  b.last().func = ActFunc::GeluTanh;
  b.last().imm[0] = 0.5;
  b.last().imm[1] = -std::numeric_limits<double>::infinity();
  b.last().origin = 1;
  b.op(Opcode::TensorReduce, kQueueVector, sbuf(DType::F32, 0, 4096, 128, {1}),
       {sbuf(DType::F32, 0, 1024, 128, {8, 8})}, {{kQueueScalar, 1}});
  b.last().alu = AluOp::Max;
  b.last().axes = 2;
  b.op(Opcode::TensorScalar, kQueueGpSimd, sbuf(DType::F32, 32, 0, 32, {64}),
       {sbuf(DType::F32, 0, 1024, 32, {64})});
  b.last().alu = AluOp::Mod;
  b.last().reverse = true;
  b.last().imm[0] = std::numeric_limits<double>::quiet_NaN();
  b.op(
      Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 2048, 64, {64}),
      {sbuf(DType::BF16, 0, 0, 128, {64}), sbuf(DType::BF16, 0, 0, 128, {64})});
  b.last().accumulate = true;
  AccessPattern odd = hbm(y, DType::F32, -5, {{-64, 128}, {0, 64}});
  odd.partition = 7; // not used for HBM, but must survive a round trip
  b.dma(kQueueDma0, odd, sbuf(DType::F32, 0, 1024, 128, {64}));
  return b.prog;
}

void checkSameProgram(const Program &a, const Program &b) {
  // The canonical JSON of both must agree; NaN and inf are encoded as text.
  CHECK(programToJson(a, 1) == programToJson(b, 1));
  REQUIRE(a.instructions.size() == b.instructions.size());
  CHECK(std::isinf(b.instructions[1].imm[1]));
  CHECK(b.instructions[1].imm[1] < 0);
  CHECK(std::isnan(b.instructions[3].imm[0]));
  CHECK(b.instructions[5].dst.offset == -5);
  CHECK(b.instructions[5].dst.partition == 7);
  CHECK(b.instructions[5].dst.dims[0][0] == -64);
  for (size_t i = 0; i < a.buffers.size(); ++i)
    CHECK(a.buffers[i].data == b.buffers[i].data);
  CHECK(b.flops == 123456789);
  CHECK(b.origins == a.origins);
  CHECK(b.target == "trn2");
}

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const FormatError &e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace

TEST_CASE("JSON round trip keeps every field", "[serialize]") {
  Program p = fullProgram();
  std::string text = programToJson(p);
  CHECK_THAT(text, Contains("\"format\":\"neuronsim-program\""));
  CHECK_THAT(text, Contains("\"version\":1"));
  CHECK_THAT(text, Contains("\"op\":\"tensor_reduce\""));
  CHECK_THAT(text, Contains("\"func\":\"gelu_tanh\""));
  CHECK_THAT(text, Contains("\"data\":\"+vs=\"")); // bytes 250, 251 in base64
  Program q = programFromJson(text);
  checkSameProgram(p, q);
  CHECK(q.instructions[2].alu == AluOp::Max);
  CHECK(q.instructions[2].axes == 2);
  CHECK(q.instructions[3].reverse);
  CHECK(q.instructions[4].accumulate);
  CHECK(q.instructions[1].waits.size() == 1);
  CHECK(q.instructions[1].waits[0].queue == kQueueDma0 + 3);
  CHECK(q.instructions[1].origin == 1);
  CHECK(q.buffers[0].kind == BufferDecl::Kind::Input);
  CHECK(q.buffers[1].index == 0);
  CHECK(q.buffers[2].kind == BufferDecl::Kind::Internal);
  CHECK(q.buffers[2].index == -1);
}

TEST_CASE("CBOR round trip keeps every field and is compact", "[serialize]") {
  Program p = fullProgram();
  std::vector<uint8_t> bytes = programToCbor(p);
  Program q = programFromCbor(bytes);
  checkSameProgram(p, q);
  CHECK(bytes.size() < programToJson(p).size());
}

TEST_CASE("readers reject other versions and formats", "[serialize]") {
  std::string text = programToJson(fullProgram());
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK_THAT(messageOf([&] {
               programFromJson(replace("\"version\":1", "\"version\":2"));
             }),
             Contains("version: unsupported program format version 2 (this "
                      "build reads version 1)"));
  CHECK_THAT(messageOf([&] {
               programFromJson(replace("\"version\":1", "\"version\":\"1\""));
             }),
             Contains("version: unsupported program format version"));
  CHECK_THAT(messageOf([&] {
               programFromJson(replace("neuronsim-program", "other-program"));
             }),
             Contains("format: expected \"neuronsim-program\""));
  CHECK_THAT(messageOf([&] { programFromJson("{\"version\":1}"); }),
             Contains("format: missing"));

  // The same checks apply to CBOR.
  Program p = fullProgram();
  nlohmann::json tree = nlohmann::json::parse(programToJson(p));
  tree["version"] = 99;
  CHECK_THAT(messageOf([&] { programFromCbor(nlohmann::json::to_cbor(tree)); }),
             Contains("unsupported program format version 99"));
}

TEST_CASE("readers reject malformed content naming the field", "[serialize]") {
  nlohmann::json good = nlohmann::json::parse(programToJson(fullProgram()));
  auto errorFor = [&](const std::function<void(nlohmann::json &)> &edit) {
    nlohmann::json t = good;
    edit(t);
    return messageOf([&] { programFromJson(t.dump()); });
  };
  CHECK(errorFor([](auto &t) { t["instructions"][0]["op"] = "fly"; }) ==
        "instructions[0].op: unknown opcode \"fly\"");
  CHECK(errorFor([](auto &t) { t["instructions"][1]["dst"]["dims"][0] = 5; }) ==
        "instructions[1].dst.dims[0]: expected [stride, size], got 5");
  CHECK(errorFor([](auto &t) {
          t["instructions"][2]["srcs"][0]["dtype"] = "f64";
        }) == "instructions[2].srcs[0].dtype: unknown dtype \"f64\"");
  CHECK(errorFor([](auto &t) { t["instructions"][0]["queue"] = 20; }) ==
        "instructions[0].queue: value 20 out of range [0, 19]");
  CHECK(errorFor([](auto &t) { t["instructions"][0]["queue"] = 1.5; }) ==
        "instructions[0].queue: expected an integer, got number");
  CHECK(errorFor([](auto &t) { t["instructions"][1]["waits"][0] = {1}; }) ==
        "instructions[1].waits[0]: expected [queue, value], got [1]");
  CHECK(errorFor([](auto &t) { t["instructions"][1]["imm"][0] = "big"; }) ==
        "instructions[1].imm[0]: expected a number (or \"inf\", \"-inf\", "
        "\"nan\"), got \"big\"");
  CHECK(errorFor([](auto &t) { t["instructions"][3]["reverse"] = 1; }) ==
        "instructions[3].reverse: expected a boolean, got number");
  CHECK(errorFor([](auto &t) { t["instructions"][0].erase("dst"); }) ==
        "instructions[0].dst: missing");
  CHECK(errorFor([](auto &t) {
          t["instructions"][0]["dst"]["space"] = "l2";
        }) == "instructions[0].dst.space: unknown memory space \"l2\" (hbm, "
              "sbuf, psum)");
  CHECK(errorFor([](auto &t) { t["buffers"][0]["kind"] = "temp"; }) ==
        "buffers[0].kind: unknown buffer kind \"temp\" (input, output, "
        "internal, constant)");
  CHECK(errorFor([](auto &t) { t["buffers"][1]["shape"][0] = -1; }) ==
        "buffers[1].shape[0]: value -1 out of range [0, 9223372036854775807]");
  CHECK(errorFor([](auto &t) { t["buffers"][5]["data"] = "AAAA"; }) ==
        "buffers[5].data: 3 bytes, but the shape and dtype need 2");
  CHECK(errorFor([](auto &t) { t["buffers"][5]["data"] = "A*=="; }) ==
        "buffers[5].data: malformed base64");
  CHECK(errorFor([](auto &t) { t["buffers"][0]["data"] = "AAAA"; }) ==
        "buffers[0].data: only constant buffers carry data");
  CHECK(errorFor([](auto &t) { t["buffers"] = "none"; }) ==
        "buffers: expected an array, got string");
  CHECK(errorFor([](auto &t) { t = nlohmann::json::array(); }) ==
        "program: expected an object, got array");
}

TEST_CASE("malformed text and bytes raise FormatError", "[serialize]") {
  CHECK_THAT(messageOf([] { programFromJson("{\"format\": "); }),
             Contains("malformed JSON"));
  CHECK_THAT(messageOf([] { programFromJson(""); }),
             Contains("malformed JSON"));
  CHECK_THAT(messageOf([] { programFromCbor({0xff, 0x00, 0x13}); }),
             Contains("malformed CBOR"));
  CHECK_THAT(messageOf([] { programFromCbor({}); }),
             Contains("malformed CBOR"));
}

TEST_CASE("corrupted encodings never escape as other exceptions",
          "[serialize]") {
  const Program p = fullProgram();
  const std::vector<uint8_t> cbor = programToCbor(p);
  const std::string json = programToJson(p);
  std::mt19937 rng(1234);
  int accepted = 0, rejected = 0;
  auto attempt = [&](const std::function<void()> &f) {
    try {
      f();
      ++accepted;
    } catch (const FormatError &) {
      ++rejected;
    }
  };
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> c = cbor;
    std::string j = json;
    for (int k = 0; k < 3; ++k) {
      c[rng() % c.size()] = uint8_t(rng());
      j[rng() % j.size()] = char(32 + rng() % 95);
    }
    attempt([&] { programFromCbor(c); });
    attempt([&] { programFromJson(j); });
    c.resize(rng() % c.size());
    j.resize(rng() % j.size());
    attempt([&] { programFromCbor(c); });
    attempt([&] { programFromJson(j); });
  }
  CHECK(accepted + rejected == 1600);
  CHECK(rejected > 800);
}
