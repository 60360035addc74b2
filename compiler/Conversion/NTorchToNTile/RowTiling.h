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

/// The rows of one block: dims[j] covers first[j], first[j] + step[j], ... (count[j]
/// indices) of merged row dimension j, every combination of them, in row-major order.
/// `step` is empty when every step is 1; a slot of a row-packed group (emitGroups) steps
/// by the rows packed per partition.
struct RowBlock {
  llvm::SmallVector<Offset, 4> first;
  llvm::SmallVector<int64_t, 4> count;
  llvm::SmallVector<int64_t, 4> step;
  int64_t rows() const;
  int64_t stepOf(size_t d) const { return step.empty() ? 1 : step[d]; }
  /// Rows packed per partition (the step of the innermost row dimension): > 1 in a slot of
  /// a row-packed group.
  int64_t packed() const { return step.empty() ? 1 : step.back(); }
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
  ///
  /// Row-packed (`pack` > 1, where packable()): first, groups of `pack` slots cover
  /// partitions * pack consecutive rows, partition p holding rows p * pack ... p * pack +
  /// pack - 1 (contiguous in memory for an operand whose rows are: one DMA of pack rows per
  /// partition, loadPacked / storePacked); slot j is the block of rows j, j + pack, ...
  /// (RowBlock::step). The rows left over then go as above.
  void emitGroups(TileEmitter &e, mlir::Location loc, int64_t group,
                  llvm::function_ref<void(llvm::ArrayRef<RowBlock>)> fn,
                  int64_t pack = 1) const;
  /// Whether emitGroups can pack rows: the tiled dimension is the innermost row dimension
  /// and its blocks fill the partitions.
  bool packable() const { return tiledDim + 1 == dims.size() && perBlock == partitions; }
  /// Rows of the tiled (innermost) dimension, where packable().
  int64_t tiledRows() const { return dims[tiledDim]; }

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

/// Whether an operand read through `strides` has contiguous rows along the innermost row
/// dimension (a row-packed slot group can move it with one DMA per partition).
bool packedContiguous(llvm::ArrayRef<int64_t> strides, int64_t cols);
/// Loads the rows of a row-packed slot group (slot 0 is `slot0`, `pack` slots) of an operand
/// with packedContiguous rows into `tile` [partitions, pack * cols]: one DMA, pack rows per
/// partition.
void loadPacked(TileEmitter &e, mlir::Location loc, mlir::Value source, const Offset &base,
                llvm::ArrayRef<int64_t> strides, const RowBlock &slot0, int64_t cols,
                mlir::Value tile);
/// Stores such a tile into the same rows of `target`, written through `strides`.
void storePacked(TileEmitter &e, mlir::Location loc, mlir::Value tile, mlir::Value target,
                 llvm::ArrayRef<int64_t> strides, const RowBlock &slot0, int64_t cols);

/// Copies HBM -> HBM the same rows and columns between two strided views: one DMA per
/// run of rows evenly spaced in both.
void copyBlock(TileEmitter &e, mlir::Location loc, mlir::Value source, int64_t sourceOffset,
               llvm::ArrayRef<int64_t> sourceStrides, mlir::Value target, int64_t targetOffset,
               llvm::ArrayRef<int64_t> targetStrides, const RowBlock &block, const Offset &col0,
               int64_t cols);

} // namespace neuron::compiler
