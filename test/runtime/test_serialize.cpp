// Tests of the JSON / CBOR program encodings: round trips and rejection of bad
// input.
#include "runtime/program/Serialize.h"

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
  b.prog.groups = {{"0", 1}, {"tp", 4}};
  b.op(Opcode::Collective, kQueueCollective, hbm(y, DType::F32, 0, {{1, 128 * 64}}),
       {hbm(x, DType::BF16, 0, {{1, 128 * 64}})});
  b.last().collective = CollectiveKind::ReduceScatter;
  b.last().alu = AluOp::Max;
  b.last().group = 1;
  return b.prog;
}

/// A program with nested loops, offset terms and wait value terms:
///   0  load                              (no loop)
///   1  load a row per outer iteration    loop [1, 4) x3, level 0
///   2  copy                                loop [2, 3) x4, level 1
///   3  store
Program loopedProgram() {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {12, 64});
  uint32_t y = b.output("y", DType::F32, {12, 64});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, 1, {64}),
        hbm(x, DType::F32, 0, {{64, 1}, {1, 64}}));
  const size_t outer = b.next();
  b.dma(kQueueDma0 + 1, sbuf(DType::F32, 0, 256, 1, {64}),
        withTerms(hbm(x, DType::F32, 64, {{64, 1}, {1, 64}}),
                  {term(0, 256)}),
        {waitFor(kQueueDma0 + 2, -2, {term(0, 1)})});
  const size_t inner = b.next();
  b.op(Opcode::TensorCopy, kQueueVector,
       withTerms(sbuf(DType::F32, 0, 1024, 1, {64}),
                 {term(0, 1024), term(1, 256, 2)}),
       {sbuf(DType::F32, 0, 256, 1, {64})},
       {waitFor(kQueueDma0 + 1, 1, {term(0, 1)}),
        waitFor(kQueueVector, 4, {term(0, 4), term(1, -1), term(1, 3, 2)})});
  b.loop(inner, 4);
  b.dma(kQueueDma0 + 2,
        withTerms(hbm(y, DType::F32, 0, {{64, 1}, {1, 64}}), {term(0, 64)}),
        withTerms(sbuf(DType::F32, 0, 1024, 1, {64}), {term(0, 1024)}),
        {waitFor(kQueueVector, 4, {term(0, 4)})});
  b.loop(outer, 3);
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
  REQUIRE(b.groups.size() == 2);
  CHECK(b.groups[1].name == "tp");
  CHECK(b.groups[1].size == 4);
  CHECK(b.instructions[6].opcode == Opcode::Collective);
  CHECK(b.instructions[6].collective == CollectiveKind::ReduceScatter);
  CHECK(b.instructions[6].alu == AluOp::Max);
  CHECK(b.instructions[6].group == 1);
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
  CHECK_THAT(text, Contains("\"version\":5"));
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

TEST_CASE("loops, offset terms and wait terms survive JSON and CBOR",
          "[serialize][loops]") {
  const Program p = loopedProgram();
  REQUIRE(p.loops.size() == 2);
  const std::string text = programToJson(p);
  CHECK_THAT(text, Contains("\"loops\":[[1,4,3],[2,3,4]]"));
  CHECK_THAT(text, Contains("\"terms\":[[0,1024,0],[1,256,2]]"));
  CHECK_THAT(text, Contains("\"waits\":[[5,1,[[0,1,0]]],[1,4,[[0,4,0],[1,-1,0],"
                            "[1,3,2]]]]"));
  CHECK_THAT(text, Contains("[[6,-2,[[0,1,0]]]]")); // a negative base value
  for (const Program &q : {programFromJson(text),
                           programFromCbor(programToCbor(p))}) {
    CHECK(programToJson(q, 1) == programToJson(p, 1));
    REQUIRE(q.loops.size() == 2);
    CHECK(q.loops[0].begin == 1);
    CHECK(q.loops[0].end == 4);
    CHECK(q.loops[0].count == 3);
    CHECK(q.loops[1].count == 4);
    const Instruction &copy = q.instructions[2];
    REQUIRE(copy.dst.offsetTerms.size() == 2);
    CHECK(copy.dst.offsetTerms[1].level == 1);
    CHECK(copy.dst.offsetTerms[1].coef == 256);
    CHECK(copy.dst.offsetTerms[1].modulus == 2);
    CHECK(copy.srcs[0].offsetTerms.empty());
    REQUIRE(copy.waits.size() == 2);
    CHECK(copy.waits[1].value == 4);
    REQUIRE(copy.waits[1].valueTerms.size() == 3);
    CHECK(copy.waits[1].valueTerms[1].coef == -1);
    CHECK(q.instructions[1].waits[0].value == -2);
  }
}

TEST_CASE("programs without loops write an empty list and may omit it",
          "[serialize][loops]") {
  const std::string text = programToJson(fullProgram());
  CHECK_THAT(text, Contains("\"loops\":[]"));
  CHECK_THAT(text, !Contains("\"terms\""));
  nlohmann::json tree = nlohmann::json::parse(text);
  tree.erase("loops");
  CHECK(programFromJson(tree.dump()).loops.empty());
}

TEST_CASE("readers reject malformed loops and terms", "[serialize][loops]") {
  const nlohmann::json good =
      nlohmann::json::parse(programToJson(loopedProgram()));
  auto errorFor = [&](const std::function<void(nlohmann::json &)> &edit) {
    nlohmann::json t = good;
    edit(t);
    const std::string json = messageOf([&] { programFromJson(t.dump()); });
    const std::string cbor = messageOf(
        [&] { programFromCbor(nlohmann::json::to_cbor(t)); });
    CHECK(json == cbor);
    return json;
  };
  using J = nlohmann::json;
  CHECK(errorFor([](J &t) { t["loops"] = "none"; }) ==
        "loops: expected an array, got string");
  CHECK(errorFor([](J &t) { t["loops"][0] = {1, 4}; }) ==
        "loops[0]: expected [begin, end, count] or [begin, end, bound, {\"reg\": "
                "[queue, register], \"while\": bool}], got [1,4]");
  CHECK(errorFor([](J &t) { t["loops"][0] = {1, 9, 3}; }) ==
        "loops[0]: range [1, 9) exceeds the 4 instructions");
  CHECK(errorFor([](J &t) { t["loops"][1] = {2, 2, 4}; }) ==
        "loops[1]: range [2, 2) is empty");
  CHECK(errorFor([](J &t) { t["loops"][1][2] = 0; }) ==
        "loops[1]: count 0 must be at least 1");
  CHECK(errorFor([](J &t) { t["loops"][0][0] = -1; }) ==
        "loops[0][0]: value -1 out of range [0, 4294967295]");
  auto setLoops = [](const char *loops) {
    return [loops](J &t) { t["loops"] = J::parse(loops); };
  };
  CHECK(errorFor(setLoops("[[2, 3, 4], [1, 4, 3]]")) ==
        "loops[1]: begins before loops[0] (loops must be sorted by begin)");
  CHECK(errorFor(setLoops("[[0, 3, 2], [2, 4, 2]]")) ==
        "loops[1]: range [2, 4) overlaps loops[0] [0, 3) without nesting "
        "inside it (outer loops come first)");
  // An inner loop listed before the outer loop with the same begin.
  CHECK(errorFor(setLoops("[[1, 3, 2], [1, 4, 2]]")) ==
        "loops[1]: range [1, 4) overlaps loops[0] [1, 3) without nesting "
        "inside it (outer loops come first)");
  CHECK(errorFor([](J &t) {
          t["loops"] = J::array();
          for (int i = 0; i < 9; ++i)
            t["loops"].push_back({0, 4, 2});
        }) == "loops[8]: nests 9 loops deep, at most 8");
  // Terms must name a loop around their instruction.
  CHECK(errorFor([](J &t) {
          t["instructions"][0]["dst"]["terms"] = J::parse("[[0, 1, 0]]");
        }) == "instructions[0].dst.terms[0][0]: loop level 0, but the "
              "instruction is inside 0 loop(s)");
  CHECK(errorFor([](J &t) {
          t["instructions"][3]["srcs"][0]["terms"] = J::parse("[[1, 1, 0]]");
        }) == "instructions[3].srcs[0].terms[0][0]: loop level 1, but the "
              "instruction is inside 1 loop(s)");
  CHECK(errorFor([](J &t) {
          t["instructions"][3]["waits"][0][2] = J::parse("[[1, 1, 0]]");
        }) == "instructions[3].waits[0][2][0][0]: loop level 1, but the "
              "instruction is inside 1 loop(s)");
  CHECK(errorFor([](J &t) {
          t["instructions"][2]["dst"]["terms"][0] = {0, 1};
        }) == "instructions[2].dst.terms[0]: expected [level, coef, modulus], "
              "got [0,1]");
  CHECK(errorFor([](J &t) {
          t["instructions"][2]["dst"]["terms"][1][2] = -2;
        }) == "instructions[2].dst.terms[1][2]: value -2 out of range [0, "
              "9223372036854775807]");
  CHECK(errorFor([](J &t) {
          t["instructions"][2]["dst"]["terms"][1][0] = 8;
        }) == "instructions[2].dst.terms[1][0]: value 8 out of range [0, 7]");
  CHECK(errorFor([](J &t) { t["instructions"][2]["waits"][0][2] = 7; }) ==
        "instructions[2].waits[0][2]: expected an array, got number");
  CHECK(errorFor([](J &t) {
          t["instructions"][2]["waits"][0] = {5, 1, J::array(), 0};
        }) == "instructions[2].waits[0]: expected [queue, value] or [queue, "
              "value, terms], got [5,1,[],0]");
}

TEST_CASE("readers reject other versions and formats", "[serialize]") {
  std::string text = programToJson(fullProgram());
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  // A version-1 program (before loops) names both versions.
  CHECK(messageOf([&] {
          programFromJson(replace("\"version\":5", "\"version\":1"));
        }) == "version: unsupported program format version 1 (this build "
              "reads version 5)");
  CHECK_THAT(messageOf([&] {
               programFromJson(replace("\"version\":5", "\"version\":\"5\""));
             }),
             Contains("version: unsupported program format version"));
  CHECK_THAT(messageOf([&] {
               programFromJson(replace("neuronsim-program", "other-program"));
             }),
             Contains("format: expected \"neuronsim-program\""));
  CHECK_THAT(messageOf([&] { programFromJson("{\"version\":5}"); }),
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
  CHECK(errorFor([](auto &t) { t["instructions"][0]["queue"] = kNumQueues; }) ==
        "instructions[0].queue: value " + std::to_string(kNumQueues) +
            " out of range [0, " + std::to_string(kNumQueues - 1) + "]");
  CHECK(errorFor([](auto &t) { t["groups"][0]["size"] = 0; }) ==
        "groups[0].size: value 0 out of range [1, 2147483647]");
  CHECK(errorFor([](auto &t) { t["instructions"].back()["collective"] = "gossip"; }) ==
        "instructions[" + std::to_string(good["instructions"].size() - 1) +
            "].collective: unknown collective kind \"gossip\"");
  CHECK(errorFor([](auto &t) { t["instructions"][0]["dst"]["core"] = 2; }) ==
        "instructions[0].dst.core: value 2 out of range [0, 1]");
  CHECK(errorFor([](auto &t) { t["instructions"][0]["queue"] = 1.5; }) ==
        "instructions[0].queue: expected an integer, got number");
  CHECK(errorFor([](auto &t) { t["instructions"][1]["waits"][0] = {1}; }) ==
        "instructions[1].waits[0]: expected [queue, value] or [queue, value, "
        "terms], got [1]");
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
  for (const Program &p : {fullProgram(), loopedProgram()}) {
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
}
