// Loop nests over the rows of a tensor: every dimension but the last is a row
// dimension; blocks of at most 128 rows go on partitions, the last dimension on the
// free dimension.
//
// Adjacent row dimensions that every operand reads contiguously (or broadcasts) merge
// first. Of the merged dimensions, the outer ones become loops, one dimension is
// tiled, and the inner ones that fit in a block are covered whole, so that every block
// has the same rows relative to its start: the DMAs of a block are the same in every
// iteration, their offsets affine in the induction variables.
#pragma once

#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"

namespace neuron::compiler {

/// The rows of one block: dims[j] covers [first[j], first[j] + count[j]) of merged
/// row dimension j, every combination of them, in row-major order.
struct RowBlock {
  llvm::SmallVector<Offset, 4> first;
  llvm::SmallVector<int64_t, 4> count;
  int64_t rows() const;
};

class RowTiling {
public:
  /// `shape`: the iteration shape (the last dimension is the columns; rank 0 is [1]).
  /// `operandStrides`: the element strides (per dimension of `shape`, 0 to broadcast)
  /// through which each operand is read or written.
  RowTiling(llvm::ArrayRef<int64_t> shape,
            llvm::ArrayRef<llvm::SmallVector<int64_t>> operandStrides, int64_t partitions);

  /// Emits the loop nest, row blocks outside column tiles of at most `maxFree`;
  /// fn(block, first column, columns) emits one tile.
  void emit(TileEmitter &e, mlir::Location loc, int64_t maxFree,
            llvm::function_ref<void(const RowBlock &, const Offset &col0, int64_t cols)> fn)
      const;

  /// Emits the loop nest over whole rows (one column tile of all `columns()`), `group`
  /// full row blocks per iteration of the tiled dimension's loop: fn(blocks) emits them
  /// together (interleaved, so that in-order engine queues overlap the blocks' dependence
  /// chains). The blocks left over run one per iteration, a partial block last.
  void emitGroups(TileEmitter &e, mlir::Location loc, int64_t group,
                  llvm::function_ref<void(llvm::ArrayRef<RowBlock>)> fn) const;

  /// Strides of operand `i` over the merged row dimensions, then the column stride.
  llvm::ArrayRef<int64_t> strides(size_t i) const { return merged[i]; }
  /// Merged row dimensions.
  llvm::ArrayRef<int64_t> rowDims() const { return dims; }
  int64_t columns() const { return cols; }
  /// Rows of the largest block.
  int64_t blockRows() const;
  /// The block of rows [first[d], first[d] + count[d]) of every original row dimension
  /// d (dimensions of `shape` but the last). Within each merged group of dimensions,
  /// all but the innermost must have count 1.
  RowBlock blockOf(llvm::ArrayRef<Offset> first, llvm::ArrayRef<int64_t> count) const;

private:
  llvm::SmallVector<int64_t, 4> dims;
  llvm::SmallVector<llvm::SmallVector<size_t>, 4> groups; // original dims of each merged dim
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<llvm::SmallVector<int64_t>, 4> merged;
  int64_t cols = 1, partitions;
  size_t tiledDim = 0; // dims before it are loops, after it whole
  int64_t perBlock = 1; // indices of the tiled dim per block
};

/// Loads rows `block` x columns [col0, col0 + cols) of an operand read through
/// `strides` (RowTiling::strides) at `base` into `tile` (partition = row in block
/// order): one DMA per run of evenly spaced rows.
void loadBlock(TileEmitter &e, mlir::Location loc, mlir::Value source, const Offset &base,
               llvm::ArrayRef<int64_t> strides, const RowBlock &block, const Offset &col0,
               int64_t cols, mlir::Value tile);
/// Stores `tile` into the same rows and columns of `target`, written through `strides`.
void storeBlock(TileEmitter &e, mlir::Location loc, mlir::Value tile, mlir::Value target,
                llvm::ArrayRef<int64_t> strides, const RowBlock &block, const Offset &col0,
                int64_t cols);

/// Copies HBM -> HBM the same rows and columns between two strided views: one DMA per
/// run of rows evenly spaced in both.
void copyBlock(TileEmitter &e, mlir::Location loc, mlir::Value source, int64_t sourceOffset,
               llvm::ArrayRef<int64_t> sourceStrides, mlir::Value target, int64_t targetOffset,
               llvm::ArrayRef<int64_t> targetStrides, const RowBlock &block, const Offset &col0,
               int64_t cols);

} // namespace neuron::compiler
