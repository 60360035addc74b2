// Shared state and helpers for tiling ntorch ops: HBM buffers of tensors, tiles, DMAs.
#pragma once

#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/program/Target.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "dialects/NTorch/IR/NTorchOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>

namespace neuron::compiler {

/// An element offset affine in the induction variables of the enclosing ntile.loop
/// ops: base + flat (level, coef, modulus) terms.
struct Offset {
  int64_t base = 0;
  llvm::SmallVector<int64_t, 6> terms;
  Offset(int64_t base = 0) : base(base) {}
  Offset operator+(const Offset &o) const {
    Offset r = *this;
    r.base += o.base;
    r.terms.append(o.terms.begin(), o.terms.end());
    return r;
  }
  Offset operator*(int64_t k) const {
    Offset r(base * k);
    for (size_t i = 0; i < terms.size(); i += 3)
      r.terms.append({terms[i], terms[i + 1] * k, terms[i + 2]});
    return r;
  }
};

/// A [stride, size] pair of an access pattern.
struct Dim {
  int64_t stride, size;
};

/// What the lowering of a function knows across its ops: the HBM buffer of every tensor,
/// the output arguments that returned tensors are written into, and the ops lowered ahead
/// of their turn (a fusion emitted as a matmul's epilogue).
struct TileState {
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::DenseMap<mlir::Value, mlir::Value> outputs;
  llvm::DenseSet<mlir::Operation *> loweredEarly;
};

/// Emits the tiles of one ntorch op at `b` (the conversion's rewriter).
class TileEmitter {
public:
  TileEmitter(mlir::ConversionPatternRewriter &b, const runtime::Target &target,
              TileState &state)
      : b(b), target(target), state(state) {}

  mlir::ConversionPatternRewriter &b;
  const runtime::Target &target;

  /// The HBM buffer that holds `tensor` (a tensor that an earlier op produced, or the
  /// converted function argument).
  mlir::Value buffer(mlir::Value tensor) const {
    if (mlir::Value buffer = state.buffers.lookup(tensor))
      return buffer;
    return b.getRemappedValue(tensor);
  }
  void setBuffer(mlir::Value tensor, mlir::Value buffer) { state.buffers[tensor] = buffer; }
  /// A new HBM buffer for `tensor` (its output argument when it is returned).
  mlir::Value createResultBuffer(mlir::Value tensor, mlir::Location loc);

  /// A fresh SBUF or PSUM tile [partitions, free].
  mlir::Value allocTile(mlir::Location loc, int64_t partitions, int64_t free,
                        mlir::Type elementType, ntile::MemSpace space);
  ntile::AccessPatternAttr pattern(const Offset &offset, llvm::ArrayRef<Dim> dims);

  /// Emits `body` inside an ntile.loop of `count` iterations (inline when count is 1,
  /// unless `keepSingle`: a software pipeline's steady state stays a loop nest, which
  /// neuron-assign-dma-queues gives its own queue pools), passing the induction variable;
  /// nothing when count is 0.
  void loop(mlir::Location loc, int64_t count, llvm::function_ref<void(const Offset &iv)> body,
            bool keepSingle = false);
  /// An accumulation over a nest of tiled dimensions ({extent, tile} each, outermost
  /// first): fn(tile index per dimension, tile size per dimension, first) runs for every
  /// combination, `first` only for the very first one, which is peeled off the loops.
  void accumulateOver(
      mlir::Location loc, llvm::ArrayRef<std::pair<int64_t, int64_t>> dims,
      llvm::function_ref<void(llvm::ArrayRef<Offset>, llvm::ArrayRef<int64_t>, bool)> fn,
      bool peelFirst = true);
  /// The same nest without peeling: fn(tile index per dimension, tile size per dimension).
  void forEachOver(mlir::Location loc, llvm::ArrayRef<std::pair<int64_t, int64_t>> dims,
                   llvm::function_ref<void(llvm::ArrayRef<Offset>, llvm::ArrayRef<int64_t>)> fn) {
    accumulateOver(
        loc, dims, [&](llvm::ArrayRef<Offset> i, llvm::ArrayRef<int64_t> n, bool) { fn(i, n); },
        /*peelFirst=*/false);
  }
  /// Covers [0, extent) in tiles of `tile`: a loop over the full tiles, then the rest:
  /// fn(tile index, size); the tile starts at index * tile.
  void tiled(mlir::Location loc, int64_t extent, int64_t tile,
             llvm::function_ref<void(const Offset &index, int64_t size)> fn);
  ntile::DmaOp dma(mlir::Location loc, mlir::Value source, ntile::AccessPatternAttr sourceAp,
                   mlir::Value target, ntile::AccessPatternAttr targetAp);

  /// Largest free size of an elementwise tile for elements of `bytes` bytes.
  int64_t maxTileFree(int64_t bytes) const;

  /// Copies HBM -> HBM: target (contiguous, `shape`) = source read through `strides`,
  /// as a loop nest over row blocks (RowTiling).
  void copyStrided(mlir::Location loc, mlir::Value source, int64_t sourceOffset,
                   llvm::ArrayRef<int64_t> strides, mlir::Value target,
                   llvm::ArrayRef<int64_t> shape);
  /// Copies HBM -> HBM between two strided views of the same `shape`.
  void copyStrided(mlir::Location loc, mlir::Value source, int64_t sourceOffset,
                   llvm::ArrayRef<int64_t> sourceStrides, mlir::Value target,
                   int64_t targetOffset, llvm::ArrayRef<int64_t> targetStrides,
                   llvm::ArrayRef<int64_t> shape);

  /// Writes `source` (contiguous, `shape`) into `target` (contiguous, `shape` grown by
  /// `low` and `high`), filling the border with `value`.
  void fillPadded(mlir::Location loc, mlir::Value source, llvm::ArrayRef<int64_t> shape,
                  mlir::Value target, llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
                  double value);
  /// An HBM buffer holding `value`, created outside any loop.
  mlir::Value constant(mlir::Location loc, mlir::DenseElementsAttr value);
  /// A new HBM buffer of `type`.
  mlir::Value allocHbm(mlir::Location loc, mlir::RankedTensorType type);

  /// `op` was lowered ahead of its turn (a fusion emitted as a matmul's epilogue): the
  /// conversion replaces it with its result buffers right after the current op.
  void markLowered(mlir::Operation *op) { state.loweredEarly.insert(op); }

private:
  TileState &state;
  int64_t loopDepth = 0;
};

/// A fusion that consumes a matmul's result tile by tile, straight from PSUM.
struct MatmulEpilogue {
  /// Emits the fusion for the output rows [first[d], first[d] + count[d]) of every row
  /// dimension d (batch, then M) and cols [col0, col0 + cols), given the matmul's
  /// result tile.
  std::function<mlir::LogicalResult(llvm::ArrayRef<Offset> first, llvm::ArrayRef<int64_t> count,
                                    const Offset &col0, int64_t cols, mlir::Value tile)>
      emit;
  /// Element type the fusion expects for the matmul result (PSUM is copied to it).
  mlir::Type elementType;
};


/// The value of a splat constant operand (any rank), if it is one.
std::optional<double> splatValue(mlir::Value v);
/// The engine operation of an ntorch function (names match by construction).
ActFunc toActFunc(ntorch::UnaryFn fn);
AluOp toAluOp(ntorch::BinaryFn fn);
AluOp toAluOp(ntorch::ReduceFn fn);

/// Row-major strides of a contiguous shape.
llvm::SmallVector<int64_t> contiguousStrides(llvm::ArrayRef<int64_t> shape);
/// Strides that read a contiguous tensor of `from` shape broadcast to `to`.
llvm::SmallVector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> from,
                                            llvm::ArrayRef<int64_t> to);

/// The epilogue of `matmul`: its only user, a fusion that neuron-fuse-matmul-epilogue
/// marked; marks the fusion as lowered.
std::optional<MatmulEpilogue> matchMatmulEpilogue(TileEmitter &e, ntorch::MatmulOp matmul);

// Per-category lowerings; each returns failure after emitting an error.
mlir::LogicalResult lowerMatmul(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerElementwise(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerDataMovement(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerReduction(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerWindow(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerFusion(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerScan(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerKernel(TileEmitter &e, mlir::Operation *op);
/// A permute that moves the innermost dim, through SBUF and nc_transpose; false (nothing
/// emitted) where it does not apply (Transpose.cpp).
bool lowerTransposingPermute(TileEmitter &e, ntorch::PermuteOp op);

} // namespace neuron::compiler
