// Tests of the program-format enums: names, parsers, sizes, queues, element
// counts.
#include "runtime/program/Program.h"

#include <catch2/catch.hpp>

using namespace neuron::runtime;

TEST_CASE("dtype names, sizes and parsing round trip", "[program]") {
  const DType all[] = {DType::F32, DType::BF16, DType::F16, DType::I64,
                       DType::I32, DType::I8,   DType::U8,  DType::Bool};
  const char *names[] = {"f32", "bf16", "f16", "i64", "i32", "i8", "u8", "i1"};
  const int64_t sizes[] = {4, 2, 2, 8, 4, 1, 1, 1};
  for (int i = 0; i < 8; ++i) {
    CHECK(std::string(dtypeName(all[i])) == names[i]);
    CHECK(dtypeSize(all[i]) == sizes[i]);
    DType back = DType::F32;
    REQUIRE(parseDType(names[i], back));
    CHECK(back == all[i]);
  }
  DType out = DType::I8;
  CHECK_FALSE(parseDType("float32", out));
  CHECK_FALSE(parseDType("", out));
  CHECK(out == DType::I8);
}

TEST_CASE("opcode, activation and alu names are lower_snake_case",
          "[program]") {
  CHECK(std::string(opcodeName(Opcode::DmaCopy)) == "dma_copy");
  CHECK(std::string(opcodeName(Opcode::TensorTensor)) == "tensor_tensor");
  CHECK(std::string(opcodeName(Opcode::TensorReduce)) == "tensor_reduce");
  CHECK(std::string(opcodeName(Opcode::Iota)) == "iota");
  CHECK(std::string(actFuncName(ActFunc::GeluTanh)) == "gelu_tanh");
  CHECK(std::string(actFuncName(ActFunc::Softplus)) == "softplus");
  CHECK(std::string(actFuncName(ActFunc::Arctan)) == "arctan");
  CHECK(std::string(aluOpName(AluOp::Mod)) == "mod");
  CHECK(std::string(aluOpName(AluOp::Ge)) == "ge");

  for (int i = 0; i <= int(Opcode::Iota); ++i) {
    Opcode op;
    REQUIRE(parseOpcode(opcodeName(Opcode(i)), op));
    CHECK(int(op) == i);
  }
  for (int i = 0; i <= int(ActFunc::Arctan); ++i) {
    ActFunc f;
    REQUIRE(parseActFunc(actFuncName(ActFunc(i)), f));
    CHECK(int(f) == i);
  }
  for (int i = 0; i <= int(AluOp::Mod); ++i) {
    AluOp a;
    REQUIRE(parseAluOp(aluOpName(AluOp(i)), a));
    CHECK(int(a) == i);
  }
  Opcode op;
  ActFunc f;
  AluOp a;
  CHECK_FALSE(parseOpcode("DmaCopy", op));
  CHECK_FALSE(parseActFunc("gelu-tanh", f));
  CHECK_FALSE(parseAluOp("plus", a));
}

TEST_CASE("queues map to engines", "[program]") {
  CHECK(engineOfQueue(kQueueTensor) == Engine::Tensor);
  CHECK(engineOfQueue(kQueueVector) == Engine::Vector);
  CHECK(engineOfQueue(kQueueScalar) == Engine::Scalar);
  CHECK(engineOfQueue(kQueueGpSimd) == Engine::GpSimd);
  for (int q = kQueueDma0; q < kQueueDma0 + kNumDmaQueues; ++q) {
    CHECK(isDmaQueue(q));
    CHECK(engineOfQueue(q) == Engine::Dma);
  }
  CHECK(engineOfQueue(kQueueCollective) == Engine::Collective);
  CHECK_FALSE(isDmaQueue(kQueueCollective));
  CHECK(queueName(kQueueCollective) == "collective");
  CHECK(kQueuesPerCore == 21);
  // Physical core 1 of a logical core: the same engines numbered from 21, without a
  // collective queue of its own (the logical core has one).
  CHECK(kNumQueues == 41);
  CHECK(engineOfQueue(kQueuesPerCore + kQueueTensor) == Engine::Tensor);
  CHECK(engineOfQueue(kQueuesPerCore + kQueueDma0 + 15) == Engine::Dma);
  CHECK(isDmaQueue(kQueuesPerCore + kQueueDma0 + 15));
  CHECK(queueOf(1, kQueueCollective) == kNumQueues);
  CHECK(std::string(engineName(Engine::Tensor)) == "tensor");
  CHECK(std::string(engineName(Engine::GpSimd)) == "gpsimd");
  CHECK(std::string(engineName(Engine::Dma)) == "dma");
}

TEST_CASE("element counts of access patterns and buffers", "[program]") {
  AccessPattern ap;
  ap.dtype = DType::BF16;
  ap.dims = {{512, 128}, {1, 64}, {0, 3}};
  CHECK(ap.numElements() == 128 * 64 * 3);
  CHECK(ap.numBytes() == 128 * 64 * 3 * 2);

  BufferDecl b;
  b.dtype = DType::I64;
  b.shape = {2, 3, 4};
  CHECK(b.numElements() == 24);
  CHECK(b.numBytes() == 192);
  b.shape = {};
  CHECK(b.numElements() == 1); // a scalar
}
