// The neuron-scalar-tensor-tensor pass: a scalar step and the tensor_tensor that consumes it
// become one scalar_tensor_tensor where the cost model says it is cheaper (see Passes.td).
#include "compiler/Passes.h"
#include "compiler/Transforms/RuntimeTypes.h"
#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/program/Target.h"
#include "runtime/simulator/timing/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace rt = neuron::runtime;
using namespace mlir;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONSCALARTENSORTENSOR
#include "compiler/Passes.h.inc"

namespace {

MemRefType tileType(Value v) { return cast<MemRefType>(v.getType()); }
bool isFloatTile(Value v) { return isa<FloatType>(tileType(v).getElementType()); }
bool isRowTile(Value v) { return tileType(v).getDimSize(1) == 1; }

/// The first step: data <op0> scalar into `target`, the scalar an immediate or the value of
/// a per-partition [P, 1] tile of the row.
struct ScalarStep {
  Operation *op;
  AluOp alu;
  Value data, scalarTile, target;
  double scalar = 0.0;
  bool reverse = false;
};

std::optional<ScalarStep> scalarStepOf(Operation *op) {
  if (auto ts = dyn_cast<ntile::TensorScalarOp>(op)) {
    if (ts.getOp2() || !isFloatTile(ts.getSource()) || !isFloatTile(ts.getTarget()))
      return std::nullopt;
    return ScalarStep{op, ts.getOp(), ts.getSource(), Value(), ts.getTarget(),
                      ts.getScalar().convertToDouble(), ts.getReverse()};
  }
  auto tt = dyn_cast<ntile::TensorTensorOp>(op);
  if (!tt || isRowTile(tt.getTarget()) || isRowTile(tt.getLhs()) == isRowTile(tt.getRhs()) ||
      !isFloatTile(tt.getLhs()) || !isFloatTile(tt.getRhs()) || !isFloatTile(tt.getTarget()))
    return std::nullopt;
  bool rowOnLeft = isRowTile(tt.getLhs());
  return ScalarStep{op,         tt.getOp(), rowOnLeft ? tt.getRhs() : tt.getLhs(),
                    rowOnLeft ? tt.getLhs() : tt.getRhs(), tt.getTarget(), 0.0, rowOnLeft};
}

/// Whether `op` may write `v` (ops without declared effects may).
bool mayWrite(Operation *op, Value v) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [&](const MemoryEffects::EffectInstance &e) {
    return e.getValue() == v && isa<MemoryEffects::Write>(e.getEffect());
  });
}

/// Whether `op` reads or writes `v` (ops without declared effects may).
bool touches(Operation *op, Value v) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [&](const MemoryEffects::EffectInstance &e) { return e.getValue() == v; });
}

/// The simulator's access pattern of a whole tile; a [P, 1] tile read along `free` elements
/// (stride 0), as the lowering to nisa reads a per-partition operand.
rt::AccessPattern pattern(Value tile, int64_t free) {
  MemRefType t = tileType(tile);
  rt::AccessPattern ap;
  ap.dtype = runtimeDType(t.getElementType());
  ap.space = ntile::getMemSpace(t) == ntile::MemSpace::psum ? rt::MemSpace::Psum : rt::MemSpace::Sbuf;
  ap.dims = {{1, t.getDimSize(0)}, {t.getDimSize(1) == 1 ? 0 : 1, free}};
  return ap;
}

double vectorNs(const rt::Target &t, rt::Instruction inst, int64_t partitions, int64_t free) {
  inst.queue = uint16_t(rt::kQueueVector);
  rt::InstrShape shape;
  shape.partitions = partitions;
  shape.freeElems = free;
  return rt::computeCost(t, inst, shape).busyNs;
}

struct NeuronScalarTensorTensorPass
    : impl::NeuronScalarTensorTensorBase<NeuronScalarTensorTensorPass> {
  using NeuronScalarTensorTensorBase::NeuronScalarTensorTensorBase;

  void runOnOperation() override {
    const rt::Target *t = rt::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    target_ = t;
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa<ntile::TensorScalarOp, ntile::TensorTensorOp>(op))
        candidates.push_back(op);
    });
    llvm::SmallPtrSet<Operation *, 16> erased;
    for (Operation *op : candidates)
      if (!erased.contains(op))
        fuse(op, erased);
  }

  /// The tensor_tensor that next touches the first step's result, if nothing in between
  /// writes the step's operands.
  ntile::TensorTensorOp consumerOf(const ScalarStep &s) {
    for (Operation *o = s.op->getNextNode(); o; o = o->getNextNode()) {
      if (o->getNumRegions() != 0) // a loop: its iterations are not one step
        return nullptr;
      if (touches(o, s.target))
        return dyn_cast<ntile::TensorTensorOp>(o);
      if (mayWrite(o, s.data) || (s.scalarTile && mayWrite(o, s.scalarTile)))
        return nullptr;
    }
    return nullptr;
  }

  void fuse(Operation *op, llvm::SmallPtrSet<Operation *, 16> &erased) {
    std::optional<ScalarStep> s = scalarStepOf(op);
    if (!s || s->data == s->target)
      return;
    ntile::TensorTensorOp next = consumerOf(*s);
    if (!next || (next.getLhs() == s->target) == (next.getRhs() == s->target))
      return;
    bool otherOnLeft = next.getRhs() == s->target;
    Value other = otherOnLeft ? next.getLhs() : next.getRhs();
    Value result = next.getTarget();
    if (isRowTile(other) || isRowTile(result) || !isFloatTile(other) || !isFloatTile(result) ||
        tileType(other).getShape() != tileType(s->target).getShape())
      return;
    // The step's result must be dead after its consumer: overwritten by it, or read by
    // nothing else.
    if (result != s->target && !llvm::all_of(s->target.getUsers(), [&](Operation *u) {
          return u == s->op || u == next.getOperation();
        }))
      return;
    // Cheaper on the Vector engine than the two instructions?
    const int64_t parts = tileType(result).getDimSize(0), free = tileType(result).getDimSize(1);
    rt::Instruction first, second, fused;
    first.opcode = s->scalarTile ? rt::Opcode::TensorTensor : rt::Opcode::TensorScalar;
    first.alu = toRuntime(s->alu);
    first.dst = pattern(s->target, free);
    first.srcs = {pattern(s->data, free)};
    if (s->scalarTile)
      first.srcs.push_back(pattern(s->scalarTile, free));
    second.opcode = rt::Opcode::TensorTensor;
    second.alu = toRuntime(next.getOp());
    second.dst = pattern(result, free);
    second.srcs = {pattern(next.getLhs(), free), pattern(next.getRhs(), free)};
    fused.opcode = rt::Opcode::ScalarTensorTensor;
    fused.alu = first.alu;
    fused.alu2 = second.alu;
    fused.dst = second.dst;
    fused.srcs = {first.srcs[0], pattern(other, free)};
    if (s->scalarTile)
      fused.srcs.push_back(first.srcs[1]);
    if (vectorNs(*target_, fused, parts, free) >=
        vectorNs(*target_, first, parts, free) + vectorNs(*target_, second, parts, free))
      return;
    OpBuilder b(next);
    auto stt = b.create<ntile::ScalarTensorTensorOp>(
        next.getLoc(), s->alu, next.getOp(), s->data, APFloat(s->scalar), s->scalarTile, other,
        result, s->reverse, otherOnLeft);
    stt->setDiscardableAttrs(next->getDiscardableAttrDictionary());
    erased.insert(next);
    erased.insert(s->op);
    next->erase();
    s->op->erase();
  }

  const rt::Target *target_ = nullptr;
};

} // namespace
} // namespace neuron::compiler
