// The neuron-balance-engines pass: instructions that several engines can run go where they
// finish soonest, so that in a pipelined loop no engine idles while another sets the pace.
//
// Engines per instruction (HARDWARE.md "Vector, Scalar and GpSimd instruction costs" and
// the engine notes there): tensor_tensor on Vector or GpSimd; tensor_scalar and tensor_copy
// on Vector, Scalar or GpSimd; tensor_reduce and select stay on Vector. GpSimd cannot access
// PSUM. On the Scalar engine a tensor_scalar or tensor_tensor runs as an activation:
// identity(x * scale + bias), with the scalar, or a per-partition operand ([P, 1] tile read
// with free stride 0), as its scale or bias. Only float add and sub move there: x * 1 + b
// is exactly x + b, while x * s + 0 would turn a product of -0 into +0. An immediate bias
// of +0 is no bias on the Scalar engine (fn(x * scale)): x + 0 and 0 - x, which turn -0
// into +0, stay where they are.
//
// Per block (a loop body, the function body), the fixed instructions' busy time is summed
// per engine, then the movable ones, longest first, go to the engine whose total grows the
// least (ties keep the original engine), with the simulator's own cost model.
#include "compiler/Passes.h"
#include "compiler/Transforms/RuntimeTypes.h"
#include "dialects/NIsa/IR/NIsaOps.h"
#include "runtime/program/Target.h"
#include "runtime/simulator/timing/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cmath>

using namespace mlir;
using neuron::ntile::MemSpace;
namespace rt = neuron::runtime;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONBALANCEENGINES
#include "compiler/Passes.h.inc"

namespace {

/// The three engines that share elementwise work, in this order in the load arrays.
constexpr std::array<rt::Engine, 3> kEngines = {rt::Engine::Vector, rt::Engine::Scalar,
                                                rt::Engine::GpSimd};
constexpr std::array<int, 3> kLocalQueues = {nisa::kQueueVector, nisa::kQueueScalar,
                                             nisa::kQueueGpSimd};

int engineIndex(rt::Engine e) {
  for (size_t i = 0; i < kEngines.size(); ++i)
    if (kEngines[i] == e)
      return int(i);
  return -1;
}

rt::AccessPattern runtimePattern(nisa::AccessPatternAttr ap) {
  rt::AccessPattern out;
  out.dtype = runtimeDType(ap.getElementType());
  out.space = ap.getSpace() == MemSpace::hbm    ? rt::MemSpace::Hbm
              : ap.getSpace() == MemSpace::sbuf ? rt::MemSpace::Sbuf
                                                : rt::MemSpace::Psum;
  for (size_t i = 0; i < ap.getRank(); ++i)
    out.dims.push_back({ap.getStride(i), ap.getSize(i)});
  return out;
}

bool isFloat(nisa::AccessPatternAttr ap) { return isa<FloatType>(ap.getElementType()); }

/// One value per partition: every free dim of more than one element has stride 0.
bool perPartition(nisa::AccessPatternAttr ap) {
  for (size_t i = 1; i < ap.getRank(); ++i)
    if (ap.getSize(i) > 1 && ap.getStride(i) != 0)
      return false;
  return true;
}

/// How an instruction runs on the Scalar engine as identity(src * scale + bias).
struct AsActivation {
  nisa::AccessPatternAttr src, biasTile;
  double scale = 1.0, bias = 0.0;
};

std::optional<AsActivation> asActivation(Operation *op) {
  if (auto ts = dyn_cast<nisa::TensorScalarOp>(op)) {
    if (!isFloat(ts.getSrc()) || !isFloat(ts.getDst()))
      return std::nullopt;
    double c = ts.getScalar().convertToDouble();
    bool positiveZero = c == 0.0 && !std::signbit(c);
    if (auto op2 = ts.getOp2()) {
      // x * a then + b or - b: identity(x * a + (+-b)), the same two roundings in fp32.
      double b = ts.getScalar2()->convertToDouble();
      if (ts.getOp() != AluOp::mul || ts.getReverse() || ts.getReverse2() ||
          (*op2 != AluOp::add && *op2 != AluOp::sub) || b == 0.0)
        return std::nullopt;
      return AsActivation{ts.getSrc(), {}, c, *op2 == AluOp::add ? b : -b};
    }
    switch (ts.getOp()) {
    case AluOp::add:
      if (positiveZero)
        return std::nullopt;
      return AsActivation{ts.getSrc(), {}, 1.0, c};
    case AluOp::sub:
      if (ts.getReverse() && positiveZero)
        return std::nullopt;
      return ts.getReverse() ? AsActivation{ts.getSrc(), {}, -1.0, c}
                             : AsActivation{ts.getSrc(), {}, 1.0, -c};
    default:
      return std::nullopt;
    }
  }
  auto tt = dyn_cast<nisa::TensorTensorOp>(op);
  if (!tt || !isFloat(tt.getLhs()) || !isFloat(tt.getRhs()) || !isFloat(tt.getDst()))
    return std::nullopt;
  bool lhsRow = perPartition(tt.getLhs()), rhsRow = perPartition(tt.getRhs());
  if (lhsRow == rhsRow || perPartition(tt.getDst()))
    return std::nullopt;
  nisa::AccessPatternAttr full = rhsRow ? tt.getLhs() : tt.getRhs();
  nisa::AccessPatternAttr row = rhsRow ? tt.getRhs() : tt.getLhs();
  switch (tt.getOp()) {
  case AluOp::add:
    return AsActivation{full, row, 1.0, 1.0};
  case AluOp::sub: // full - row, or row - full
    return rhsRow ? AsActivation{full, row, 1.0, -1.0} : AsActivation{full, row, -1.0, 1.0};
  default:
    return std::nullopt;
  }
}

bool touchesPsum(Operation *op) {
  auto inst = cast<nisa::InstructionOpInterface>(op);
  if (inst.getWritePattern().getSpace() == MemSpace::psum)
    return true;
  return llvm::any_of(inst.getReadPatterns(), [](nisa::AccessPatternAttr ap) {
    return ap.getSpace() == MemSpace::psum;
  });
}

class Balancer {
public:
  explicit Balancer(const rt::Target &t) : t(t) {}

  void run(Block &block) {
    // Busy time per physical core and engine.
    std::array<std::array<double, 3>, rt::kMaxPhysicalCores> load = {};
    SmallVector<std::pair<Operation *, std::array<double, 3>>> movable;
    for (Operation &op : block) {
      if (auto loop = dyn_cast<nisa::LoopOp>(op)) {
        run(loop.getBody().front());
        continue;
      }
      auto inst = dyn_cast<nisa::InstructionOpInterface>(&op);
      if (!inst)
        continue;
      int current = engineIndex(inst.getEngine());
      if (current < 0)
        continue;
      std::array<double, 3> cost = costs(&op);
      int options = 0;
      for (double c : cost)
        options += c >= 0;
      int core = rt::coreOfQueue(inst.getQueueId());
      if (options <= 1) {
        load[core][current] += estimate(&op, inst.getEngine(), inst.getOpcode());
        continue;
      }
      movable.push_back({&op, cost});
    }
    // Longest first (stable: program order among equals).
    llvm::stable_sort(movable, [](const auto &a, const auto &b) {
      return *llvm::max_element(a.second) > *llvm::max_element(b.second);
    });
    for (auto &[op, cost] : movable) {
      auto inst = cast<nisa::InstructionOpInterface>(op);
      int current = engineIndex(inst.getEngine()), core = rt::coreOfQueue(inst.getQueueId());
      std::array<double, 3> &l = load[core];
      int best = current;
      for (int e = 0; e < 3; ++e)
        if (cost[e] >= 0 && l[e] + cost[e] < l[best] + cost[best] - 1e-9)
          best = e;
      l[best] += cost[best];
      if (best != current)
        move(op, core, best);
    }
  }

private:
  /// Busy time of `op` on each engine; -1 where it cannot run.
  std::array<double, 3> costs(Operation *op) {
    std::array<double, 3> cost = {-1, -1, -1};
    rt::Opcode opcode = cast<nisa::InstructionOpInterface>(op).getOpcode();
    bool elementwise = isa<nisa::TensorTensorOp, nisa::TensorScalarOp,
                           nisa::ScalarTensorTensorOp, nisa::TensorCopyOp>(op);
    if (!elementwise || op->hasAttr("nisa.engine_chosen")) // a kernel author's choice stays
      return cost;
    cost[0] = estimate(op, rt::Engine::Vector, opcode);
    if (!touchesPsum(op))
      cost[2] = estimate(op, rt::Engine::GpSimd, opcode);
    if (isa<nisa::TensorCopyOp>(op))
      cost[1] = estimate(op, rt::Engine::Scalar, opcode);
    else if (asActivation(op))
      cost[1] = estimate(op, rt::Engine::Scalar, rt::Opcode::Activation);
    return cost;
  }

  double estimate(Operation *op, rt::Engine engine, rt::Opcode opcode) {
    auto inst = cast<nisa::InstructionOpInterface>(op);
    rt::Instruction r;
    r.opcode = opcode;
    r.queue = uint16_t(kLocalQueues[engineIndex(engine)]);
    r.dst = runtimePattern(inst.getWritePattern());
    for (nisa::AccessPatternAttr ap : inst.getReadPatterns())
      r.srcs.push_back(runtimePattern(ap));
    auto alu = [&](AluOp a) { r.alu = toRuntime(a); };
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](nisa::TensorTensorOp o) { alu(o.getOp()); })
        .Case([&](nisa::TensorScalarOp o) {
          alu(o.getOp());
          r.twoOps = bool(o.getOp2());
        })
        .Case([&](nisa::ScalarTensorTensorOp o) {
          alu(o.getOp0());
          r.alu2 = toRuntime(o.getOp1());
        })
        .Case([&](nisa::TensorReduceOp o) { alu(o.getOp()); });
    rt::InstrShape shape;
    nisa::AccessPatternAttr sized =
        opcode == rt::Opcode::TensorReduce ? inst.getReadPatterns().front() : inst.getWritePattern();
    shape.partitions = inst.getWritePattern().getSize(0);
    shape.freeElems = sized.getFreeSize();
    if (opcode == rt::Opcode::Matmul)
      return 0;
    return rt::computeCost(t, r, shape).busyNs;
  }

  void move(Operation *op, int core, int engine) {
    auto inst = cast<nisa::InstructionOpInterface>(op);
    OpBuilder b(op);
    IntegerAttr queue = b.getI32IntegerAttr(rt::queueOf(core, kLocalQueues[engine]));
    if (kEngines[engine] == rt::Engine::Scalar && !isa<nisa::TensorCopyOp>(op)) {
      AsActivation a = *asActivation(op);
      b.create<nisa::ActivationOp>(
          op->getLoc(), queue, inst.getWritePattern(),
          ActFuncAttr::get(op->getContext(), ActFunc::identity), a.src,
          b.getF64FloatAttr(a.scale), b.getF64FloatAttr(a.bias), nisa::AccessPatternAttr(),
          a.biasTile, nisa::AccessPatternAttr(), nullptr, nullptr);
      op->erase();
      return;
    }
    op->setAttr("queue", queue);
  }

  const rt::Target &t;
};

struct NeuronBalanceEnginesPass : impl::NeuronBalanceEnginesBase<NeuronBalanceEnginesPass> {
  using NeuronBalanceEnginesBase::NeuronBalanceEnginesBase;

  void runOnOperation() override {
    const rt::Target *t = rt::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    if (getOperation().getBody().empty())
      return;
    Balancer(*t).run(getOperation().getBody().front());
  }
};

} // namespace
} // namespace neuron::compiler
