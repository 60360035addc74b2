// The neuron-fuse-elementwise pass: greedy, convex grouping of elementwise ops and
// last-dim reductions over one iteration shape into ntorch.fusion regions.
#include "compiler/Passes.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
namespace nt = neuron::ntorch;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONFUSEELEMENTWISE
#include "compiler/Passes.h.inc"

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// A splat constant is cloned into fusions (it becomes an immediate).
bool isSplatConstant(Value v) {
  DenseElementsAttr attr;
  return matchPattern(v, m_Constant(&attr)) && attr.isSplat();
}

struct Group {
  SmallVector<int64_t> shape; // iteration shape
  SmallVector<Operation *> ops;
  llvm::SmallPtrSet<Operation *, 16> members;
  int64_t first = 0;          // block position of the first member
  bool hasReduce = false;
};

/// What a value is to a group's iteration shape S: a full tensor broadcasting
/// to S, or a row value (S without its last dim, or with it as 1).
enum class Kind { None, Full, Row };

Kind kindOf(ArrayRef<int64_t> shape, ArrayRef<int64_t> s) {
  if (shape == s)
    return Kind::Full;
  SmallVector<int64_t> rowKeep(s.drop_back()), rowDrop(s.drop_back());
  rowKeep.push_back(1);
  if (shape == ArrayRef<int64_t>(rowKeep) || shape == ArrayRef<int64_t>(rowDrop))
    return Kind::Row;
  return Kind::None;
}

class Fuser {
public:
  explicit Fuser(Block &block) : block(block) {
    int64_t i = 0;
    for (Operation &op : block)
      position[&op] = i++;
  }

  void run() {
    for (Operation &op : block)
      consider(&op);
    for (auto &group : groups)
      if (group->ops.size() >= 2 || readsMatmul(*group))
        outline(*group);
  }

private:
  /// A single op reading a matmul's result is outlined too: as a fusion it can become the
  /// matmul's epilogue (neuron-fuse-matmul-epilogue) instead of a round trip through HBM.
  static bool readsMatmul(const Group &g) {
    for (Operation *op : g.ops)
      for (Value v : op->getOperands())
        if (v.getDefiningOp<nt::MatmulOp>())
          return true;
    return false;
  }

  Group *groupOf(Value v) {
    Operation *def = v.getDefiningOp();
    return def ? owner.lookup(def) : nullptr;
  }

  /// Operands from outside the group must exist before the group starts.
  bool convex(Group &g, Operation *op) {
    for (Value v : op->getOperands()) {
      if (groupOf(v) == &g || isSplatConstant(v))
        continue;
      Operation *def = v.getDefiningOp();
      if (def && position[def] > g.first)
        return false;
    }
    return true;
  }

  /// Whether a group with a reduction keeps its rows in SBUF with `op` added: rows of at
  /// most kFusedRowAlwaysFits elements always do; wider ones while the lowering's tiles
  /// of a block fit nt::kFusedRowBudgetBytes.
  bool rowsFit(Group &g, Operation *op) {
    int64_t cols = g.shape.back();
    if (cols <= nt::kFusedRowAlwaysFits)
      return true;
    SmallVector<Operation *> ops(g.ops);
    ops.push_back(op);
    return nt::fusedRowBytes(ops, cols) <= nt::kFusedRowBudgetBytes;
  }

  /// Whether `op` can be computed tile by tile in group `g`.
  bool fits(Group &g, Operation *op) {
    if ((g.hasReduce || isa<nt::ReduceOp>(op)) && !rowsFit(g, op))
      return false;
    auto internal = [&](Value v) { return groupOf(v) == &g; };
    if (auto r = dyn_cast<nt::ReduceOp>(op)) {
      ArrayRef<int64_t> in = shapeOf(r.getInput());
      return !r.getKeepdim() && r.getDims().size() == 1 && r.getDims()[0] == (int64_t)in.size() - 1 &&
             ArrayRef<int64_t>(g.shape) == in;
    }
    if (auto rs = dyn_cast<nt::ReshapeOp>(op))
      return internal(rs.getInput()) && kindOf(shapeOf(rs.getInput()), g.shape) == Kind::Row &&
             kindOf(shapeOf(rs.getResult()), g.shape) == Kind::Row;
    if (!isa<nt::UnaryOp, nt::BinaryOp, nt::CastOp, nt::SelectOp>(op))
      return false;
    Kind result = kindOf(shapeOf(op->getResult(0)), g.shape);
    if (result == Kind::None)
      return false;
    for (Value v : op->getOperands()) {
      ArrayRef<int64_t> shape = shapeOf(v);
      if (internal(v)) {
        Kind k = kindOf(shape, g.shape);
        // Row values inside a tile are [P, 1]; they combine with full tiles only
        // in their kept-dim form, which broadcasts along the free dimension.
        if (k == Kind::None || (result == Kind::Row && k != Kind::Row))
          return false;
        if (k == Kind::Row && shape.size() != g.shape.size())
          return false;
        continue;
      }
      ArrayRef<int64_t> target = result == Kind::Full ? ArrayRef<int64_t>(g.shape)
                                                      : shapeOf(op->getResult(0));
      if (!isSplatConstant(v) && !nt::isBroadcastableTo(shape, target))
        return false;
    }
    return true;
  }

  void consider(Operation *op) {
    if (!isa<nt::UnaryOp, nt::BinaryOp, nt::CastOp, nt::SelectOp, nt::ReduceOp, nt::ReshapeOp>(op))
      return;
    for (Value v : op->getOperands())
      if (Group *g = groupOf(v))
        if (fits(*g, op) && convex(*g, op)) {
          add(*g, op);
          return;
        }
    // Start a group: elementwise ops iterate over their result, reductions over their input.
    SmallVector<int64_t> shape;
    if (auto r = dyn_cast<nt::ReduceOp>(op))
      shape.assign(shapeOf(r.getInput()).begin(), shapeOf(r.getInput()).end());
    else if (!isa<nt::ReshapeOp>(op))
      shape.assign(shapeOf(op->getResult(0)).begin(), shapeOf(op->getResult(0)).end());
    else
      return;
    if (shape.empty())
      return;
    auto g = std::make_unique<Group>();
    g->shape = shape;
    g->first = position[op];
    if (!fits(*g, op))
      return;
    add(*g, op);
    groups.push_back(std::move(g));
  }

  void add(Group &g, Operation *op) {
    g.ops.push_back(op);
    g.members.insert(op);
    g.hasReduce |= isa<nt::ReduceOp>(op);
    owner[op] = &g;
  }

  void outline(Group &g);

  Block &block;
  DenseMap<Operation *, int64_t> position;
  DenseMap<Operation *, Group *> owner;
  std::vector<std::unique_ptr<Group>> groups;
};

void Fuser::outline(Group &g) {
  llvm::SetVector<Value> inputs, results;
  for (Operation *op : g.ops) {
    for (Value v : op->getOperands())
      if (!g.members.contains(v.getDefiningOp()) && !isSplatConstant(v))
        inputs.insert(v);
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (!g.members.contains(user))
          results.insert(r);
  }
  // After the last member and the last input's definition: an earlier group's outlining
  // may have moved either past the ops the group was formed from.
  Operation *last = g.ops.back();
  for (Operation *op : g.ops)
    if (last->isBeforeInBlock(op))
      last = op;
  for (Value in : inputs)
    if (Operation *def = in.getDefiningOp())
      if (def->getBlock() == last->getBlock() && last->isBeforeInBlock(def))
        last = def;
  OpBuilder b(last->getContext());
  b.setInsertionPointAfter(last);
  SmallVector<Type> resultTypes;
  for (Value r : results)
    resultTypes.push_back(r.getType());
  auto fusion = b.create<nt::FusionOp>(last->getLoc(), resultTypes, inputs.getArrayRef());
  Block *body = new Block();
  fusion.getBody().push_back(body);
  IRMapping map;
  for (Value in : inputs)
    map.map(in, body->addArgument(in.getType(), in.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  for (Operation *op : g.ops)
    for (Value v : op->getOperands())
      if (isSplatConstant(v) && !map.contains(v))
        map.map(v, inner.clone(*v.getDefiningOp())->getResult(0));
  for (Operation *op : g.ops)
    inner.clone(*op, map);
  SmallVector<Value> yielded;
  for (Value r : results)
    yielded.push_back(map.lookup(r));
  inner.create<nt::YieldOp>(last->getLoc(), yielded);

  // Users of the results that sit between the group's ops move after the fusion.
  SmallVector<Operation *> toMove;
  llvm::SmallPtrSet<Operation *, 16> tainted;
  for (Operation *op = g.ops.front()->getNextNode(); op && op != fusion; op = op->getNextNode()) {
    if (g.members.contains(op))
      continue;
    bool dependent = llvm::any_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && (g.members.contains(def) || tainted.contains(def));
    });
    if (dependent) {
      tainted.insert(op);
      toMove.push_back(op);
    }
  }
  Operation *anchor = fusion;
  for (Operation *op : toMove) {
    op->moveAfter(anchor);
    anchor = op;
  }
  for (auto [r, v] : llvm::zip(results, fusion.getResults()))
    Value(r).replaceAllUsesWith(v);
  for (Operation *op : llvm::reverse(g.ops))
    op->erase();
}

/// `s` without its leading unit dims.
ArrayRef<int64_t> dropLeadingUnits(ArrayRef<int64_t> s) {
  while (!s.empty() && s.front() == 1)
    s = s.drop_front();
  return s;
}

/// The reshape defining `v` if it only adds leading unit dims ([M, N] -> [1, M, N]).
nt::ReshapeOp unitReshape(Value v) {
  auto r = v.getDefiningOp<nt::ReshapeOp>();
  if (!r)
    return {};
  ArrayRef<int64_t> in = shapeOf(r.getInput()), out = shapeOf(r.getResult());
  return in.size() < out.size() && dropLeadingUnits(in) == dropLeadingUnits(out)
             ? r
             : nt::ReshapeOp();
}

/// elementwise(reshape(x), y) -> reshape(elementwise(x, y)) when the reshape only adds
/// leading unit dims (a batch of 1 viewed with its dim, as models do after each linear
/// layer) and y broadcasts to x: the reshapes sink to where the shapes really change and
/// cancel in pairs, so the elementwise chains they split (a matmul's bias add and the GELU
/// after it) fuse. Each rewrite moves a reshape past one op, so the rewriting ends.
struct SinkUnitReshape : RewritePattern {
  explicit SinkUnitReshape(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<nt::UnaryOp, nt::BinaryOp, nt::CastOp>(op))
      return failure();
    ArrayRef<int64_t> result = shapeOf(op->getResult(0));
    std::optional<ArrayRef<int64_t>> source;
    for (Value v : op->getOperands())
      if (nt::ReshapeOp r = unitReshape(v); r && shapeOf(v) == result && !source)
        source = shapeOf(r.getInput());
    if (!source)
      return failure();
    auto sunkReshape = [&](Value v) {
      nt::ReshapeOp r = unitReshape(v);
      return r && shapeOf(v) == result && shapeOf(r.getInput()) == *source ? r : nt::ReshapeOp();
    };
    auto broadcasts = [&](Value v) {
      return shapeOf(v).size() <= source->size() && nt::isBroadcastableTo(shapeOf(v), *source);
    };
    // A full operand of the original shape would need a reshape of its own: the chain
    // stays as it is (a reshaped residual would split a layer norm's fusion from its add).
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      if (nt::ReshapeOp r = sunkReshape(v))
        operands.push_back(r.getInput());
      else if (broadcasts(v))
        operands.push_back(v);
      else
        return failure();
    }
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Operation *sunk = rewriter.clone(*op);
    sunk->setOperands(operands);
    sunk->getResult(0).setType(RankedTensorType::get(*source, type.getElementType()));
    rewriter.replaceOpWithNewOp<nt::ReshapeOp>(op, type, sunk->getResult(0));
    return success();
  }
};

struct NeuronFuseElementwisePass : impl::NeuronFuseElementwiseBase<NeuronFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SinkUnitReshape>(&getContext());
    // Not converging within the driver's limit leaves valid IR (fewer reshapes sunk).
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns));
    for (Block &block : getOperation().getBody())
      Fuser(block).run();
  }
};

} // namespace
} // namespace neuron::compiler
