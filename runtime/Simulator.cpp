// The simulator driver: issues, times and executes instructions; sums stats.
//
// Timing: a queue runs its instructions in order. An instruction starts at
// max(queue free, all its semaphore waits satisfied); the semaphore of a queue
// counts its completed instructions, so wait {q, v} is satisfied when the v-th
// instruction of q completes. Compute instructions cost per CostModel.h; an
// instruction whose start was set by a wait pays the static overhead too.
// DMA transfers take dmaFixedNs + bytes / dmaBytesPerNsPerQueue on their
// queue (a DmaGather dmaDescriptorNs more per row) and reserve time on the
// shared HBM channel (HbmChannel.h). On NC-v2
// (sharedSbufPsumPorts) Vector/GpSimd serialize on SBUF and Vector/Scalar on
// PSUM.
#include "runtime/Simulator.h"

#include "runtime/Checks.h"
#include "runtime/CostModel.h"
#include "runtime/Execute.h"
#include "runtime/HbmChannel.h"
#include "runtime/Memory.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <utility>

namespace neuron::runtime {

namespace {

std::string queueName(int q) {
  if (q >= kQueueDma0 && q < kNumQueues)
    return "dma" + std::to_string(q - kQueueDma0);
  if (q >= 0 && q < kQueueDma0)
    return engineName(engineOfQueue(q));
  return "?";
}

/// Length of the union of [start, end) intervals.
double unionLength(std::vector<std::pair<double, double>> &iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, curS = 0, curE = -1;
  for (const auto &[s, e] : iv) {
    if (s > curE) {
      if (curE > curS)
        total += curE - curS;
      curS = s;
      curE = e;
    } else {
      curE = std::max(curE, e);
    }
  }
  if (curE > curS)
    total += curE - curS;
  return total;
}

class Simulation {
public:
  Simulation(const Program &p, const Target &t, const RunOptions &o)
      : prog_(p), tgt_(t), opts_(o) {}

  RunStats run(const std::vector<const void *> &inputs,
               const std::vector<void *> &outputs);

private:
  double waitsSatisfied(size_t index, const Instruction &inst) const;
  /// Rethrows `e` with " (from <origin>)" appended if `inst` has an origin.
  [[noreturn]] void rethrowWithOrigin(const SimulationError &e,
                                      const Instruction &inst) const {
    if (inst.origin < prog_.origins.size())
      throw SimulationError(std::string(e.what()) + " (from " +
                            prog_.origins[inst.origin] + ")");
    throw e;
  }
  void timeDma(const InstrShape &sh, double start, double &end);
  void pruneHbm();
  void report(bool fp32Peak);

  const Program &prog_;
  const Target &tgt_;
  const RunOptions &opts_;
  RunStats stats_;
  std::array<uint32_t, kNumQueues> total_{}; // instructions per queue
  std::array<std::vector<double>, kNumQueues> complete_; // completion times
  std::array<double, kNumQueues> queueFree_{};
  double sbufPortFree_ = 0, psumPortFree_ = 0; // NC-v2 shared ports
  HbmChannel hbm_;
  int hbmReservesSincePrune_ = 0;
  std::vector<std::pair<double, double>> dmaIntervals_;
};

double Simulation::waitsSatisfied(size_t index, const Instruction &inst) const {
  double ready = -1; // < 0: no wait constrains the start
  for (const SemWait &w : inst.waits) {
    if (w.queue >= kNumQueues)
      failInstruction(index, inst,
                      "waits on queue " + std::to_string(w.queue) +
                          ", which does not exist");
    if (w.value == 0)
      continue;
    auto deadlock = [&](const std::string &why) {
      return SimulationError(
          "deadlock: instruction " + std::to_string(index) + " (" +
          opcodeName(inst.opcode) + ") waits for " + std::to_string(w.value) +
          " completions of queue " + std::to_string(w.queue) + " (" +
          queueName(w.queue) + "), but " + why);
    };
    if (w.value > total_[w.queue])
      throw deadlock("the queue has only " + std::to_string(total_[w.queue]) +
                     " instructions");
    const auto &done = complete_[w.queue];
    if (w.value > done.size())
      throw deadlock("only " + std::to_string(done.size()) +
                     " are issued before it in program order");
    ready = std::max(ready, done[w.value - 1]);
  }
  return ready;
}

void Simulation::timeDma(const InstrShape &sh, double start, double &end) {
  end = start + (sh.gatherRows > 0
                     ? dmaGatherQueueNs(tgt_, sh.bytes, sh.gatherRows)
                     : dmaQueueNs(tgt_, sh.bytes));
  if (sh.hbmSides > 0) {
    const int64_t hbmBytes = sh.bytes * sh.hbmSides;
    double hbmEnd =
        hbm_.reserve(start + tgt_.dmaFixedNs, hbmNs(tgt_, hbmBytes));
    end = std::max(end, hbmEnd);
    stats_.hbmBytes += uint64_t(hbmBytes);
    if (++hbmReservesSincePrune_ >= 1024)
      pruneHbm();
  }
  stats_.dmaTransfers++;
  stats_.dmaBytes += uint64_t(sh.bytes);
  dmaIntervals_.emplace_back(start, end);
}

void Simulation::pruneHbm() {
  hbmReservesSincePrune_ = 0;
  // A future DMA starts no earlier than its queue is free; queues with no
  // instructions left never start one again.
  double lowest = -1;
  for (int q = kQueueDma0; q < kNumQueues; ++q)
    if (complete_[q].size() < total_[q])
      lowest = lowest < 0 ? queueFree_[q] : std::min(lowest, queueFree_[q]);
  if (lowest > 0)
    hbm_.prune(lowest);
}

void Simulation::report(bool fp32Peak) {
  const double tflops =
      fp32Peak ? tgt_.tensorPeakFp32Tflops : tgt_.tensorPeakBf16Tflops;
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
  for (const auto &[engine, busy] : stats_.engineBusyNs)
    stats_.engineUtilization[engine] = t > 0 ? busy / t : 0;
}

RunStats Simulation::run(const std::vector<const void *> &inputs,
                         const std::vector<void *> &outputs) {
  const auto &insts = prog_.instructions;
  for (const Instruction &inst : insts)
    if (inst.queue < kNumQueues)
      ++total_[inst.queue];
  for (int q = 0; q < kNumQueues; ++q)
    complete_[q].reserve(total_[q]);

  std::unique_ptr<Memory> mem;
  std::unique_ptr<Executor> exec;
  if (!opts_.timingOnly) {
    mem = std::make_unique<Memory>(prog_, tgt_, inputs, outputs,
                                   opts_.poisonMemory);
    exec = std::make_unique<Executor>(*mem);
  }
  if (opts_.timeline) {
    opts_.timeline->clear();
    opts_.timeline->reserve(insts.size());
  }
  stats_.queueBusyNs.assign(kNumQueues, 0.0);
  std::array<double, 5> engineBusy{};
  uint64_t matmulFlops = 0;
  bool allMatmulsFp32 = true;

  for (size_t i = 0; i < insts.size(); ++i) {
    const Instruction &inst = insts[i];
    InstrShape sh;
    try {
      sh = checkInstruction(prog_, tgt_, i);
    } catch (const SimulationError &e) {
      rethrowWithOrigin(e, inst);
    }
    const int q = inst.queue;
    const Engine eng = engineOfQueue(q);
    const double ready = waitsSatisfied(i, inst);
    double start = std::max(queueFree_[q], ready);
    double end = start, complete;

    if (eng == Engine::Dma) {
      timeDma(sh, start, end);
      complete = end;
    } else {
      Cost cost = computeCost(tgt_, inst, sh);
      if (ready >= queueFree_[q]) // the start waited on a semaphore
        cost.busyNs += stalledOverheadNs(tgt_, eng);
      bool sbufPort = false, psumPort = false;
      if (tgt_.sharedSbufPsumPorts) {
        sbufPort =
            sh.touchesSbuf && (eng == Engine::Vector || eng == Engine::GpSimd);
        psumPort =
            sh.touchesPsum && (eng == Engine::Vector || eng == Engine::Scalar);
        if (sbufPort)
          start = std::max(start, sbufPortFree_);
        if (psumPort)
          start = std::max(start, psumPortFree_);
      }
      end = start + cost.busyNs;
      complete = end + cost.latencyNs;
      if (sbufPort)
        sbufPortFree_ = end;
      if (psumPort)
        psumPortFree_ = end;
      engineBusy[size_t(eng)] += cost.busyNs;
      if (inst.opcode == Opcode::Matmul) {
        ++stats_.matmuls;
        allMatmulsFp32 &= inst.srcs[0].dtype == DType::F32 ||
                          inst.srcs[1].dtype == DType::F32;
        matmulFlops += 2 * uint64_t(sh.matmulK) * uint64_t(sh.matmulM) *
                       uint64_t(sh.matmulN);
      }
    }

    queueFree_[q] = end;
    complete_[q].push_back(complete);
    stats_.queueBusyNs[q] += end - start;
    stats_.simNs = std::max(stats_.simNs, complete);
    if (opts_.timeline)
      opts_.timeline->push_back(
          {uint32_t(i), uint16_t(q), start, end, complete});
    if (exec) {
      try {
        exec->run(i, inst, sh);
      } catch (const SimulationError &e) {
        rethrowWithOrigin(e, inst);
      }
    }
  }

  stats_.instructions = insts.size();
  stats_.flops = prog_.flops ? prog_.flops : matmulFlops;
  for (Engine e :
       {Engine::Tensor, Engine::Vector, Engine::Scalar, Engine::GpSimd})
    stats_.engineBusyNs[engineName(e)] = engineBusy[size_t(e)];
  stats_.engineBusyNs[engineName(Engine::Dma)] = unionLength(dmaIntervals_);
  report(stats_.matmuls > 0 && allMatmulsFp32);
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
