// Names, sizes and parsers of the program-format enums, element counts and
// loop-term evaluation (see Program.h).
#include "runtime/program/Program.h"

#include "runtime/program/Isa.h"
#include "runtime/program/Loops.h"

#include <iterator>

namespace neuron::runtime {

namespace {

template <size_t N>
bool parseName(const char *const (&names)[N], const std::string &name,
               size_t &index) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) {
      index = i;
      return true;
    }
  }
  return false;
}

// Indexed by the enum values; keep in the order of the enum declarations.
const char *const kDTypeNames[] = {"f32", "bf16", "f16", "i64", "i32",      "i8",
                                   "u8",  "i1",   "u32", "u16", "f8e4m3fn", "f8e5m2"};
const int64_t kDTypeSizes[] = {4, 2, 2, 8, 4, 1, 1, 1, 4, 2, 1, 1};
const char *const kEngineNames[] = {"tensor", "vector", "scalar",
                                    "gpsimd", "dma",    "collective"};
const char *const kCollectiveKindNames[] = {"all_reduce", "all_gather",
                                            "reduce_scatter", "all_to_all"};
const char *const kActFuncNames[] = {
#define NEURON_ACT_FUNC(Enum, symbol, name, value) name,
#include "runtime/program/IsaOperands.def"
};
const char *const kAluOpNames[] = {
#define NEURON_ALU_OP(Enum, symbol, name, value) name,
#include "runtime/program/IsaOperands.def"
};

// IsaOperands.def lists each enum's rows in value order from 0.
constexpr int kActFuncValues[] = {
#define NEURON_ACT_FUNC(Enum, symbol, name, value) value,
#include "runtime/program/IsaOperands.def"
};
constexpr int kAluOpValues[] = {
#define NEURON_ALU_OP(Enum, symbol, name, value) value,
#include "runtime/program/IsaOperands.def"
};
template <size_t N> constexpr bool dense(const int (&values)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (values[i] != int(i))
      return false;
  return true;
}
static_assert(dense(kActFuncValues) && dense(kAluOpValues));

static_assert(sizeof(kDTypeNames) / sizeof(*kDTypeNames) ==
              size_t(DType::F8E5M2) + 1);
static_assert(sizeof(kCollectiveKindNames) / sizeof(*kCollectiveKindNames) ==
              size_t(CollectiveKind::AllToAll) + 1);
static_assert(std::size(kActFuncNames) == size_t(kNumActFuncs));
static_assert(std::size(kAluOpNames) == size_t(kNumAluOps));

const char *lookup(const char *const *names, size_t count, size_t index) {
  return index < count ? names[index] : "<invalid>";
}

} // namespace

int64_t dtypeSize(DType t) {
  size_t i = size_t(t);
  return i < sizeof(kDTypeSizes) / sizeof(*kDTypeSizes) ? kDTypeSizes[i] : 0;
}

const char *dtypeName(DType t) {
  return lookup(kDTypeNames, std::size(kDTypeNames), size_t(t));
}

bool parseDType(const std::string &name, DType &out) {
  size_t i;
  if (!parseName(kDTypeNames, name, i))
    return false;
  out = DType(i);
  return true;
}

Engine engineOfQueue(int queue) {
  switch (localQueue(queue)) {
  case kQueueTensor:
    return Engine::Tensor;
  case kQueueVector:
    return Engine::Vector;
  case kQueueScalar:
    return Engine::Scalar;
  case kQueueGpSimd:
    return Engine::GpSimd;
  case kQueueCollective:
    return Engine::Collective;
  default:
    return Engine::Dma;
  }
}

const char *engineName(Engine e) {
  return lookup(kEngineNames, std::size(kEngineNames), size_t(e));
}

std::string queueName(int queue) {
  if (queue < 0 || queue >= kNumQueues)
    return "?";
  const int core = coreOfQueue(queue), local = localQueue(queue);
  const std::string prefix = core ? "c" + std::to_string(core) + "." : "";
  if (isDmaQueue(queue))
    return prefix + "dma" + std::to_string(local - kQueueDma0);
  return prefix + engineName(engineOfQueue(queue));
}

const char *opcodeName(Opcode op) { return instructionInfo(op).name; }

const char *actFuncName(ActFunc f) {
  return lookup(kActFuncNames, std::size(kActFuncNames), size_t(f));
}

const char *aluOpName(AluOp op) {
  return lookup(kAluOpNames, std::size(kAluOpNames), size_t(op));
}

const char *collectiveKindName(CollectiveKind k) {
  return lookup(kCollectiveKindNames, std::size(kCollectiveKindNames), size_t(k));
}

namespace {
const char *const kReduceCmdNames[] = {"idle", "reset", "reduce", "reset_reduce", "load_reduce"};
} // namespace

const char *reduceCmdName(ReduceCmd c) {
  return lookup(kReduceCmdNames, std::size(kReduceCmdNames), size_t(c));
}

bool parseReduceCmd(const std::string &name, ReduceCmd &out) {
  size_t i;
  if (!parseName(kReduceCmdNames, name, i))
    return false;
  out = ReduceCmd(i);
  return true;
}

bool parseCollectiveKind(const std::string &name, CollectiveKind &out) {
  size_t i;
  if (!parseName(kCollectiveKindNames, name, i))
    return false;
  out = CollectiveKind(i);
  return true;
}

int64_t collectiveDstElements(CollectiveKind kind, int64_t srcElements, int64_t ranks) {
  if (ranks < 1)
    return -1;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return srcElements;
  case CollectiveKind::AllGather:
    return srcElements * ranks;
  case CollectiveKind::ReduceScatter:
    return srcElements % ranks ? -1 : srcElements / ranks;
  case CollectiveKind::AllToAll:
    return srcElements % ranks ? -1 : srcElements;
  }
  return -1;
}

bool parseOpcode(const std::string &name, Opcode &out) {
  for (int i = 0; i < kNumOpcodes; ++i) {
    if (name == instructionInfo(Opcode(i)).name) {
      out = Opcode(i);
      return true;
    }
  }
  return false;
}

bool parseActFunc(const std::string &name, ActFunc &out) {
  size_t i;
  if (!parseName(kActFuncNames, name, i))
    return false;
  out = ActFunc(i);
  return true;
}

bool parseAluOp(const std::string &name, AluOp &out) {
  size_t i;
  if (!parseName(kAluOpNames, name, i))
    return false;
  out = AluOp(i);
  return true;
}

int64_t AccessPattern::numElements() const {
  int64_t n = 1;
  for (const auto &d : dims)
    n *= d[1];
  return n;
}

int64_t evalAffine(int64_t base, const std::vector<LoopTerm> &terms,
                   const int64_t *iv) {
  return loopTermsAt(base, terms, iv);
}

int64_t BufferDecl::numElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

} // namespace neuron::runtime
