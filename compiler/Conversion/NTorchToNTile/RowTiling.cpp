// Loop nests over row blocks (see RowTiling.h).
#include "compiler/Conversion/NTorchToNTile/RowTiling.h"

using namespace mlir;

namespace neuron::compiler {

int64_t RowBlock::rows() const {
  int64_t n = 1;
  for (int64_t c : count)
    n *= c;
  return n;
}

RowTiling::RowTiling(ArrayRef<int64_t> shape, ArrayRef<SmallVector<int64_t>> operandStrides,
                     int64_t partitions)
    : partitions(partitions) {
  SmallVector<int64_t> s = shape.empty() ? SmallVector<int64_t>{1} : SmallVector<int64_t>(shape);
  this->shape = s;
  cols = s.back();
  size_t n = s.size();
  auto stride = [&](size_t i, size_t d) {
    return operandStrides[i].empty() ? int64_t(0) : operandStrides[i][d];
  };
  merged.resize(operandStrides.size());
  for (size_t d = 0; d + 1 < n; ++d) {
    if (s[d] == 1)
      continue;
    // Merge into the previous dimension when every operand steps through both as one.
    bool mergeable = !dims.empty();
    for (size_t i = 0; mergeable && i < operandStrides.size(); ++i)
      mergeable = merged[i].back() == stride(i, d) * s[d];
    if (mergeable) {
      dims.back() *= s[d];
      groups.back().push_back(d);
      for (size_t i = 0; i < operandStrides.size(); ++i)
        merged[i].back() = stride(i, d);
      continue;
    }
    dims.push_back(s[d]);
    groups.push_back({d});
    for (size_t i = 0; i < operandStrides.size(); ++i)
      merged[i].push_back(stride(i, d));
  }
  if (dims.empty()) {
    dims.push_back(1);
    groups.push_back({});
    for (auto &m : merged)
      m.push_back(0);
  }
  for (size_t i = 0; i < operandStrides.size(); ++i)
    merged[i].push_back(stride(i, n - 1));
  // The outermost dimension whose inner dimensions fit in a block gets tiled.
  int64_t inner = 1;
  for (int64_t d = dims.size() - 1; d >= 0; --d) {
    tiledDim = d;
    if (d > 0 && inner * dims[d] <= partitions) {
      inner *= dims[d];
      continue;
    }
    break;
  }
  if (inner * dims[tiledDim] <= partitions)
    perBlock = dims[tiledDim];
  else
    perBlock = std::max<int64_t>(1, partitions / inner);
}

int64_t RowTiling::blockRows() const {
  int64_t n = perBlock;
  for (size_t d = tiledDim + 1; d < dims.size(); ++d)
    n *= dims[d];
  return n;
}

RowBlock RowTiling::blockOf(ArrayRef<Offset> first, ArrayRef<int64_t> count) const {
  RowBlock block;
  for (const SmallVector<size_t> &group : groups) {
    Offset at(0);
    int64_t n = 1;
    for (size_t d : group) {
      at = at * shape[d] + first[d];
      n = count[d]; // the outer dims of a group have count 1
    }
    block.first.push_back(at);
    block.count.push_back(group.empty() ? 1 : n);
  }
  return block;
}

void RowTiling::emit(TileEmitter &e, Location loc, int64_t maxFree,
                     function_ref<void(const RowBlock &, const Offset &, int64_t)> fn) const {
  RowBlock block;
  block.first.assign(dims.size(), Offset(0));
  block.count.assign(dims.begin(), dims.end());
  Offset col0;
  int64_t width = cols;
  // Emits the row loops from dimension d inward, then `body`.
  std::function<void(size_t, function_ref<void()>)> rowsFrom = [&](size_t d,
                                                                 function_ref<void()> body) {
    if (d < tiledDim) {
      e.loop(loc, dims[d], [&](const Offset &iv) {
        block.first[d] = iv;
        block.count[d] = 1;
        rowsFrom(d + 1, body);
      });
      return;
    }
    e.tiled(loc, dims[d], perBlock, [&](const Offset &index, int64_t size) {
      block.first[d] = index * perBlock;
      block.count[d] = size;
      body();
    });
  };
  auto columnLoop = [&](function_ref<void()> body) {
    e.tiled(loc, cols, maxFree, [&](const Offset &index, int64_t size) {
      col0 = index * maxFree;
      width = size;
      body();
    });
  };
  rowsFrom(0, [&] { columnLoop([&] { fn(block, col0, width); }); });
}

void RowTiling::emitGroups(TileEmitter &e, Location loc, int64_t group,
                           function_ref<void(ArrayRef<RowBlock>)> fn, int64_t pack) const {
  if (llvm::is_contained(dims, 0) || perBlock <= 0)
    return; // an empty tensor: nothing to move or compute
  if (pack > 1 && !packable())
    pack = 1;
  RowBlock block;
  block.first.assign(dims.size(), Offset(0));
  block.count.assign(dims.begin(), dims.end());
  std::function<void(size_t)> rowsFrom = [&](size_t d) {
    if (d < tiledDim) {
      e.loop(loc, dims[d], [&](const Offset &iv) {
        block.first[d] = iv;
        block.count[d] = 1;
        rowsFrom(d + 1);
      });
      return;
    }
    // Row-packed groups first: partitions * pack rows each.
    int64_t super = perBlock * pack, packedGroups = pack > 1 ? dims[d] / super : 0;
    if (packedGroups > 0)
      e.loop(loc, packedGroups, [&](const Offset &iv) {
        SmallVector<RowBlock, 4> slots;
        for (int64_t j = 0; j < pack; ++j) {
          RowBlock b = block;
          b.first[d] = iv * super + Offset(j);
          b.count[d] = perBlock;
          b.step.assign(dims.size(), 1);
          b.step[d] = pack;
          slots.push_back(b);
        }
        fn(slots);
      });
    int64_t start = packedGroups * super;
    auto blockAt = [&](const Offset &index, int64_t size) {
      RowBlock b = block;
      b.first[d] = index * perBlock + Offset(start);
      b.count[d] = size;
      return b;
    };
    int64_t rest = dims[d] - start;
    int64_t full = rest / perBlock, groups = group > 1 ? full / group : 0;
    if (groups > 0)
      e.loop(loc, groups, [&](const Offset &iv) {
        SmallVector<RowBlock, 2> blocks;
        for (int64_t j = 0; j < group; ++j)
          blocks.push_back(blockAt(iv * group + Offset(j), perBlock));
        fn(blocks);
      });
    int64_t done = groups * group;
    if (full > done)
      e.loop(loc, full - done,
             [&](const Offset &iv) { fn({blockAt(iv + Offset(done), perBlock)}); });
    if (rest % perBlock)
      fn({blockAt(Offset(full), rest % perBlock)});
  };
  rowsFrom(0);
}

/// Element offsets of the rows of `block` relative to its first row, in row-major order.
static SmallVector<int64_t> relativeRows(ArrayRef<int64_t> strides, const RowBlock &block) {
  SmallVector<int64_t> offsets = {0};
  for (size_t d = 0; d < block.count.size(); ++d) {
    SmallVector<int64_t> next;
    for (int64_t base : offsets)
      for (int64_t i = 0; i < block.count[d]; ++i)
        next.push_back(base + i * block.stepOf(d) * strides[d]);
    offsets = std::move(next);
  }
  return offsets;
}

/// The element offset of the block's first row and column `col0`.
static Offset blockBase(const Offset &base, ArrayRef<int64_t> strides, const RowBlock &block,
                        const Offset &col0) {
  Offset at = base + col0 * strides.back();
  for (size_t d = 0; d < block.first.size(); ++d)
    at = at + block.first[d] * strides[d];
  return at;
}

/// Calls fn(first row, rows, step) for maximal runs of evenly spaced offsets.
static void forEachRun(ArrayRef<int64_t> offsets,
                       function_ref<void(int64_t, int64_t, int64_t)> fn) {
  size_t i = 0;
  while (i < offsets.size()) {
    size_t j = i + 1;
    int64_t step = j < offsets.size() ? offsets[j] - offsets[i] : 1;
    while (j < offsets.size() && offsets[j] - offsets[j - 1] == step)
      ++j;
    fn(i, j - i, step);
    i = j;
  }
}

void loadBlock(TileEmitter &e, Location loc, Value source, const Offset &base,
               ArrayRef<int64_t> strides, const RowBlock &block, const Offset &col0,
               int64_t cols, Value tile) {
  Offset at = blockBase(base, strides, block, col0);
  SmallVector<int64_t> rows = relativeRows(strides, block);
  forEachRun(rows, [&](int64_t first, int64_t len, int64_t step) {
    e.dma(loc, source, e.pattern(at + rows[first], {{step, len}, {strides.back(), cols}}), tile,
          e.pattern(first * cols, {{cols, len}, {1, cols}}));
  });
}

void storeBlock(TileEmitter &e, Location loc, Value tile, Value target,
                ArrayRef<int64_t> strides, const RowBlock &block, const Offset &col0,
                int64_t cols) {
  Offset at = blockBase(Offset(0), strides, block, col0);
  SmallVector<int64_t> rows = relativeRows(strides, block);
  forEachRun(rows, [&](int64_t first, int64_t len, int64_t step) {
    e.dma(loc, tile, e.pattern(first * cols, {{cols, len}, {1, cols}}), target,
          e.pattern(at + rows[first], {{step, len}, {strides.back(), cols}}));
  });
}

bool packedContiguous(ArrayRef<int64_t> strides, int64_t cols) {
  return strides.size() >= 2 && strides.back() == 1 && strides[strides.size() - 2] == cols;
}

void loadPacked(TileEmitter &e, Location loc, Value source, const Offset &base,
                ArrayRef<int64_t> strides, const RowBlock &slot0, int64_t cols, Value tile) {
  int64_t run = slot0.packed() * cols, partitions = slot0.count.back();
  e.dma(loc, source, e.pattern(blockBase(base, strides, slot0, 0), {{run, partitions}, {1, run}}),
        tile, e.pattern(0, {{run, partitions}, {1, run}}));
}

void storePacked(TileEmitter &e, Location loc, Value tile, Value target,
                 ArrayRef<int64_t> strides, const RowBlock &slot0, int64_t cols) {
  int64_t run = slot0.packed() * cols, partitions = slot0.count.back();
  e.dma(loc, tile, e.pattern(0, {{run, partitions}, {1, run}}), target,
        e.pattern(blockBase(Offset(0), strides, slot0, 0), {{run, partitions}, {1, run}}));
}

void copyBlock(TileEmitter &e, Location loc, Value source, int64_t sourceOffset,
               ArrayRef<int64_t> sourceStrides, Value target, int64_t targetOffset,
               ArrayRef<int64_t> targetStrides, const RowBlock &block, const Offset &col0,
               int64_t cols) {
  Offset from = blockBase(sourceOffset, sourceStrides, block, col0);
  Offset to = blockBase(targetOffset, targetStrides, block, col0);
  SmallVector<int64_t> so = relativeRows(sourceStrides, block);
  SmallVector<int64_t> to_ = relativeRows(targetStrides, block);
  size_t i = 0;
  while (i < so.size()) {
    size_t j = i + 1;
    int64_t sStep = j < so.size() ? so[j] - so[i] : 1, tStep = j < to_.size() ? to_[j] - to_[i] : 1;
    while (j < so.size() && so[j] - so[j - 1] == sStep && to_[j] - to_[j - 1] == tStep)
      ++j;
    int64_t len = j - i;
    e.dma(loc, source, e.pattern(from + so[i], {{sStep, len}, {sourceStrides.back(), cols}}),
          target, e.pattern(to + to_[i], {{tStep, len}, {targetStrides.back(), cols}}));
    i = j;
  }
}

} // namespace neuron::compiler
