// Importers of strided views and their scatters: as_strided, unfold, the *_copy views,
// slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter. A window of the
// contiguous input is an element offset and one element stride per window dim; reads are
// ntorch.as_strided, writes ntorch.insert_strided.
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

static std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Element strides of a contiguous tensor of `shape`.
static SmallVector<int64_t> contiguous(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

namespace {
/// A window of a contiguous tensor: result[i...] = flat(x)[offset + sum i[d] * strides[d]].
struct Window {
  SmallVector<int64_t> shape, strides;
  int64_t offset = 0;
};
} // namespace

/// An ImportError unless every address of `w` is inside `elements` elements.
static void requireInside(const Window &w, int64_t elements, const std::string &op) {
  if (llvm::any_of(w.strides, [](int64_t s) { return s < 0; }) || w.offset < 0)
    throw ImportError(op + ": negative stride or offset (strides " + shapeText(w.strides) +
                      ", offset " + std::to_string(w.offset) + ")");
  if (llvm::is_contained(w.shape, 0))
    return;
  int64_t last = w.offset;
  for (auto [size, stride] : llvm::zip(w.shape, w.strides))
    last += (size - 1) * stride;
  if (last >= elements)
    throw ImportError(op + ": size " + shapeText(w.shape) + ", stride " + shapeText(w.strides) +
                      " and offset " + std::to_string(w.offset) + " reach element " +
                      std::to_string(last) + " of an input of " + std::to_string(elements) +
                      " elements");
}

static Value read(NodeContext &ctx, Value x, const Window &w) {
  auto t = RankedTensorType::get(w.shape, typeOf(x).getElementType());
  return ctx.b.create<nt::AsStridedOp>(ctx.loc, t, x, w.offset, w.strides);
}

/// x with the window `w` replaced by src (of the window's shape, cast to x's dtype).
static Value write(NodeContext &ctx, Value x, Value src, const Window &w, const std::string &op) {
  if (typeOf(src).getShape() != ArrayRef<int64_t>(w.shape))
    throw ImportError(op + ": src has shape " + shapeText(typeOf(src).getShape()) +
                      ", the window has shape " + shapeText(w.shape));
  src = ctx.castTo(src, typeOf(x).getElementType());
  return ctx.b.create<nt::InsertStridedOp>(ctx.loc, x.getType(), x, src, w.offset, w.strides);
}

/// The window of slice(x, dim, start, end, step), with Python's clamping.
static Window sliceWindow(NodeContext &ctx, Value x, size_t first, const std::string &op) {
  auto t = typeOf(x);
  if (t.getRank() < 1)
    throw ImportError(op + ": the input must have at least one dim");
  int64_t dim = ctx.dim(ctx.integer(first, "dim", 0), t.getRank()), n = t.getDimSize(dim);
  int64_t start = ctx.integer(first + 1, "start", 0), end = ctx.integer(first + 2, "end", n);
  int64_t step = ctx.integer(first + 3, "step", 1);
  if (step < 1)
    throw ImportError(op + ": step must be positive, got " + std::to_string(step));
  start = std::clamp<int64_t>(start < 0 ? start + n : start, 0, n);
  end = std::clamp<int64_t>(end < 0 ? end + n : end, 0, n);
  int64_t length = end > start ? (end - start + step - 1) / step : 0;
  Window w{SmallVector<int64_t>(t.getShape()), contiguous(t.getShape()), 0};
  w.offset = length ? start * w.strides[dim] : 0;
  w.shape[dim] = length;
  w.strides[dim] *= step;
  return w;
}

/// The window of select(x, dim, index).
static Window selectWindow(NodeContext &ctx, Value x, size_t first, const std::string &op) {
  auto t = typeOf(x);
  if (t.getRank() < 1)
    throw ImportError(op + ": the input must have at least one dim");
  int64_t dim = ctx.dim(ctx.integer(first, "dim", 0), t.getRank()), n = t.getDimSize(dim);
  int64_t index = ctx.integer(first + 1, "index", 0);
  if (index < -n || index >= n)
    throw ImportError(op + ": index " + std::to_string(index) + " is out of range for dim " +
                      std::to_string(dim) + " of size " + std::to_string(n));
  SmallVector<int64_t> strides = contiguous(t.getShape());
  Window w{SmallVector<int64_t>(t.getShape()), strides, (index < 0 ? index + n : index) * strides[dim]};
  w.shape.erase(w.shape.begin() + dim);
  w.strides.erase(w.strides.begin() + dim);
  return w;
}

/// The window of diagonal(x, offset, dim1, dim2): the other dims, then the diagonal.
static Window diagonalWindow(NodeContext &ctx, Value x, size_t first, const std::string &op) {
  auto t = typeOf(x);
  int64_t rank = t.getRank();
  if (rank < 2)
    throw ImportError(op + ": the input must have at least two dims");
  int64_t offset = ctx.integer(first, "offset", 0);
  int64_t d1 = ctx.dim(ctx.integer(first + 1, "dim1", 0), rank);
  int64_t d2 = ctx.dim(ctx.integer(first + 2, "dim2", 1), rank);
  if (d1 == d2)
    throw ImportError(op + ": dim1 and dim2 are both " + std::to_string(d1));
  SmallVector<int64_t> strides = contiguous(t.getShape());
  int64_t rows = t.getDimSize(d1), cols = t.getDimSize(d2);
  int64_t length = std::max<int64_t>(
      0, std::min(rows + std::min<int64_t>(offset, 0), cols - std::max<int64_t>(offset, 0)));
  Window w;
  for (int64_t d = 0; d < rank; ++d)
    if (d != d1 && d != d2) {
      w.shape.push_back(t.getDimSize(d));
      w.strides.push_back(strides[d]);
    }
  w.shape.push_back(length);
  w.strides.push_back(strides[d1] + strides[d2]);
  if (length > 0)
    w.offset = offset >= 0 ? offset * strides[d2] : -offset * strides[d1];
  return w;
}

/// The window of as_strided(x, size, stride, storage_offset), checked against x.
static Window asStridedWindow(NodeContext &ctx, Value x, size_t first, const std::string &op) {
  Window w{ctx.intList(first, "size"), ctx.intList(first + 1, "stride"),
           ctx.integer(first + 2, "storage_offset", 0)};
  if (w.shape.size() != w.strides.size())
    throw ImportError(op + ": size " + shapeText(w.shape) + " and stride " +
                      shapeText(w.strides) + " differ in length");
  requireInside(w, typeOf(x).getNumElements(), op);
  return w;
}

Values sliceScatter(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return {write(ctx, x, ctx.tensor(1), sliceWindow(ctx, x, 2, "slice_scatter"), "slice_scatter")};
}

Values selectScatter(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return {write(ctx, x, ctx.tensor(1), selectWindow(ctx, x, 2, "select_scatter"),
                "select_scatter")};
}

Values diagonalScatter(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return {write(ctx, x, ctx.tensor(1), diagonalWindow(ctx, x, 2, "diagonal_scatter"),
                "diagonal_scatter")};
}

Values asStridedScatter(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return {write(ctx, x, ctx.tensor(1), asStridedWindow(ctx, x, 2, "as_strided_scatter"),
                "as_strided_scatter")};
}

Values asStrided(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return {read(ctx, x, asStridedWindow(ctx, x, 1, "as_strided"))};
}

/// unfold(x, dim, size, step): windows of `size` every `step` along dim, as a new last dim.
/// A 0-d input is one element: [size] (size 0 or 1), as the unfold of [1] viewed as [size].
Values unfold(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  if (typeOf(x).getRank() == 0) {
    ctx.dim(ctx.integer(1, "dimension", 0), 1);
    int64_t size = ctx.integer(2, "size", 1), step = ctx.integer(3, "step", 1);
    if (size < 0 || size > 1 || step < 1)
      throw ImportError("unfold of a 0-d input: size " + std::to_string(size) + " must be 0 or 1 "
                        "and step " + std::to_string(step) + " positive");
    auto type = RankedTensorType::get({size}, typeOf(x).getElementType());
    return {size ? ctx.reshape(x, {1}) : ctx.splat(type, 0.0)};
  }
  auto t = typeOf(x);
  int64_t dim = ctx.dim(ctx.integer(1, "dimension", 0), t.getRank()), n = t.getDimSize(dim);
  int64_t size = ctx.integer(2, "size", 1), step = ctx.integer(3, "step", 1);
  if (size < 0 || size > n || step < 1)
    throw ImportError("unfold: size " + std::to_string(size) + " and step " +
                      std::to_string(step) + " do not fit dim " + std::to_string(dim) +
                      " of size " + std::to_string(n));
  Window w{SmallVector<int64_t>(t.getShape()), contiguous(t.getShape()), 0};
  w.shape[dim] = (n - size) / step + 1;
  w.shape.push_back(size);
  w.strides.push_back(w.strides[dim]);
  w.strides[dim] *= step;
  return {read(ctx, x, w)};
}

/// narrow_copy(x, dim, start, length): slice(x, dim, start, start + length).
Values narrowCopy(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  auto t = typeOf(x);
  if (t.getRank() < 1)
    throw ImportError("narrow_copy: the input must have at least one dim");
  int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), t.getRank()), n = t.getDimSize(dim);
  int64_t start = ctx.integer(2, "start", 0), length = ctx.integer(3, "length", 0);
  if (start < 0)
    start += n;
  if (start < 0 || length < 0 || start + length > n)
    throw ImportError("narrow_copy: start " + std::to_string(ctx.integer(2, "start", 0)) +
                      " and length " + std::to_string(length) + " do not fit dim " +
                      std::to_string(dim) + " of size " + std::to_string(n));
  Window w{SmallVector<int64_t>(t.getShape()), contiguous(t.getShape()), 0};
  w.shape[dim] = length;
  w.offset = length ? start * w.strides[dim] : 0;
  return {read(ctx, x, w)};
}

/// unbind_copy(x, dim): one select per index.
Values unbindCopy(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  auto t = typeOf(x);
  if (t.getRank() < 1)
    throw ImportError("unbind_copy: the input must have at least one dim");
  int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), t.getRank());
  if ((int64_t)ctx.numResults() != t.getDimSize(dim))
    throw ImportError("unbind_copy: " + std::to_string(ctx.numResults()) +
                      " outputs for dim " + std::to_string(dim) + " of size " +
                      std::to_string(t.getDimSize(dim)));
  SmallVector<int64_t> strides = contiguous(t.getShape());
  Values parts;
  for (int64_t i = 0; i < t.getDimSize(dim); ++i) {
    Window w{SmallVector<int64_t>(t.getShape()), strides, i * strides[dim]};
    w.shape.erase(w.shape.begin() + dim);
    w.strides.erase(w.strides.begin() + dim);
    parts.push_back(read(ctx, x, w));
  }
  return parts;
}

} // namespace neuron::compiler::aten
