// The compiled-program format: what the compiler emits and the simulator runs.
//
// A Program is a list of instructions, each bound to one in-order queue, with
// counted loops over ranges of it, plus a table of HBM buffers. Loops stay
// loops: the simulator iterates them, so a program's size follows the graph,
// not its tile count. It is the contract between compiler/ (which
// builds it from the nisa dialect) and runtime/ (which serializes and runs it).
// No MLIR and no libtorch here.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace neuron::runtime {

/// Bumped on every incompatible change of the structs below or their encoding.
inline constexpr int kProgramFormatVersion = 5;

/// Deepest loop nest a program may use.
inline constexpr int kMaxLoopDepth = 8;

/// One term of an integer affine in the induction variables of the enclosing
/// loops: coef * iv[level], or coef * (iv[level] % modulus) when modulus > 0
/// (a rotating buffer). Level 0 is the outermost loop around the instruction.
struct LoopTerm {
  uint8_t level = 0;
  int64_t coef = 0;
  int64_t modulus = 0;
};

/// base + sum of terms for the induction variables `iv` (indexed by level).
int64_t evalAffine(int64_t base, const std::vector<LoopTerm> &terms, const int64_t *iv);

/// Storage element types. Names ("f32", "bf16", ...) are the serialized form. F8E4M3FN and
/// F8E5M2 are the OCP fp8 formats of torch.float8_e4m3fn (no inf, max 448, NaN S.1111.111) and
/// torch.float8_e5m2 (IEEE-like: max 57344, inf and NaN).
enum class DType : uint8_t { F32, BF16, F16, I64, I32, I8, U8, Bool, U32, U16, F8E4M3FN, F8E5M2 };

/// Size in bytes of one element.
int64_t dtypeSize(DType t);
/// "f32", "bf16", "f16", "i64", "i32", "i8", "u8", "i1", "u32", "u16", "f8e4m3fn", "f8e5m2".
const char *dtypeName(DType t);
/// Inverse of dtypeName; returns false on an unknown name.
bool parseDType(const std::string &name, DType &out);

enum class MemSpace : uint8_t { Hbm, Sbuf, Psum };

/// Queues. Each physical core has one queue per compute engine and kNumDmaQueues
/// DMA queues; the collective-communication engine (which moves data between
/// cores) has one queue per logical core. A program for a logical core of several
/// physical cores (a target's `physicalCores`) numbers the queues core by core:
/// queue = core * kQueuesPerCore + local queue; the collective queue is a local
/// queue of core 0 only (the slot of the last core is past kNumQueues). Every
/// queue owns one semaphore that counts its completed instructions; any queue may
/// wait on any other, also across cores.
enum class Engine : uint8_t { Tensor, Vector, Scalar, GpSimd, Dma, Collective };
inline constexpr int kNumEngines = int(Engine::Collective) + 1;
inline constexpr int kNumDmaQueues = 16;
/// Local queue numbers within one physical core.
inline constexpr int kQueueTensor = 0, kQueueVector = 1, kQueueScalar = 2,
                     kQueueGpSimd = 3, kQueueDma0 = 4;
inline constexpr int kQueueCollective = kQueueDma0 + kNumDmaQueues;
inline constexpr int kQueuesPerCore = kQueueCollective + 1;
/// Most physical cores one program may use (trn2's LNC=2).
inline constexpr int kMaxPhysicalCores = 2;
inline constexpr int kNumQueues = (kMaxPhysicalCores - 1) * kQueuesPerCore + kQueueCollective;
/// The queue of local queue `local` (a kQueue* constant) on physical core `core`.
constexpr int queueOf(int core, int local) { return core * kQueuesPerCore + local; }
/// The physical core of a queue, and the queue's local number within it.
constexpr int coreOfQueue(int queue) { return queue / kQueuesPerCore; }
constexpr int localQueue(int queue) { return queue % kQueuesPerCore; }
inline constexpr bool isDmaQueue(int queue) {
  return queue >= 0 && queue < kNumQueues && localQueue(queue) >= kQueueDma0 &&
         localQueue(queue) < kQueueDma0 + kNumDmaQueues;
}
/// Index of a DMA queue among all DMA queues of all cores (0 .. 16 * cores - 1).
constexpr int dmaIndexOfQueue(int queue) {
  return coreOfQueue(queue) * kNumDmaQueues + localQueue(queue) - kQueueDma0;
}
Engine engineOfQueue(int queue);
/// "tensor", "vector", "scalar", "gpsimd", "dma", "collective"
const char *engineName(Engine e);
/// "tensor", "vector", "scalar", "gpsimd", "dma0" .. "dma15", "collective" on core 0;
/// on core c > 0 the same names prefixed "c<c>." ("c1.tensor", "c1.dma3"); "?" if
/// no queue.
std::string queueName(int queue);

/// Registers of one queue's sequencer: each engine sequencer of a NeuronCore holds 64 32-bit
/// registers (nki.isa.register_alloc, NC-v2 to v4; HARDWARE.md). NeuronSim gives every queue
/// (compute engines and DMA queues) its own set.
inline constexpr int kRegistersPerQueue = 64;

/// One register: register `index` of queue `queue`'s sequencer; queue < 0: none.
struct RegRef {
  int16_t queue = -1;
  uint8_t index = 0;
  bool valid() const { return queue >= 0; }
};

/// A strided view of memory.
///  - Hbm: `buffer` indexes Program::buffers, `offset` is in elements, every
///    entry of `dims` is {stride in elements, size}.
///  - Sbuf/Psum: `partition` is the first partition, `offset` is the byte
///    offset inside each partition; dims[0] is the partition dimension
///    {stride in partitions, size}; the remaining dims are the free dimensions
///    {stride in elements, size}.
/// dims are outermost first. Elements are visited in row-major order of dims.
/// `core` names the physical core whose SBUF/PSUM an on-chip pattern addresses (0 for
/// HBM, which all cores share); an engine or DMA queue touches only its own core's.
struct AccessPattern {
  MemSpace space = MemSpace::Hbm;
  uint8_t core = 0;
  DType dtype = DType::F32;
  uint32_t buffer = 0;
  uint32_t partition = 0;
  int64_t offset = 0;
  std::vector<LoopTerm> offsetTerms; // added to offset, per loop iteration
  /// Dynamic addressing (NKI's `.ap(scalar_offset=register)`): each instance adds the value
  /// of this register times offsetRegScale to offset, checked against the buffer at run
  /// time. HBM patterns of dma_copy only; the register is one of a compute queue of the
  /// instruction's physical core (the engine that triggers the DMA).
  RegRef offsetReg;
  int64_t offsetRegScale = 0;
  std::vector<std::array<int64_t, 2>> dims;

  int64_t numElements() const;
  int64_t numBytes() const { return numElements() * dtypeSize(dtype); }
};

/// The instructions: one per row of Isa.def, which documents each one's semantics.
enum class Opcode : uint8_t {
#define NEURON_INSTRUCTION(Enum, name, engines, generations, fields, nki, cost) Enum,
#include "runtime/program/Isa.def"
};
/// Number of opcodes.
inline constexpr int kNumOpcodes = 0
#define NEURON_INSTRUCTION(Enum, name, engines, generations, fields, nki, cost) +1
#include "runtime/program/Isa.def"
    ;

/// What a Collective instruction computes, for a group of n ranks (rank r):
///  AllReduce:     dst = reduce over ranks of src              (dst, src: N elements)
///  AllGather:     dst[k*N:(k+1)*N] = src of rank k            (src N, dst n*N)
///  ReduceScatter: dst = (reduce over ranks of src)[r*N:(r+1)*N]   (src n*N, dst N)
///  AllToAll:      dst[k*N:(k+1)*N] = src of rank k at [r*N:(r+1)*N]  (both n*N)
enum class CollectiveKind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll };

/// Elements of a collective's dst for a src of `srcElements` over `ranks`
/// ranks, or -1 if the source does not split into `ranks` blocks.
int64_t collectiveDstElements(CollectiveKind kind, int64_t srcElements, int64_t ranks);

/// What an instruction does with its engine's accumulator registers (nki.isa.reduce_cmd): one
/// fp32 register per partition on the Vector engine and another set on the Scalar engine, kept
/// across instructions.
///  Idle:        not used          Reset:       reset to the reduce op's identity
///  Reduce:      keep accumulating over their current values
///  ResetReduce: reset, then accumulate this instruction's results
///  LoadReduce:  load imm[1], then accumulate
enum class ReduceCmd : uint8_t { Idle, Reset, Reduce, ResetReduce, LoadReduce };

/// A process group the program's collectives run over: its torch.distributed
/// name (resolved by the host when the program runs) and its number of ranks.
struct CollectiveGroup {
  std::string name;
  int32_t size = 1;
};

/// Element functions of the Scalar engine (IsaOperands.def).
enum class ActFunc : uint8_t {
#define NEURON_ACT_FUNC(Enum, symbol, name, value) Enum = value,
#include "runtime/program/IsaOperands.def"
};
/// Arithmetic/logic ops of the Vector and GpSimd engines (IsaOperands.def). Comparisons yield 1
/// or 0. Max and Min return NaN if either operand is NaN (torch.maximum/minimum), and a
/// TensorReduce max/min returns NaN if any element is NaN (torch.amax). On all-integer
/// operands the ops compute exactly in int64 with two's-complement wrap: Div truncates
/// toward zero, a zero divisor is a SimulationError, and And/Or/Xor are bitwise (logical
/// when dst is i1). Mod is the floor remainder (torch.remainder: the divisor's sign), Fmod
/// the truncated one (C's fmod: the dividend's sign); both are exact on floats too.
enum class AluOp : uint8_t {
#define NEURON_ALU_OP(Enum, symbol, name, value) Enum = value,
#include "runtime/program/IsaOperands.def"
};
inline constexpr int kNumActFuncs = 0
#define NEURON_ACT_FUNC(Enum, symbol, name, value) +1
#include "runtime/program/IsaOperands.def"
    ;
inline constexpr int kNumAluOps = 0
#define NEURON_ALU_OP(Enum, symbol, name, value) +1
#include "runtime/program/IsaOperands.def"
    ;

const char *opcodeName(Opcode op);
const char *actFuncName(ActFunc f);
const char *aluOpName(AluOp op);
/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all".
const char *collectiveKindName(CollectiveKind k);
/// "idle", "reset", "reduce", "reset_reduce", "load_reduce".
const char *reduceCmdName(ReduceCmd c);
bool parseReduceCmd(const std::string &name, ReduceCmd &out);
bool parseCollectiveKind(const std::string &name, CollectiveKind &out);
bool parseOpcode(const std::string &name, Opcode &out);
bool parseActFunc(const std::string &name, ActFunc &out);
bool parseAluOp(const std::string &name, AluOp &out);

/// Wait until the semaphore of `queue` has counted at least `value` completions
/// (value + valueTerms in the enclosing loops' induction variables). A wait whose
/// value is <= 0 is satisfied at once.
struct SemWait {
  uint16_t queue = 0;
  int64_t value = 0;
  std::vector<LoopTerm> valueTerms;
};

struct Instruction {
  Opcode opcode = Opcode::DmaCopy;
  uint16_t queue = 0;           // kQueue* constant; selects the engine.
  AccessPattern dst;
  std::vector<AccessPattern> srcs;
  std::vector<SemWait> waits;   // all must hold before the instruction starts.
  ActFunc func = ActFunc::Identity;
  AluOp alu = AluOp::Add;
  double imm[2] = {0.0, 0.0};
  bool accumulate = false;      // Matmul: add into dst instead of overwriting.
                                // Activation: reduces its rows into the Scalar engine's
                                // accumulator registers (reduceCmd); a last source after
                                // scale and bias receives them.
  bool reverse = false;         // TensorScalar, ScalarTensorTensor: scalar is the left operand.
                                // CopyPredicated: copy where the predicate is zero.
  AluOp alu2 = AluOp::Add;      // the second op: TensorScalar (twoOps), ScalarTensorTensor,
                                // TensorTensorScan.
  bool reverse2 = false;        // the second op's other operand is on the left.
  bool twoOps = false;          // TensorScalar: apply alu2 with imm[1] after alu.
  bool scaleTile = false;       // Activation: a per-partition scale source follows srcs[0].
                                // TensorScalar, ScalarTensorTensor: the scalar is a
                                // per-partition tile (the last source); TensorTensorScan:
                                // so is the initial value (srcs[2]).
  bool biasTile = false;        // Activation: a per-partition bias source follows.
  uint8_t axes = 1;             // TensorReduce: number of innermost free dims reduced.
  std::vector<int64_t> affine;  // AffineSelect: offset, partition coefficient, one
                                // coefficient per free dim of dst. StreamShuffle: the
                                // 32-entry shuffle mask.
  ReduceCmd reduceCmd = ReduceCmd::ResetReduce; // F(ReduceCmd) rows: the accumulators
  AluOp reduceOp = AluOp::Add;  // F(ReduceOp) rows (activate2): the registers' reduce
  CollectiveKind collective = CollectiveKind::AllReduce; // Collective: what it computes
  uint16_t group = 0;           // Collective: index into Program::groups.
  uint8_t reg = 0;              // register_*: the register (of the instruction's queue) it
                                // allocates, writes (move, load) or reads (store).
  int16_t regSrc = -1;          // register_move: the source register of the same queue, or
                                // -1: imm[0].
  bool regInit = false;         // register_alloc: initialize the register to imm[0].
  uint16_t pipe = 0;            // sendrecv: pipe_id; the k-th sendrecv of a pipe on one core
                                // pairs with the k-th of that pipe on the other.
  uint32_t origin = 0;          // index into Program::origins (the ATen node), for traces.
};

struct BufferDecl {
  enum class Kind : uint8_t { Input, Output, Internal, Constant };
  std::string name;
  Kind kind = Kind::Internal;
  int32_t index = -1;           // position among the graph's inputs / outputs.
  DType dtype = DType::F32;
  std::vector<int64_t> shape;   // contiguous, row-major.
  std::vector<uint8_t> data;    // Constant buffers only.

  int64_t numElements() const;
  int64_t numBytes() const { return numElements() * dtypeSize(dtype); }
};

/// A counted loop: instructions [begin, end) run `count` times in a row. Loops
/// nest properly; Program::loops is sorted by begin, an outer loop before an
/// inner loop with the same begin. Running a program runs its instructions in
/// order, expanding the loops (the same order as if the bodies were unrolled).
///
/// A dynamic loop (NKI's nl.dynamic_range / fori_loop / while_loop, compiled to sequencer
/// branches) names a register `countReg`: a counted one runs the register's value at loop
/// entry times (0 .. count; outside is a SimulationError), a `whileLoop` runs while the register
/// is nonzero, checked before each iteration, at most `count` times (more is a
/// SimulationError). `count` is then the loop's bound: semaphore waits are written for `count`
/// iterations, and on exit every queue's semaphore advances by the instances of the
/// iterations not run (the compiler's semaphore adjustment at a dynamic loop's exit).
struct Loop {
  uint32_t begin = 0, end = 0;
  int64_t count = 1;
  RegRef countReg;        // valid: a dynamic loop
  bool whileLoop = false; // with countReg: loop while it is nonzero
  bool dynamic() const { return countReg.valid(); }
};

struct Program {
  int version = kProgramFormatVersion;
  std::string target;                  // "trn1", "trn2", "trn3".
  std::vector<BufferDecl> buffers;
  std::vector<Instruction> instructions; // a valid issue order across queues.
  std::vector<Loop> loops;               // loops over ranges of `instructions`.
  std::vector<std::string> origins;      // "aten.mm.default (model.py:12)" etc.
  std::vector<CollectiveGroup> groups;   // process groups of Collective instructions
  uint64_t flops = 0;                    // useful FLOPs of the source graph.
};

} // namespace neuron::runtime
