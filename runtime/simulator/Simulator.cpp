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

private:
  std::vector<double> times_; // instance i at i % kKept
  int64_t count_ = 0;
  double evictedMax_ = 0;
};

class Simulation {
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
  void execute(size_t index, const Instruction &inst, const Step &s,
               const int64_t *iv);
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
};

/// Capacity reserved up front for per-instance records: the whole run, up to
/// a bound (a huge loop count must not allocate everything at once).
size_t reserveFor(int64_t instances) {
  return size_t(std::min<int64_t>(instances, int64_t(1) << 20));
}

bool hasOffsetTerms(const Instruction &inst) {
  if (!inst.dst.offsetTerms.empty())
    return true;
  for (const AccessPattern &src : inst.srcs)
    if (!src.offsetTerms.empty())
      return true;
  return false;
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

void Simulation::execute(size_t index, const Instruction &inst, const Step &s,
                         const int64_t *iv) {
  const Instruction *at = &inst;
  if (s.bound >= 0) { // this instance's offsets
    Instruction &b = bound_[size_t(s.bound)];
    b.dst.offset = loopTermsAt(inst.dst.offset, inst.dst.offsetTerms, iv);
    for (size_t k = 0; k < inst.srcs.size(); ++k)
      b.srcs[k].offset =
          loopTermsAt(inst.srcs[k].offset, inst.srcs[k].offsetTerms, iv);
    at = &b;
  }
  try {
    if (usesField(inst.opcode, Field::Rng)) { // random, dropout
      if (randomDrawn_.empty())
        randomDrawn_.assign(prog_.instructions.size(), 0);
      exec_->random(*at, opts_.seed, randomDrawn_[index]);
      randomDrawn_[index] += uint64_t(inst.dst.numElements());
      return;
    }
    exec_->run(index, *at, s.sh);
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
  const int q = inst.queue;
  const double ready = waitsSatisfied(index, inst, iv);
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
  if (hazards_)
    hazards_->access(index, iv, start, complete);
  if (exec_ && !collective) // the hook moved a collective's data
    execute(index, inst, s, iv);
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
  countInstances();
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
  for (LoopWalker w(prog_.loops, insts.size()); !w.done(); w.next()) {
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
