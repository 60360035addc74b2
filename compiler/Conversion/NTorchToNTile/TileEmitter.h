// Shared state and helpers for tiling ntorch ops: HBM buffers of tensors, tiles, DMAs.
#pragma once

#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/Target.h"

#include "mlir/IR/Builders.h"
#include "dialects/NTorch/IR/NTorchOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>

namespace neuron::compiler {

/// A [stride, size] pair of an access pattern.
struct Dim {
  int64_t stride, size;
};

class TileEmitter {
public:
  TileEmitter(mlir::OpBuilder &b, const runtime::Target &target) : b(b), target(target) {}

  mlir::OpBuilder &b;
  const runtime::Target &target;

  /// The HBM buffer that holds `tensor`.
  mlir::Value buffer(mlir::Value tensor) const { return buffers.lookup(tensor); }
  void setBuffer(mlir::Value tensor, mlir::Value buffer) { buffers[tensor] = buffer; }
  /// `tensor` must be written into `output` (a function output argument).
  void setOutput(mlir::Value tensor, mlir::Value output) { outputs.try_emplace(tensor, output); }
  /// A new HBM buffer for `tensor` (its output argument when it is returned).
  mlir::Value createResultBuffer(mlir::Value tensor, mlir::Location loc);

  /// A fresh SBUF or PSUM tile [partitions, free].
  mlir::Value allocTile(mlir::Location loc, int64_t partitions, int64_t free,
                        mlir::Type elementType, ntile::MemSpace space);
  ntile::AccessPatternAttr pattern(int64_t offset, llvm::ArrayRef<Dim> dims);
  void dma(mlir::Location loc, mlir::Value source, ntile::AccessPatternAttr sourceAp,
           mlir::Value target, ntile::AccessPatternAttr targetAp);

  /// Largest free size of an elementwise tile for elements of `bytes` bytes.
  int64_t maxTileFree(int64_t bytes) const;

  /// Visits the result of shape `shape` as [rows, cols] (cols = last dim) in
  /// tiles of at most 128 rows and `maxFree` cols: fn(row0, rows, col0, cols).
  void forEachTile(llvm::ArrayRef<int64_t> shape, int64_t maxFree,
                   const std::function<void(int64_t, int64_t, int64_t, int64_t)> &fn);

  /// Loads rows [row0, row0+rows) x cols [col0, col0+cols) of a tensor read through
  /// `strides` (element strides of the source per result dimension, 0 to broadcast)
  /// into `tile` (partition = row). Emits one DMA per run of evenly spaced rows.
  void loadRows(mlir::Location loc, mlir::Value source, int64_t sourceOffset,
                llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> shape, int64_t row0,
                int64_t rows, int64_t col0, int64_t cols, mlir::Value tile);
  /// Stores `tile` into rows/cols of the contiguous tensor `target` of `shape`.
  void storeRows(mlir::Location loc, mlir::Value tile, mlir::Value target,
                 llvm::ArrayRef<int64_t> shape, int64_t row0, int64_t rows, int64_t col0,
                 int64_t cols);
  /// Copies HBM -> HBM: target (contiguous, `shape`) = source read through `strides`.
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
  /// A new HBM buffer of `type`.
  mlir::Value allocHbm(mlir::Location loc, mlir::RankedTensorType type);

  /// Ops lowered ahead of their turn (a fusion emitted as a matmul's epilogue).
  void markLowered(mlir::Operation *op) { loweredEarly.insert(op); }
  bool isLowered(mlir::Operation *op) const { return loweredEarly.contains(op); }

private:
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::DenseMap<mlir::Value, mlir::Value> outputs;
  llvm::DenseSet<mlir::Operation *> loweredEarly;
};

/// A fusion that consumes a matmul's result tile by tile, straight from PSUM.
struct MatmulEpilogue {
  /// Emits the fusion for output rows/cols given the matmul's result tile.
  std::function<mlir::LogicalResult(int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                    mlir::Value tile)>
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

/// The epilogue fusion of `matmul`, when its only user is a fusion over its result
/// whose other operands exist already; marks the fusion as lowered.
std::optional<MatmulEpilogue> matchMatmulEpilogue(TileEmitter &e, ntorch::MatmulOp matmul);

// Per-category lowerings; each returns failure after emitting an error.
mlir::LogicalResult lowerMatmul(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerElementwise(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerDataMovement(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerReduction(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerWindow(TileEmitter &e, mlir::Operation *op);
mlir::LogicalResult lowerFusion(TileEmitter &e, mlir::Operation *op);

} // namespace neuron::compiler
