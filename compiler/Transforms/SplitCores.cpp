// The neuron-split-cores pass: on a logical core of two physical cores (trn2's LNC=2), a
// top-level loop nest whose outermost loop has independent iterations runs its first half
// on core 0 and its second half on core 1.
//
// An outermost loop is parallel when (checked conservatively; otherwise the nest stays on
// core 0):
//  - the nest uses no SBUF/PSUM tile allocated outside it (a tile allocated in a loop body
//    is fresh in every iteration, so no on-chip value flows between iterations);
//  - HBM is written only by DMAs, no HBM buffer written in the nest is also read in it,
//    and the writes of different iterations are disjoint: with one writer of a buffer its
//    offsets, the outer induction variable included, address every element at most once
//    (each stride exceeds the extent of the smaller ones); with several, they move by the
//    same step per iteration and each iteration's bytes span less than that step;
//  - no access pattern uses the outer induction variable modulo a count.
// Matmul output tiles, row tiles of elementwise ops, reductions and fusions qualify; a
// loop carrying an accumulation (a tile allocated outside it) does not.
//
// The split: the loop keeps the first ceil(N/2) iterations; a clone, marked
// `ntile.core = 1`, runs the others, with `coef * ceil(N/2)` added to every offset that
// uses the outer induction variable, and its random ops on streams of their own. Tile allocation, queue assignment and semaphores
// then follow each nest's core (NTileDialect.h kCoreAttr).
#include "compiler/Passes.h"
#include "dialects/Common/LoopTerms.h"
#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/program/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <algorithm>

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONSPLITCORES
#include "compiler/Passes.h.inc"

namespace {

bool onChip(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && ntile::getMemSpace(t) != MemSpace::hbm;
}

/// The sum of the level-0 coefficients of `ap`, or nullopt if one has a modulus.
std::optional<int64_t> outerCoef(ntile::AccessPatternAttr ap) {
  int64_t coef = 0;
  for (const LoopTerm &t : unpackTerms(ap.getTerms())) {
    if (t.level != 0)
      continue;
    if (t.modulus > 0)
      return std::nullopt;
    coef += t.coef;
  }
  return coef;
}

/// One HBM write of the nest: the pattern and the trip counts of the loops around it.
struct Write {
  ntile::AccessPatternAttr ap;
  SmallVector<int64_t> counts;
};

/// Every (|stride|, size) that moves a write within one outer iteration.
SmallVector<std::pair<int64_t, int64_t>> innerSteps(const Write &w) {
  SmallVector<std::pair<int64_t, int64_t>> steps;
  for (size_t i = 0; i < w.ap.getRank(); ++i)
    if (w.ap.getStride(i) != 0 && w.ap.getSize(i) > 1)
      steps.push_back({std::abs(w.ap.getStride(i)), w.ap.getSize(i)});
  for (const LoopTerm &t : unpackTerms(w.ap.getTerms()))
    if (t.level > 0 && t.coef != 0 && w.counts[t.level] > 1)
      steps.push_back({std::abs(t.coef), w.counts[t.level]});
  return steps;
}

/// Whether the writes of different iterations of the outer loop (`count` of them,
/// `coef` elements apart) never touch the same element.
bool disjointIterations(ArrayRef<Write> writes, int64_t coef, int64_t count) {
  if (coef == 0)
    return false;
  if (writes.size() == 1) { // injective as a whole
    SmallVector<std::pair<int64_t, int64_t>> steps = innerSteps(writes[0]);
    steps.push_back({std::abs(coef), count});
    llvm::sort(steps);
    int64_t extent = 0;
    for (auto [stride, size] : steps) {
      if (stride <= extent)
        return false;
      extent += stride * (size - 1);
    }
    return true;
  }
  int64_t lo = INT64_MAX, hi = INT64_MIN; // elements written by iteration 0
  for (const Write &w : writes) {
    int64_t wlo = w.ap.getOffset(), whi = w.ap.getOffset();
    for (size_t i = 0; i < w.ap.getRank(); ++i) {
      int64_t span = w.ap.getStride(i) * (w.ap.getSize(i) - 1);
      (span < 0 ? wlo : whi) += span;
    }
    for (const LoopTerm &t : unpackTerms(w.ap.getTerms()))
      if (t.level > 0) {
        int64_t span = t.coef * (w.counts[t.level] - 1);
        (span < 0 ? wlo : whi) += span;
      }
    lo = std::min(lo, wlo);
    hi = std::max(hi, whi);
  }
  return hi - lo < std::abs(coef);
}

/// Whether the iterations of the outermost loop `loop` are independent (see above).
bool isParallel(ntile::LoopOp loop) {
  Region &body = loop.getBody();
  llvm::MapVector<Value, SmallVector<Write>> writes; // per HBM root buffer
  DenseMap<Value, int64_t> coefs;                     // their outer coefficient
  DenseSet<Value> reads;                              // HBM root buffers read
  bool ok = true;
  loop.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (onChip(operand) && !body.isAncestor(ntile::getRootBuffer(operand).getParentRegion()))
        ok = false; // a tile from outside the nest
    for (NamedAttribute attr : op->getAttrs())
      if (auto ap = dyn_cast<ntile::AccessPatternAttr>(attr.getValue()))
        ok &= outerCoef(ap).has_value();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      ok &= isa<ntile::LoopOp>(op); // an op of unknown effects: keep the nest whole
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const auto &effect : list) {
      Value v = effect.getValue();
      if (!v || onChip(v))
        continue;
      Value root = ntile::getRootBuffer(v);
      if (isa<MemoryEffects::Read>(effect.getEffect())) {
        reads.insert(root);
        continue;
      }
      if (!isa<MemoryEffects::Write>(effect.getEffect()))
        continue;
      auto dma = dyn_cast<ntile::DmaOp>(op);
      std::optional<int64_t> coef = dma ? outerCoef(dma.getTargetAp()) : std::nullopt;
      if (!coef || (coefs.count(root) && coefs[root] != *coef)) {
        ok = false;
        continue;
      }
      coefs[root] = *coef;
      writes[root].push_back({dma.getTargetAp(), enclosingLoopCounts(op)});
    }
  });
  if (!ok)
    return false;
  for (auto &[root, list] : writes)
    if (reads.contains(root) || !disjointIterations(list, coefs[root], loop.getCount()))
      return false;
  return true;
}

/// Added to the streams of random ops in the core-1 half (lowered streams are below 2^44).
constexpr int64_t kCoreStreamOffset = int64_t(1) << 44;

/// `ap` with iteration `first` of the outer loop as its iteration 0.
ntile::AccessPatternAttr shifted(ntile::AccessPatternAttr ap, int64_t first) {
  return ntile::AccessPatternAttr::get(ap.getContext(), ap.getOffset() + *outerCoef(ap) * first,
                                       ap.getDims(), ap.getTerms());
}

/// Splits `loop` in two halves, the second on physical core 1.
void split(ntile::LoopOp loop) {
  int64_t count = loop.getCount(), first = (count + 1) / 2;
  OpBuilder b(loop);
  b.setInsertionPointAfter(loop);
  auto second = cast<ntile::LoopOp>(b.clone(*loop));
  loop->setAttr("count", b.getI64IntegerAttr(first));
  second->setAttr("count", b.getI64IntegerAttr(count - first));
  second->setAttr(ntile::kCoreAttr, b.getI64IntegerAttr(1));
  second.walk([&](Operation *op) {
    for (NamedAttribute attr : op->getAttrs())
      if (auto ap = dyn_cast<ntile::AccessPatternAttr>(attr.getValue()))
        op->setAttr(attr.getName(), shifted(ap, first));
    // A random instruction draws its stream's next numbers: the copy on core 1 needs a
    // stream of its own, or both halves would get the same numbers.
    if (auto random = dyn_cast<ntile::RandomOp>(op))
      random.setStream(random.getStream() + kCoreStreamOffset);
  });
}

struct NeuronSplitCoresPass : impl::NeuronSplitCoresBase<NeuronSplitCoresPass> {
  using NeuronSplitCoresBase::NeuronSplitCoresBase;

  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    if (t->physicalCores < 2 || getOperation().getBody().empty())
      return;
    if (t->physicalCores > 2) {
      getOperation().emitError("neuron-split-cores splits over 2 physical cores, not ")
          << t->physicalCores;
      return signalPassFailure();
    }
    for (auto loop :
         llvm::to_vector(getOperation().getBody().front().getOps<ntile::LoopOp>()))
      if (loop.getCount() >= 2 && !loop->hasAttr(ntile::kCoreAttr) && isParallel(loop))
        split(loop);
  }
};

} // namespace
} // namespace neuron::compiler
