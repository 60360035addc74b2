#include "runtime/simulator/Registers.h"

#include "runtime/program/Isa.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/Simulator.h"

#include <bitset>
#include <climits>
#include <vector>

namespace neuron::runtime {

std::string registerName(RegRef r) {
  return "register " + std::to_string(r.index) + " of queue " + std::to_string(r.queue) + " (" +
         queueName(r.queue) + ")";
}

void checkRegisterUse(const Program &p) {
  std::vector<bool> alloc(size_t(kNumQueues) * kRegistersPerQueue, false);
  auto exists = [](RegRef r) {
    return r.queue >= 0 && r.queue < kNumQueues && r.index < kRegistersPerQueue;
  };
  auto isAlloc = [&](RegRef r) {
    return alloc[size_t(r.queue) * kRegistersPerQueue + r.index];
  };
  size_t nextLoop = 0;
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    // A dynamic loop reads its register on entry, before its first instruction.
    for (; nextLoop < p.loops.size() && p.loops[nextLoop].begin <= i; ++nextLoop) {
      const Loop &l = p.loops[nextLoop];
      if (!l.dynamic())
        continue;
      const std::string what = "loops[" + std::to_string(nextLoop) + "]: the dynamic loop's ";
      if (!exists(l.countReg))
        throw SimulationError(what + "register " + std::to_string(l.countReg.index) +
                              " of queue " + std::to_string(l.countReg.queue) +
                              " does not exist (" + std::to_string(kRegistersPerQueue) +
                              " registers per queue)");
      if (!isAlloc(l.countReg))
        throw SimulationError(what + registerName(l.countReg) +
                              " is used before any register_alloc of it");
    }
    const Instruction &inst = p.instructions[i];
    auto use = [&](RegRef r, const char *role) {
      if (exists(r) && !isAlloc(r))
        failInstruction(i, inst, std::string(role) + " " + registerName(r) +
                                     " is used before any register_alloc of it");
    };
    if (usesField(inst.opcode, Field::Reg) && inst.queue < kNumQueues) {
      const RegRef r{int16_t(inst.queue), inst.reg};
      if (inst.opcode == Opcode::RegisterAlloc) {
        if (exists(r))
          alloc[size_t(r.queue) * kRegistersPerQueue + r.index] = true;
      } else {
        use(r, "its");
        if (inst.opcode == Opcode::RegisterMove && inst.regSrc >= 0)
          use(RegRef{int16_t(inst.queue), uint8_t(inst.regSrc)}, "the source");
      }
    }
    use(inst.dst.offsetReg, "dst's dynamic offset");
    for (const AccessPattern &s : inst.srcs)
      use(s.offsetReg, "a source's dynamic offset");
  }
}

void RegisterFile::write(RegRef r, int64_t value, double readyNs, bool known) {
  if (value < INT32_MIN || value > INT32_MAX)
    throw SimulationError(registerName(r) + " is set to " + std::to_string(value) +
                          ", which is no int32 value");
  const size_t s = slot(r);
  written_.set(s);
  known_.set(s, known);
  value_[s] = int32_t(value);
  ready_[s] = readyNs;
}

int32_t RegisterFile::read(RegRef r, const std::string &who) const {
  const size_t s = slot(r);
  if (!written_.test(s))
    throw SimulationError(who + " reads " + registerName(r) +
                          ", which holds no value (register_alloc without one, and no "
                          "register_move or register_load since)");
  return value_[s];
}

} // namespace neuron::runtime
