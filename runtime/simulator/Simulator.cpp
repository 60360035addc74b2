// The simulator driver: issues, times and executes instructions; sums stats.
//
// Loops: the program's instructions run in order with every loop expanded
// (Loops.h LoopWalker), so a looped program runs exactly the instruction
// instances, in the same order, as its unrolled equivalent. Each instruction
// is checked and its timing inputs computed once, on its first instance
// (Step); an instance evaluates only its wait values (and, in functional
// runs, its operand offsets) at the current induction variables.
//
// Timing: a queue runs its instructions in order. An instruction starts at
// max(queue free, all its semaphore waits satisfied); the semaphore of a queue
// counts its completed instruction instances, so wait {q, v} is satisfied
// when the v-th instance on q completes (v <= 0: at once). Compute
// instructions cost per CostModel.h; an instruction whose start was set by a
// wait pays the static overhead too.
// DMA transfers start dmaStartLatencyNs after their waits hold (or the run starts), or when
// their queue's previous transfer ends if that is later (queued DMAs hide the latency); they
// take their descriptors' time on their queue (CostModel.h dmaQueueNs: bytes at the queue's
// bandwidth, each contiguous run no faster than dmaDescriptorMinBytes) and reserve time on the
// shared HBM channel (HbmChannel.h); the "dma" busy time is the union of
// their intervals (DmaBusy.h). On NC-v2 (sharedSbufPsumPorts) Vector/GpSimd
// serialize on SBUF and Vector/Scalar on PSUM.
// Collectives: a Collective instruction on the collective queue is handed to
// RunOptions::collective when its queue is free and its waits hold; it
// completes when the hook says (the ranks' clocks meet there), while the
// other queues go on with whatever does not wait for it.
#include "runtime/simulator/Simulator.h"

#include "runtime/program/Isa.h"

#include "runtime/program/Loops.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/Hazards.h"
#include "runtime/simulator/Registers.h"
#include "runtime/simulator/functional/Control.h"
#include "runtime/simulator/functional/Execute.h"
#include "runtime/simulator/functional/Memory.h"
#include "runtime/simulator/timing/BusyCoverage.h"
#include "runtime/simulator/timing/CostModel.h"
#include "runtime/simulator/timing/DmaBusy.h"
#include "runtime/simulator/timing/HbmChannel.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <string>

namespace neuron::runtime {

namespace {

/// Timing inputs of a DMA instruction.
struct DmaStep {
  double queueNs = 0;   // time on its queue
  double hbmNs = 0;     // time on the HBM channel (hbmSides > 0)
  int64_t hbmBytes = 0; // bytes to/from HBM
};

/// Timing inputs of a compute instruction.
struct ComputeStep {
  Cost cost;
  double stallNs = 0; // extra busy time of a start that waited on a semaphore
  bool sbufPort = false, psumPort = false; // NC-v2 shared ports it holds
  // Matmul: FLOPs, and whether an operand is fp32 (the x4 rate).
  bool matmul = false, fp32Matmul = false;
  uint64_t matmulFlops = 0;
};

/// What the per-instance path needs of one static instruction, computed once,
/// on its first instance: the checked shape and the inputs of its timing.
/// Only the part of its engine kind (dma or compute) is set.
struct Step {
  InstrShape sh;
  Engine eng = Engine::Dma;
  // Loops: the dst PSUM bank must be checked per instance (psumBankVaries).
  bool bankPerInstance = false;
  // Index into Simulation::bound_ of the instruction's copy whose offsets
  // are set per instance (functional runs of instructions with offset
  // terms), or -1.
  int32_t bound = -1;
  DmaStep dma;
  ComputeStep compute;
};

/// The completion times of one queue's instances: the latest kKept of them (a
/// run of many instances must not keep one each); the older ones are summed up by
/// their maximum, which is all a wait for one of them needs where it cannot delay
/// the waiting queue (Simulation::waitsSatisfied).
class CompletionLog {
public:
  static constexpr int64_t kKept = int64_t(1) << 16;

  void reserve(int64_t instances) {
    times_.reserve(size_t(std::min(instances, kKept)));
  }
  void push(double t) {
    if (int64_t(times_.size()) < kKept) {
      times_.push_back(t);
    } else {
      double &slot = times_[size_t(count_ % kKept)];
      evictedMax_ = std::max(evictedMax_, slot);
      slot = t;
    }
    ++count_;
  }
  /// Instances completed so far.
  int64_t size() const { return count_; }
  /// Whether instance i (0-based, < size()) is still kept.
  bool kept(int64_t i) const { return i >= count_ - int64_t(times_.size()); }
  double at(int64_t i) const { return times_[size_t(i % kKept)]; }
  /// The latest completion of the instances no longer kept.
  double evictedMax() const { return evictedMax_; }
  /// The latest completion logged (0 if none).
  double last() const { return count_ > 0 ? at(count_ - 1) : 0; }
  /// Logs `n` instances completing at `t` (a dynamic loop's iterations not run).
  void skip(int64_t n, double t) {
    if (n >= kKept) {
      for (double x : times_)
        evictedMax_ = std::max(evictedMax_, x);
      const int64_t before = int64_t(times_.size());
      times_.assign(size_t(kKept), t);
      count_ += n;
      if (before < kKept) // the evicted max covers instances that were never kept
        evictedMax_ = std::max(evictedMax_, t);
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      push(t);
  }

private:
  std::vector<double> times_; // instance i at i % kKept
  int64_t count_ = 0;
  double evictedMax_ = 0;
};

/// A sendrecv or core_barrier instance waiting for its peer on the other physical core.
struct PendingPeer {
  size_t index = 0;
  const Step *step = nullptr;
  Instruction at; // the instance (offsets bound)
  double start = 0;
  int64_t iv[kMaxLoopDepth] = {};
};

class Simulation : private DynamicTrips {
public:
  Simulation(const Program &p, const Target &t, const RunOptions &o)
      : prog_(p), tgt_(t), opts_(o) {}

  RunStats run(const std::vector<const void *> &inputs,
               const std::vector<void *> &outputs);

private:
  void checkLoops() const;
  void countInstances();
  void planLoopSteps();
  void runOnce(size_t index, const int64_t *iv);
  const Step &loopStep(size_t index, const LoopWalker &w);
  void prepare(Step &s, size_t index, const int64_t *loopCounts, int loopDepth);
  void prepareDma(DmaStep &d, Opcode opcode, const InstrShape &sh) const;
  void prepareCompute(ComputeStep &c, const Instruction &inst,
                      const InstrShape &sh, Engine eng) const;
  void issue(size_t index, const Step &s, const int64_t *iv);
  double waitsSatisfied(size_t index, const Instruction &inst,
                        const int64_t *iv) const;
  void checkBankAt(size_t index, const Instruction &inst, const Step &s,
                   const int64_t *iv) const;
  void timeDma(int queue, const Step &s, double start, double &end);
  void timeCompute(const Step &s, bool stalled, double &start, double &end,
                   double &complete);
  void execute(size_t index, const Instruction &inst, const Instruction &at, const Step &s);
  const Instruction &bind(size_t index, const Instruction &inst, const Step &s,
                          const int64_t *iv);
  int64_t boundOffset(size_t index, const Instruction &inst, const AccessPattern &ap,
                      const char *operand, const int64_t *iv) const;
  double registerReady(const Instruction &inst) const;
  void registerOp(size_t index, const Instruction &inst, double complete);
  void issuePeer(size_t index, const Step &s, const int64_t *iv, double ready);
  void finishPeer(const PendingPeer &p, double t0);
  void checkNotBehindPeer(size_t index, const Instruction &inst, const int64_t *iv) const;
  void checkPeersMatched() const;
  // Dynamic loops (DynamicTrips).
  void planDynamicLoops();
  void branch(size_t loop);
  int64_t trips(size_t loop) override;
  bool again(size_t loop, int64_t done) override;
  void tested(size_t loop) override { branch(loop); }
  void exited(size_t loop, int64_t ran) override;
  double runCollective(size_t index, const Instruction &inst, double ready);
  /// Rethrows `e` with " (from <origin>)" appended if `inst` has an origin.
  [[noreturn]] void rethrowWithOrigin(const SimulationError &e,
                                      const Instruction &inst) const {
    if (inst.origin < prog_.origins.size())
      throw SimulationError(std::string(e.what()) + " (from " +
                            prog_.origins[inst.origin] + ")");
    throw e;
  }
  void retireDma();
  void finish();
  void report(bool fp32Peak);

  const Program &prog_;
  const Target &tgt_;
  const RunOptions &opts_;
  RunStats stats_;
  std::unique_ptr<Memory> mem_;
  std::unique_ptr<Executor> exec_;
  std::unique_ptr<HazardDetector> hazards_; // functional runs, if asked
  // Steps of the instructions inside loops, in program order; slotBase_[k]
  // is the slot of the first instruction of loop k if it is outermost.
  std::vector<Step> loopSteps_;
  std::vector<size_t> slotBase_;
  Step once_; // the step of the current instruction outside loops
  size_t prepared_ = 0; // instructions 0 .. prepared_ - 1 are prepared
  std::vector<Instruction> bound_; // see Step::bound
  std::array<int64_t, kNumQueues> total_{}; // instances per queue
  int64_t totalInstances_ = 0;
  std::array<CompletionLog, kNumQueues> complete_; // completion times
  std::array<double, kNumQueues> queueFree_{};
  double sbufPortFree_ = 0, psumPortFree_ = 0; // NC-v2 shared ports
  std::array<double, kNumEngines> engineBusy_{};
  // Programs with collectives: when other queues are busy, and each
  // collective's [ready, complete) window.
  std::unique_ptr<BusyCoverage> coverage_;
  std::vector<std::pair<double, double>> collectiveWindows_;
  // Random instructions: numbers each static instruction has produced so far.
  std::vector<uint64_t> randomDrawn_;
  uint64_t matmulFlops_ = 0;
  bool allMatmulsFp32_ = true;
  HbmChannel hbm_;
  int hbmReservesSinceRetire_ = 0;
  DmaBusy dmaBusy_;
  RegisterFile regs_;
  // Dynamic loops: per loop (empty for static ones) the instances one iteration runs on each
  // queue.
  std::vector<std::vector<int64_t>> perIteration_;
  // sendrecv / core_barrier instances waiting for their peer, by opcode and pipe.
  std::map<std::pair<int, int>, PendingPeer> pending_;
};

/// Capacity reserved up front for per-instance records: the whole run, up to
/// a bound (a huge loop count must not allocate everything at once).
size_t reserveFor(int64_t instances) {
  return size_t(std::min<int64_t>(instances, int64_t(1) << 20));
}

/// Whether an instance's offsets differ from the static ones: loop terms or a dynamic
/// (register) offset.
bool hasOffsetTerms(const Instruction &inst) {
  if (!inst.dst.offsetTerms.empty() || inst.dst.offsetReg.valid())
    return true;
  for (const AccessPattern &src : inst.srcs)
    if (!src.offsetTerms.empty() || src.offsetReg.valid())
      return true;
  return false;
}

bool hasDynamicOffset(const Instruction &inst) {
  if (inst.dst.offsetReg.valid())
    return true;
  for (const AccessPattern &src : inst.srcs)
    if (src.offsetReg.valid())
      return true;
  return false;
}

bool isRegisterOp(Opcode op) {
  return op == Opcode::RegisterAlloc || op == Opcode::RegisterMove ||
         op == Opcode::RegisterLoad || op == Opcode::RegisterStore;
}

int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

void Simulation::checkLoops() const {
  size_t bad = 0;
  const std::string problem =
      loopNestProblem(prog_.loops, prog_.instructions.size(), bad);
  if (!problem.empty())
    throw SimulationError("loops[" + std::to_string(bad) + "]: " + problem);
}

void Simulation::countInstances() {
  const auto &insts = prog_.instructions;
  const std::vector<int64_t> n = instanceCounts(prog_.loops, insts.size());
  for (size_t i = 0; i < insts.size(); ++i) {
    if (insts[i].queue < kNumQueues)
      total_[insts[i].queue] = saturatingAdd(total_[insts[i].queue], n[i]);
    totalInstances_ = saturatingAdd(totalInstances_, n[i]);
    if (insts[i].opcode == Opcode::Collective && !coverage_)
      coverage_ = std::make_unique<BusyCoverage>();
  }
  for (int q = 0; q < kNumQueues; ++q)
    complete_[q].reserve(reserveFor(total_[q]));
}

/// Makes room for the steps of the instructions inside loops (each has many
/// instances; the others have one and need no stored step).
void Simulation::planLoopSteps() {
  const auto &loops = prog_.loops;
  slotBase_.assign(loops.size(), 0);
  size_t slots = 0, topEnd = 0;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (loops[k].begin < topEnd)
      continue; // nested inside an outermost loop
    slotBase_[k] = slots;
    slots += loops[k].end - loops[k].begin;
    topEnd = loops[k].end;
  }
  loopSteps_.resize(slots);
}

/// Prepares and issues an instruction outside loops: its only instance.
void Simulation::runOnce(size_t index, const int64_t *iv) {
  prepare(once_, index, nullptr, 0);
  ++prepared_;
  issue(index, once_, iv);
}

/// The step of instruction `index` inside the loops around `w`, prepared on
/// its first instance.
const Step &Simulation::loopStep(size_t index, const LoopWalker &w) {
  const size_t top = w.outermost();
  Step &s = loopSteps_[slotBase_[top] + (index - prog_.loops[top].begin)];
  if (index == prepared_) {
    prepare(s, index, w.counts(), w.depth());
    ++prepared_;
  }
  return s;
}

void Simulation::prepare(Step &s, size_t index, const int64_t *loopCounts,
                         int loopDepth) {
  const Instruction &inst = prog_.instructions[index];
  try {
    // Constructed in place (assigning a returned InstrShape stalls on store
    // forwarding; InstrShape is trivially destructible).
    new (&s.sh) InstrShape(
        checkInstruction(prog_, tgt_, index, loopCounts, loopDepth));
  } catch (const SimulationError &e) {
    rethrowWithOrigin(e, inst);
  }
  checkWaits(prog_, index, loopCounts, loopDepth);
  s.eng = engineOfQueue(inst.queue);
  if (s.eng == Engine::Dma)
    prepareDma(s.dma, inst.opcode, s.sh);
  else if (s.eng != Engine::Collective) // timed by the collective hook
    prepareCompute(s.compute, inst, s.sh, s.eng);
  s.bankPerInstance = psumBankVaries(inst, tgt_);
  s.bound = -1;
  if (exec_ && hasOffsetTerms(inst)) {
    s.bound = int32_t(bound_.size());
    bound_.push_back(inst);
  }
}

// Both fill every field in place (a step may be reused; building a copy and
// assigning it costs store-forwarding stalls on this hot path).
void Simulation::prepareDma(DmaStep &d, Opcode opcode, const InstrShape &sh) const {
  d.queueNs = opcode == Opcode::DmaTranspose
                  ? dmaTransposeQueueNs(tgt_, sh.bytes, sh.hbmSides > 0)
                  : dmaQueueNs(tgt_, sh.bytes, sh.runBytes);
  d.hbmBytes = sh.bytes * sh.hbmSides;
  d.hbmNs = sh.hbmSides > 0 ? hbmNs(tgt_, d.hbmBytes) : 0;
}

void Simulation::prepareCompute(ComputeStep &c, const Instruction &inst,
                                const InstrShape &sh, Engine eng) const {
  c.cost = computeCost(tgt_, inst, sh);
  c.stallNs = stalledOverheadNs(tgt_, eng);
  const bool shared = tgt_.sharedSbufPsumPorts;
  c.sbufPort = shared && sh.touchesSbuf &&
               (eng == Engine::Vector || eng == Engine::GpSimd);
  c.psumPort = shared && sh.touchesPsum &&
               (eng == Engine::Vector || eng == Engine::Scalar);
  c.matmul = inst.opcode == Opcode::Matmul;
  c.fp32Matmul = c.matmul && (inst.srcs[0].dtype == DType::F32 ||
                              inst.srcs[1].dtype == DType::F32);
  c.matmulFlops = c.matmul ? 2 * uint64_t(sh.matmulK) * uint64_t(sh.matmulM) *
                                 uint64_t(sh.matmulN)
                           : 0;
}

double Simulation::waitsSatisfied(size_t index, const Instruction &inst,
                                  const int64_t *iv) const {
  double ready = -1; // < 0: no wait constrains the start
  for (const SemWait &w : inst.waits) {
    const int64_t value = w.valueTerms.empty()
                              ? w.value
                              : loopTermsAt(w.value, w.valueTerms, iv);
    if (value <= 0)
      continue;
    auto deadlock = [&](const std::string &why) {
      return SimulationError(
          "deadlock: instruction " + std::to_string(index) + " (" +
          opcodeName(inst.opcode) + ") waits for " + std::to_string(value) +
          " completions of queue " + std::to_string(w.queue) + " (" +
          queueName(w.queue) + "), but " + why);
    };
    if (value > total_[w.queue])
      throw deadlock("the queue has only " + std::to_string(total_[w.queue]) +
                     " instructions");
    const CompletionLog &done = complete_[w.queue];
    if (value > done.size())
      throw deadlock("only " + std::to_string(done.size()) +
                     " are issued before it in program order");
    if (done.kept(value - 1)) {
      ready = std::max(ready, done.at(value - 1));
    } else if (!(done.evictedMax() < queueFree_[inst.queue])) {
      // Completions this old only matter where the waiting queue would still be
      // free before them; then the exact time is needed and no longer kept.
      throw SimulationError(
          "instruction " + std::to_string(index) + " (" + opcodeName(inst.opcode) +
          ") waits for completion " + std::to_string(value) + " of queue " +
          std::to_string(w.queue) + " (" + queueName(w.queue) + "), which has " +
          std::to_string(done.size()) + ": the simulator keeps the times of the last " +
          std::to_string(CompletionLog::kKept) + " of each queue");
    }
  }
  return ready;
}

void Simulation::checkBankAt(size_t index, const Instruction &inst,
                             const Step &s, const int64_t *iv) const {
  const int64_t shift = loopTermsAt(0, inst.dst.offsetTerms, iv);
  try {
    checkPsumBank(index, inst, tgt_, s.sh.dstByteLo + shift,
                  s.sh.dstByteHi + shift);
  } catch (const SimulationError &e) {
    rethrowWithOrigin(e, inst);
  }
}

void Simulation::timeDma(int queue, const Step &s, double start,
                         double &end) {
  const DmaStep &d = s.dma;
  end = start + d.queueNs;
  if (s.sh.hbmSides > 0) {
    double hbmEnd = hbm_.reserve(start, d.hbmNs);
    end = std::max(end, hbmEnd);
    stats_.hbmBytes += uint64_t(d.hbmBytes);
    if (++hbmReservesSinceRetire_ >= 1024)
      retireDma();
  }
  stats_.dmaTransfers++;
  stats_.dmaBytes += uint64_t(s.sh.bytes);
  dmaBusy_.add(dmaIndexOfQueue(queue), start, end);
}

void Simulation::timeCompute(const Step &s, bool stalled, double &start,
                             double &end, double &complete) {
  const ComputeStep &c = s.compute;
  double busyNs = c.cost.busyNs;
  if (stalled) // the start waited on a semaphore
    busyNs += c.stallNs;
  if (c.sbufPort)
    start = std::max(start, sbufPortFree_);
  if (c.psumPort)
    start = std::max(start, psumPortFree_);
  end = start + busyNs;
  complete = end + c.cost.latencyNs;
  if (c.sbufPort)
    sbufPortFree_ = end;
  if (c.psumPort)
    psumPortFree_ = end;
  engineBusy_[size_t(s.eng)] += busyNs;
  if (c.matmul) {
    ++stats_.matmuls;
    allMatmulsFp32_ &= c.fp32Matmul;
    matmulFlops_ += c.matmulFlops;
  }
}

/// The offset of `ap` in this instance: its loop terms at `iv`, plus a dynamic offset's
/// register value times its scale, checked against the HBM buffer.
int64_t Simulation::boundOffset(size_t index, const Instruction &inst, const AccessPattern &ap,
                                const char *operand, const int64_t *iv) const {
  const int64_t base = loopTermsAt(ap.offset, ap.offsetTerms, iv);
  if (!ap.offsetReg.valid())
    return base;
  const std::string who = "instruction " + std::to_string(index) + " (" +
                          opcodeName(inst.opcode) + ")";
  const int64_t v = regs_.read(ap.offsetReg, who);
  const __int128 off = __int128(base) + __int128(v) * ap.offsetRegScale;
  __int128 lo = off, hi = off;
  for (const auto &d : ap.dims) {
    const __int128 ext = __int128(d[0]) * (d[1] - 1);
    (ext < 0 ? lo : hi) += ext;
  }
  const BufferDecl &b = prog_.buffers[ap.buffer];
  if (lo < 0 || hi >= b.numElements())
    failInstruction(index, inst,
                    std::string("dynamic offset out of range: ") + registerName(ap.offsetReg) +
                        " = " + std::to_string(v) + " (x " +
                        std::to_string(ap.offsetRegScale) + ") puts the HBM access at elements " +
                        std::to_string(int64_t(lo)) + ".." + std::to_string(int64_t(hi)) +
                        ", outside buffer " + std::to_string(ap.buffer) + " (\"" + b.name +
                        "\") of " + std::to_string(b.numElements()) + " elements (operand " +
                        operand + ")");
  return int64_t(off);
}

/// The instance of `inst` at `iv`: `inst` itself, or its copy with the offsets bound.
const Instruction &Simulation::bind(size_t index, const Instruction &inst, const Step &s,
                                    const int64_t *iv) {
  if (s.bound < 0)
    return inst;
  Instruction &b = bound_[size_t(s.bound)];
  try {
    b.dst.offset = boundOffset(index, inst, inst.dst, "dst", iv);
    for (size_t k = 0; k < inst.srcs.size(); ++k)
      b.srcs[k].offset = boundOffset(index, inst, inst.srcs[k], "srcs", iv);
  } catch (const SimulationError &e) {
    rethrowWithOrigin(e, inst);
  }
  return b;
}

void Simulation::execute(size_t index, const Instruction &inst, const Instruction &at,
                         const Step &s) {
  try {
    if (usesField(inst.opcode, Field::Rng)) { // random, dropout
      if (randomDrawn_.empty())
        randomDrawn_.assign(prog_.instructions.size(), 0);
      exec_->random(at, opts_.seed, randomDrawn_[index]);
      randomDrawn_[index] += uint64_t(inst.dst.numElements());
      return;
    }
    exec_->run(index, at, s.sh);
  } catch (const SimulationError &e) {
    rethrowWithOrigin(e, inst);
  }
}

/// Hands a Collective instruction that can start at `ready` to the hook;
/// returns when it completes.
double Simulation::runCollective(size_t index, const Instruction &inst,
                                 double ready) {
  CollectiveCall call;
  call.instruction = index;
  call.kind = inst.collective;
  call.reduce = inst.alu;
  call.group = &prog_.groups[inst.group];
  call.dtype = inst.srcs[0].dtype;
  call.srcElements = inst.srcs[0].numElements();
  call.dstElements = inst.dst.numElements();
  call.readyNs = ready;
  if (mem_) {
    mem_->prepare(inst); // the hook writes dst: its stale bytes must not be cleared later
    call.src = mem_->view(inst.srcs[0]).base;
    call.dst = mem_->view(inst.dst).base;
  }
  double complete = ready;
  if (opts_.collective) {
    complete = opts_.collective(call);
  } else if (call.group->size != 1) {
    failInstruction(index, inst,
                    "a collective over " + std::to_string(call.group->size) +
                        " ranks (group \"" + call.group->name +
                        "\") needs the ranks: run the program from torch.distributed "
                        "with the neuron backend");
  } else if (mem_) { // one rank: every kind is a copy
    std::memmove(call.dst, call.src,
                 size_t(call.srcElements * dtypeSize(call.dtype)));
  }
  if (!(complete >= ready))
    failInstruction(index, inst,
                    "the collective hook returned a completion time before "
                    "the collective was ready");
  ++stats_.collectives;
  stats_.collectiveNs += complete - ready;
  collectiveWindows_.emplace_back(ready, complete);
  return complete;
}

/// Times (and in functional runs executes) one instance of instruction
/// `index`; `iv` are the induction variables of the loops around it.
void Simulation::issue(size_t index, const Step &s, const int64_t *iv) {
  const Instruction &inst = prog_.instructions[index];
  if (s.bankPerInstance)
    checkBankAt(index, inst, s, iv);
  if (!pending_.empty())
    checkNotBehindPeer(index, inst, iv);
  const int q = inst.queue;
  double ready = waitsSatisfied(index, inst, iv);
  if (hasDynamicOffset(inst)) // the DMA's address needs the register's value
    ready = std::max(ready, registerReady(inst));
  if (inst.opcode == Opcode::SendRecv || inst.opcode == Opcode::CoreBarrier)
    return issuePeer(index, s, iv, ready);
  double start = std::max(queueFree_[q], ready);
  if (s.eng == Engine::Dma) // the semaphore-to-start latency, unless queued behind a transfer
    start = std::max(queueFree_[q], std::max(ready, 0.0) + tgt_.dmaStartLatencyNs);
  double end, complete;
  const bool collective = s.eng == Engine::Collective;
  if (collective) {
    // Runs (data included) here, in program order, on every rank alike.
    end = complete = runCollective(index, inst, start);
    engineBusy_[size_t(s.eng)] += end - start;
  } else if (s.eng == Engine::Dma) {
    timeDma(q, s, start, end);
    complete = end;
  } else {
    timeCompute(s, ready >= queueFree_[q], start, end, complete);
  }

  queueFree_[q] = end;
  complete_[q].push(complete);
  stats_.queueBusyNs[q] += end - start;
  stats_.simNs = std::max(stats_.simNs, complete);
  if (coverage_ && !collective) // what other queues do beside collectives
    coverage_->add(start, end);
  if (opts_.timeline)
    opts_.timeline->push_back(
        {uint32_t(index), uint16_t(q), start, end, complete});
  if (opts_.originCosts) {
    std::vector<OriginCost> &costs = *opts_.originCosts;
    OriginCost &c = costs[std::min<size_t>(inst.origin, costs.size() - 1)];
    c.busyNs += end - start;
    c.engineNs[size_t(s.eng)] += end - start;
    if (s.eng == Engine::Dma && s.sh.hbmSides > 0)
      c.hbmBytes += double(s.dma.hbmBytes);
    else if (s.eng != Engine::Dma && !collective && s.compute.matmul)
      c.flops += double(s.compute.matmulFlops);
  }
  if (isRegisterOp(inst.opcode)) { // the registers are kept in timing-only runs too
    if (hazards_)
      hazards_->access(index, iv, start, complete);
    return registerOp(index, inst, complete);
  }
  const Instruction &at = exec_ ? bind(index, inst, s, iv) : inst;
  if (hazards_)
    hazards_->access(index, iv, start, complete, &at);
  if (exec_ && !collective) // the hook moved a collective's data
    execute(index, inst, at, s);
}

/// When the registers of `inst`'s dynamic offsets hold their values.
double Simulation::registerReady(const Instruction &inst) const {
  double t = 0;
  if (inst.dst.offsetReg.valid())
    t = std::max(t, regs_.readyNs(inst.dst.offsetReg));
  for (const AccessPattern &src : inst.srcs)
    if (src.offsetReg.valid())
      t = std::max(t, regs_.readyNs(src.offsetReg));
  return t;
}

/// The register effect of a register_* instance that completes at `complete`.
void Simulation::registerOp(size_t index, const Instruction &inst, double complete) {
  const RegRef r{int16_t(inst.queue), inst.reg};
  const std::string who =
      "instruction " + std::to_string(index) + " (" + opcodeName(inst.opcode) + ")";
  try {
    switch (inst.opcode) {
    case Opcode::RegisterAlloc:
      regs_.allocate(r);
      if (inst.regInit)
        regs_.write(r, int64_t(inst.imm[0]), complete);
      return;
    case Opcode::RegisterMove: {
      if (inst.regSrc < 0)
        return regs_.write(r, int64_t(inst.imm[0]), complete);
      const RegRef from{int16_t(inst.queue), uint8_t(inst.regSrc)};
      return regs_.write(r, regs_.read(from, who), complete, regs_.known(from));
    }
    case Opcode::RegisterLoad:
      // A timing-only run has no memory: the value is unknown (a dynamic loop on it runs
      // its bound).
      if (mem_)
        regs_.write(r, loadRegisterValue(*mem_, inst.srcs[0]), complete);
      else
        regs_.write(r, 0, complete, false);
      return;
    default: { // RegisterStore
      const int32_t v = regs_.read(r, who);
      if (mem_)
        storeRegisterValue(*mem_, inst.dst, v);
      return;
    }
    }
  } catch (const SimulationError &e) {
    rethrowWithOrigin(e, inst);
  }
}

/// A sendrecv or core_barrier instance ready at `ready`: waits for its peer on the other
/// physical core (the k-th of its kind and pipe there), or completes the pair with it.
void Simulation::issuePeer(size_t index, const Step &s, const int64_t *iv, double ready) {
  const Instruction &inst = prog_.instructions[index];
  const int q = inst.queue;
  double start = std::max(queueFree_[q], ready);
  if (s.eng == Engine::Dma)
    start = std::max(queueFree_[q], std::max(ready, 0.0) + tgt_.dmaStartLatencyNs);
  const bool send = inst.opcode == Opcode::SendRecv;
  const std::pair<int, int> key{int(inst.opcode), send ? int(inst.pipe) : 0};
  const std::string what = std::string(opcodeName(inst.opcode)) +
                           (send ? " of pipe " + std::to_string(inst.pipe) : std::string());
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    PendingPeer p;
    p.index = index;
    p.step = &s;
    p.at = exec_ ? bind(index, inst, s, iv) : inst;
    p.start = start;
    std::copy(iv, iv + kMaxLoopDepth, p.iv);
    pending_.emplace(key, p);
    return;
  }
  const PendingPeer first = it->second;
  const Instruction &other = prog_.instructions[first.index];
  if (coreOfQueue(other.queue) == coreOfQueue(q))
    failInstruction(index, inst,
                    "unmatched " + what + ": instruction " + std::to_string(first.index) +
                        ", the previous " + what + " of physical core " +
                        std::to_string(coreOfQueue(q)) + ", has no peer on the other core yet (" +
                        "the k-th " + what + " of each core pair up)");
  pending_.erase(it);
  PendingPeer second;
  second.index = index;
  second.step = &s;
  second.at = exec_ ? bind(index, inst, s, iv) : inst;
  second.start = start;
  std::copy(iv, iv + kMaxLoopDepth, second.iv);
  if (send) {
    const AccessPattern *ends[2][2] = {{&first.at.srcs[0], &second.at.dst},
                                       {&second.at.srcs[0], &first.at.dst}};
    for (auto &e : ends)
      if (e[0]->dtype != e[1]->dtype || e[0]->numElements() != e[1]->numElements() ||
          e[0]->dims[0][1] != e[1]->dims[0][1])
        failInstruction(index, inst,
                        "sendrecv pair with instruction " + std::to_string(first.index) +
                            " does not match: a source of " + std::to_string(e[0]->dims[0][1]) +
                            " partitions x " +
                            std::to_string(e[0]->numElements() / e[0]->dims[0][1]) + " " +
                            dtypeName(e[0]->dtype) + " goes to a dst of " +
                            std::to_string(e[1]->dims[0][1]) + " partitions x " +
                            std::to_string(e[1]->numElements() / e[1]->dims[0][1]) + " " +
                            dtypeName(e[1]->dtype));
    if (mem_)
      exchangeTiles(*mem_, first.at, second.at);
  }
  const double t0 = std::max(first.start, second.start); // both cores have arrived
  finishPeer(first, t0);
  finishPeer(second, t0);
}

/// Times one end of a sendrecv / core_barrier pair that both cores reached at `t0`.
void Simulation::finishPeer(const PendingPeer &p, double t0) {
  const Instruction &inst = prog_.instructions[p.index];
  const int q = inst.queue;
  const Step &s = *p.step;
  double end;
  if (s.eng == Engine::Dma) {
    end = t0 + s.dma.queueNs;
    stats_.dmaTransfers++;
    stats_.dmaBytes += uint64_t(s.sh.bytes);
    dmaBusy_.add(dmaIndexOfQueue(q), t0, end);
  } else {
    end = t0 + s.compute.cost.busyNs;
    engineBusy_[size_t(s.eng)] += end - t0;
  }
  queueFree_[q] = end;
  complete_[q].push(end);
  stats_.queueBusyNs[q] += end - t0;
  stats_.simNs = std::max(stats_.simNs, end);
  if (coverage_)
    coverage_->add(t0, end);
  if (opts_.timeline)
    opts_.timeline->push_back({uint32_t(p.index), uint16_t(q), t0, end, end});
  if (opts_.originCosts) {
    std::vector<OriginCost> &costs = *opts_.originCosts;
    OriginCost &c = costs[std::min<size_t>(inst.origin, costs.size() - 1)];
    c.busyNs += end - t0;
    c.engineNs[size_t(s.eng)] += end - t0;
  }
  if (hazards_)
    hazards_->access(p.index, p.iv, t0, end, &p.at);
}

/// While a sendrecv / core_barrier waits for its peer, its queue cannot go on and its
/// completion is not known: an instruction that would queue behind it or wait for it before
/// the peer is issued is an error (the peer must come first in program order).
void Simulation::checkNotBehindPeer(size_t index, const Instruction &inst,
                                    const int64_t *iv) const {
  for (const auto &[key, p] : pending_) {
    const Instruction &waiting = prog_.instructions[p.index];
    bool behind = waiting.queue == inst.queue;
    for (const SemWait &w : inst.waits)
      behind |= w.queue == waiting.queue &&
                (w.valueTerms.empty() ? w.value : loopTermsAt(w.value, w.valueTerms, iv)) >
                    complete_[w.queue].size();
    if (behind)
      failInstruction(index, inst,
                      std::string("queues behind or waits for ") + opcodeName(waiting.opcode) +
                          " instruction " + std::to_string(p.index) + " on " +
                          queueName(waiting.queue) +
                          ", which waits for its peer on the other physical core: issue the "
                          "peer's " + opcodeName(waiting.opcode) + " first in program order");
  }
}

/// At the end of a run: every sendrecv / core_barrier found its peer.
void Simulation::checkPeersMatched() const {
  if (pending_.empty())
    return;
  const PendingPeer &p = pending_.begin()->second;
  const Instruction &inst = prog_.instructions[p.index];
  const bool send = inst.opcode == Opcode::SendRecv;
  failInstruction(p.index, inst,
                  std::string("unmatched ") + opcodeName(inst.opcode) +
                      (send ? " of pipe " + std::to_string(inst.pipe) : std::string()) +
                      " on physical core " + std::to_string(coreOfQueue(inst.queue)) +
                      ": the other physical core runs no matching " + opcodeName(inst.opcode) +
                      " (the program ends without it)");
}

/// Per dynamic loop, the instances one iteration runs on each queue (nested loops at their
/// bounds).
void Simulation::planDynamicLoops() {
  const auto &loops = prog_.loops;
  perIteration_.assign(loops.size(), {});
  std::vector<int64_t> mult;
  for (size_t k = 0; k < loops.size(); ++k) {
    const Loop &l = loops[k];
    if (!l.dynamic())
      continue;
    mult.assign(l.end - l.begin, 1);
    for (size_t j = k + 1; j < loops.size() && loops[j].begin < l.end; ++j)
      for (uint32_t i = loops[j].begin; i < loops[j].end; ++i)
        mult[i - l.begin] = saturatingMul(mult[i - l.begin], loops[j].count);
    std::vector<int64_t> &per = perIteration_[k];
    per.assign(kNumQueues, 0);
    for (uint32_t i = l.begin; i < l.end; ++i) {
      const uint16_t q = prog_.instructions[i].queue;
      if (q < kNumQueues)
        per[q] = saturatingAdd(per[q], mult[i - l.begin]);
    }
  }
}

/// One test of a dynamic loop's register by the sequencers of the queues in its body: each
/// waits for the register's value and pays a branch (ESTIMATE: the tiny-instruction static
/// overhead of its engine; DMA queues' triggering engines pay theirs).
void Simulation::branch(size_t loop) {
  const Loop &l = prog_.loops[loop];
  const double ready = regs_.readyNs(l.countReg);
  const std::vector<int64_t> &per = perIteration_[loop];
  for (int q = 0; q < kNumQueues; ++q) {
    if (per[size_t(q)] == 0)
      continue;
    const double ns = engineOfQueue(q) == Engine::Dma ? 0 : stalledOverheadNs(tgt_, engineOfQueue(q));
    const double start = std::max(queueFree_[q], ready);
    queueFree_[q] = start + ns;
    stats_.queueBusyNs[size_t(q)] += ns;
    engineBusy_[size_t(engineOfQueue(q))] += ns;
  }
}

int64_t Simulation::trips(size_t loop) {
  const Loop &l = prog_.loops[loop];
  const std::string who = "loops[" + std::to_string(loop) + "] (a dynamic loop)";
  const int64_t v = regs_.read(l.countReg, who);
  branch(loop);
  if (!regs_.known(l.countReg))
    return l.count; // timing-only: a value from memory is unknown; the bound
  if (v < 0 || v > l.count)
    throw SimulationError(who + ": its trip count " + std::to_string(v) + " (" +
                          registerName(l.countReg) + ") is outside 0.." +
                          std::to_string(l.count) + ", the loop's bound");
  return v;
}

bool Simulation::again(size_t loop, int64_t done) {
  const Loop &l = prog_.loops[loop];
  const std::string who = "loops[" + std::to_string(loop) + "] (a while loop)";
  const int64_t v = regs_.read(l.countReg, who);
  branch(loop);
  if (!regs_.known(l.countReg))
    return done < l.count; // timing-only: the bound
  if (v != 0 && done >= l.count)
    throw SimulationError(who + ": its condition " + registerName(l.countReg) + " is still " +
                          std::to_string(v) + " after " + std::to_string(done) +
                          " iterations, the loop's bound");
  return v != 0;
}

/// The semaphores of the queues in the body advance by the iterations not run, as if they
/// had completed when the queue left the loop.
void Simulation::exited(size_t loop, int64_t ran) {
  const Loop &l = prog_.loops[loop];
  if (ran >= l.count)
    return;
  const std::vector<int64_t> &per = perIteration_[loop];
  for (int q = 0; q < kNumQueues; ++q) {
    if (per[size_t(q)] == 0)
      continue;
    const int64_t skipped = saturatingMul(l.count - ran, per[size_t(q)]);
    complete_[q].skip(skipped, std::max(queueFree_[q], complete_[q].last()));
  }
}

/// Forgets the HBM reservations and folds the DMA busy intervals that no
/// later DMA can start before.
void Simulation::retireDma() {
  hbmReservesSinceRetire_ = 0;
  // A future DMA starts no earlier than its queue is free; queues with no
  // instructions left never start one again.
  double lowest = -1;
  for (int q = 0; q < kNumQueues; ++q)
    if (engineOfQueue(q) == Engine::Dma && complete_[q].size() < total_[q])
      lowest = lowest < 0 ? queueFree_[q] : std::min(lowest, queueFree_[q]);
  if (lowest > 0) {
    hbm_.prune(lowest);
    dmaBusy_.flush(lowest);
  }
}

void Simulation::report(bool fp32Peak) {
  // Peaks are per physical core; a logical core has physicalCores Tensor engines.
  const double tflops =
      (fp32Peak ? tgt_.tensorPeakFp32Tflops : tgt_.tensorPeakBf16Tflops) *
      tgt_.physicalCores;
  stats_.peakFlopsPerNs = tflops * 1e3; // 1 TFLOP/s = 1000 FLOP/ns
  for (const BufferDecl &b : prog_.buffers)
    if (b.kind != BufferDecl::Kind::Internal)
      stats_.minimalHbmBytes += uint64_t(b.numBytes());
  const double computeNs =
      stats_.peakFlopsPerNs > 0 ? double(stats_.flops) / stats_.peakFlopsPerNs
                                : 0;
  const double memoryNs = tgt_.hbmBytesPerNs > 0
                              ? double(stats_.minimalHbmBytes) / tgt_.hbmBytesPerNs
                              : 0;
  stats_.rooflineNs = std::max(computeNs, memoryNs);
  const double t = stats_.simNs;
  stats_.mfu = t > 0 ? computeNs / t : 0;
  // Compute engines' busy times sum over the physical cores: their utilization is
  // the cores' average. "dma" is already a union over all queues, and the
  // collective engine is the logical core's.
  for (const auto &[engine, busy] : stats_.engineBusyNs) {
    const bool shared = engine == engineName(Engine::Dma) ||
                        engine == engineName(Engine::Collective);
    const int cores = shared ? 1 : tgt_.physicalCores;
    stats_.engineUtilization[engine] = t > 0 ? busy / (t * cores) : 0;
  }
}

/// Sums the stats of the run.
void Simulation::finish() {
  stats_.flops = prog_.flops ? prog_.flops : matmulFlops_;
  for (Engine e :
       {Engine::Tensor, Engine::Vector, Engine::Scalar, Engine::GpSimd})
    stats_.engineBusyNs[engineName(e)] = engineBusy_[size_t(e)];
  stats_.engineBusyNs[engineName(Engine::Dma)] = dmaBusy_.total();
  if (coverage_) {
    stats_.engineBusyNs[engineName(Engine::Collective)] =
        engineBusy_[size_t(Engine::Collective)];
    for (const auto &[ready, complete] : collectiveWindows_)
      stats_.exposedCollectiveNs += coverage_->uncovered(ready, complete);
  }
  report(stats_.matmuls > 0 && allMatmulsFp32_);
}

RunStats Simulation::run(const std::vector<const void *> &inputs,
                         const std::vector<void *> &outputs) {
  const auto &insts = prog_.instructions;
  checkLoops();
  checkRegisterUse(prog_);
  countInstances();
  planDynamicLoops();
  if (!opts_.timingOnly) {
    mem_ = std::make_unique<Memory>(prog_, tgt_, inputs, outputs,
                                    opts_.poisonMemory);
    mem_->setRunSeed(opts_.seed); // rng / rand2's generators (Random.h)
    exec_ = std::make_unique<Executor>(*mem_);
    if (opts_.checkHazards)
      hazards_ = std::make_unique<HazardDetector>(prog_, tgt_);
  }
  if (opts_.timeline) {
    opts_.timeline->clear();
    opts_.timeline->reserve(reserveFor(totalInstances_));
  }
  if (opts_.originCosts)
    opts_.originCosts->assign(prog_.origins.size() + 1, OriginCost{});
  stats_.queueBusyNs.assign(kNumQueues, 0.0);
  planLoopSteps();

  // Execution order reaches instruction i first after all of 0 .. i-1, so
  // each is prepared (and checked) exactly where an unrolled run would first
  // reach it.
  uint64_t instances = 0;
  // The clock is read every 64 instances, the poll called every kPollIntervalMs.
  using Clock = std::chrono::steady_clock;
  Clock::time_point nextPoll = Clock::now() + std::chrono::milliseconds(kPollIntervalMs);
  bool dynamic = false;
  for (const Loop &l : prog_.loops)
    dynamic |= l.dynamic();
  for (LoopWalker w(prog_.loops, insts.size(), dynamic ? this : nullptr); !w.done();
       w.next()) {
    const size_t i = w.pc();
    if (w.depth() == 0)
      runOnce(i, w.iv());
    else
      issue(i, loopStep(i, w), w.iv());
    ++instances;
    if (opts_.poll && (instances & 63) == 0 && Clock::now() >= nextPoll) {
      opts_.poll();
      nextPoll = Clock::now() + std::chrono::milliseconds(kPollIntervalMs);
    }
  }
  checkPeersMatched();
  stats_.instructions = instances;
  finish();
  return stats_;
}

} // namespace

RunStats simulate(const Program &program, const Target &target,
                  const std::vector<const void *> &inputs,
                  const std::vector<void *> &outputs,
                  const RunOptions &options) {
  return Simulation(program, target, options).run(inputs, outputs);
}

} // namespace neuron::runtime
