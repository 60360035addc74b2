// Importers of ATen ops, one function per op family, grouped in files by category.
#pragma once

#include "compiler/Import/ImportContext.h"

namespace neuron::compiler::aten {

using Values = llvm::SmallVector<mlir::Value>;

// AtenElementwise.cpp
template <ntorch::UnaryFn Fn> Values unary(NodeContext &ctx) {
  return {ctx.b.create<ntorch::UnaryOp>(ctx.loc, ctx.resultType(), Fn, ctx.tensor(0))};
}
template <ntorch::BinaryFn Fn> Values binary(NodeContext &ctx);
template <ntorch::BinaryFn Fn> Values binaryWithAlpha(NodeContext &ctx);
Values gelu(NodeContext &ctx);
Values toCopy(NodeContext &ctx);
Values where(NodeContext &ctx);
Values clamp(NodeContext &ctx);
Values leakyRelu(NodeContext &ctx);
Values log1p(NodeContext &ctx);
Values expm1(NodeContext &ctx);
Values logicalNot(NodeContext &ctx);
Values hardtanh(NodeContext &ctx);
Values clampMin(NodeContext &ctx);
Values clampMax(NodeContext &ctx);
Values rsub(NodeContext &ctx);
Values powScalar(NodeContext &ctx);
Values fma(NodeContext &ctx);
Values copy(NodeContext &ctx);
Values truncOp(NodeContext &ctx);
Values floorOp(NodeContext &ctx);
Values ceilOp(NodeContext &ctx);
Values signOp(NodeContext &ctx);
Values roundOp(NodeContext &ctx);
Values roundDecimals(NodeContext &ctx);
Values exp2Op(NodeContext &ctx);
Values eluOp(NodeContext &ctx);
Values sinhOp(NodeContext &ctx);
Values coshOp(NodeContext &ctx);
Values tanOp(NodeContext &ctx);
Values log2Op(NodeContext &ctx);
Values log10Op(NodeContext &ctx);
Values atanhOp(NodeContext &ctx);
Values erfcOp(NodeContext &ctx);
Values varMean(NodeContext &ctx);
Values isNan(NodeContext &ctx);
Values isInf(NodeContext &ctx);
Values copySign(NodeContext &ctx);
Values divMode(NodeContext &ctx);
Values remainderOp(NodeContext &ctx);
Values fmodOp(NodeContext &ctx);

// AtenCollectives.cpp
Values allReduce(NodeContext &ctx);
Values allGather(NodeContext &ctx);
Values reduceScatter(NodeContext &ctx);
Values allToAll(NodeContext &ctx);
Values allReduceCoalesced(NodeContext &ctx);
Values allGatherCoalesced(NodeContext &ctx);
Values reduceScatterCoalesced(NodeContext &ctx);

// AtenRandom.cpp
Values rand(NodeContext &ctx);
Values uniformOp(NodeContext &ctx);
Values randn(NodeContext &ctx);
Values bernoulli(NodeContext &ctx);
Values nativeDropout(NodeContext &ctx);

// AtenLinalg.cpp
Values mm(NodeContext &ctx);
Values bmm(NodeContext &ctx);
Values addmm(NodeContext &ctx);
Values cumsum(NodeContext &ctx);
Values trilinear(NodeContext &ctx);

// AtenReductions.cpp
Values sum(NodeContext &ctx);
Values mean(NodeContext &ctx);
Values argmax(NodeContext &ctx);
Values argmin(NodeContext &ctx);
Values maxDim(NodeContext &ctx);
Values minDim(NodeContext &ctx);
Values amax(NodeContext &ctx);
Values amin(NodeContext &ctx);
Values any(NodeContext &ctx);
Values var(NodeContext &ctx);
Values softmax(NodeContext &ctx);
Values logSoftmax(NodeContext &ctx);
Values layerNorm(NodeContext &ctx);
Values batchNormInference(NodeContext &ctx);
/// Batch norm with the given running statistics (x, w, b, mean, var at 0-4), eps at
/// argument `epsIndex`: (y, empty mean, empty rstd).
Values batchNormWithStats(NodeContext &ctx, size_t epsIndex);
Values groupNorm(NodeContext &ctx);
Values prod(NodeContext &ctx);
Values vectorNorm(NodeContext &ctx);

// AtenBackward.cpp
Values batchNormTraining(NodeContext &ctx);
Values batchNormNoStats(NodeContext &ctx);
Values batchNormWithUpdate(NodeContext &ctx);

// AtenPooling.cpp (N-d pooling: 1-D ops arrive as 2-D)
/// An argument of `r` ints, one per spatial dim (a single int applies to all); missing,
/// null or empty gives `fallback` (likewise expanded); an ImportError for another count.
llvm::SmallVector<int64_t> perDim(NodeContext &ctx, size_t i, const char *name, int64_t r,
                                  llvm::SmallVector<int64_t> fallback);
/// "[a, b, c]".
std::string listStr(llvm::ArrayRef<int64_t> v);
/// Window parameters of a pooling op over the last r dims of [N, C, S...]: kernel, stride,
/// padding, dilation from argument `first` on; output size and padded input size per
/// spatial dim (ceil_mode included).
struct PoolWindow {
  llvm::SmallVector<int64_t> kernel, stride, padding, dilation, out, padded;
  bool ceilMode = false;
  int64_t offsets() const; ///< kernel offsets: the product of the kernel sizes
};
PoolWindow poolWindowNd(NodeContext &ctx, mlir::Value x, int64_t r, size_t first,
                        bool hasDilation);
/// [C, S...] -> [1, C, S...] for r spatial dims (other ranks unchanged).
mlir::Value withBatchNd(NodeContext &ctx, mlir::Value x, int64_t r);
Values maxPool2d(NodeContext &ctx);
Values maxPool2dWithIndices(NodeContext &ctx);
Values maxPool3dWithIndices(NodeContext &ctx);
Values maxPool2dBackward(NodeContext &ctx);
Values maxPool3dBackward(NodeContext &ctx);
Values avgPool2d(NodeContext &ctx);
Values avgPool3d(NodeContext &ctx);
Values avgPool2dBackward(NodeContext &ctx);
Values avgPool3dBackward(NodeContext &ctx);
Values adaptiveAvgPool2d(NodeContext &ctx);
Values adaptiveAvgPool3d(NodeContext &ctx);
Values adaptiveAvgPool2dBackward(NodeContext &ctx);
Values adaptiveAvgPool3dBackward(NodeContext &ctx);
Values adaptiveMaxPool2d(NodeContext &ctx);
Values adaptiveMaxPool3d(NodeContext &ctx);
Values adaptiveMaxPool2dBackward(NodeContext &ctx);
Values adaptiveMaxPool3dBackward(NodeContext &ctx);
Values upsampleBilinear2dAa(NodeContext &ctx);
Values upsampleBilinear2dAaBackward(NodeContext &ctx);

// AtenGridSample.cpp
Values gridSampler2d(NodeContext &ctx);

// AtenConvolution.cpp (1-D, 2-D, 3-D, grouped, transposed; and their backward)
Values convolution(NodeContext &ctx);
Values convolutionBackward(NodeContext &ctx);

// AtenShapes.cpp
Values permute(NodeContext &ctx);
Values transpose(NodeContext &ctx);
Values t(NodeContext &ctx);
Values reshape(NodeContext &ctx);
Values expand(NodeContext &ctx);
Values identity(NodeContext &ctx);
Values slice(NodeContext &ctx);
Values select(NodeContext &ctx);
Values splitWithSizes(NodeContext &ctx);
Values split(NodeContext &ctx);
Values cat(NodeContext &ctx);
Values constantPad(NodeContext &ctx);
Values embedding(NodeContext &ctx);
Values indexSelect(NodeContext &ctx);
Values gather(NodeContext &ctx);
Values arange(NodeContext &ctx);
Values full(NodeContext &ctx);
Values fullLike(NodeContext &ctx);
Values scalarTensor(NodeContext &ctx);
Values fillScalar(NodeContext &ctx);
Values empty(NodeContext &ctx);
Values flip(NodeContext &ctx);
Values repeat(NodeContext &ctx);
Values diagonal(NodeContext &ctx);
Values indexTensor(NodeContext &ctx);

// AtenScans.cpp (log-step scans of whole-tensor ops)
Values cumprod(NodeContext &ctx);
Values logcumsumexp(NodeContext &ctx);
Values cummax(NodeContext &ctx);
Values cummin(NodeContext &ctx);

// AtenSort.cpp (bitonic sorting networks of whole-tensor ops)
Values sort(NodeContext &ctx);
Values sortStable(NodeContext &ctx);
Values topk(NodeContext &ctx);
Values kthvalue(NodeContext &ctx);
Values median(NodeContext &ctx);
Values medianDim(NodeContext &ctx);
Values nanmedian(NodeContext &ctx);
Values nanmedianDim(NodeContext &ctx);
Values mode(NodeContext &ctx);

// AtenStrided.cpp
Values asStrided(NodeContext &ctx);
Values asStridedScatter(NodeContext &ctx);
Values unfold(NodeContext &ctx);
Values narrowCopy(NodeContext &ctx);
Values unbindCopy(NodeContext &ctx);
Values sliceScatter(NodeContext &ctx);
Values selectScatter(NodeContext &ctx);
Values diagonalScatter(NodeContext &ctx);

// AtenTrig.cpp
Values atanOp(NodeContext &ctx);
Values asinOp(NodeContext &ctx);
Values acosOp(NodeContext &ctx);
Values atan2Op(NodeContext &ctx);
Values asinhOp(NodeContext &ctx);
Values acoshOp(NodeContext &ctx);
Values hypotOp(NodeContext &ctx);
Values fminOp(NodeContext &ctx);
Values fmaxOp(NodeContext &ctx);
Values logicalXor(NodeContext &ctx);

/// AtenScans.cpp: integer cumsum along the last dim of [rows, L], exactly (a log-step scan).
mlir::Value integerScan(NodeContext &ctx, mlir::Value flat);

// AtenIndexing.cpp
/// Zeros of `elementType` shaped like `index` plus a trailing 1, read through an
/// indirect DMA gather of `positions` rows: the DMA validates every index against its
/// table, so an index outside [0, positions) raises on the device where eager raises
/// "index out of bounds". Added to an index (or used as a select's zero operand), the
/// check is part of the result's data flow.
mlir::Value boundsCheckedZeros(NodeContext &ctx, mlir::Value index, int64_t positions,
                               mlir::Type elementType);
/// self.scatter_add(dim, index, src) (`op` names the op in errors): an indirect DMA
/// scatter-add, every index bounds-checked against size(dim).
mlir::Value scatterAddAlong(NodeContext &ctx, const std::string &op, mlir::Value self,
                            int64_t dim, mlir::Value index, mlir::Value src);
/// x[i0, i1, ...] addressing (aten.index / index_put): the index tensors (null for a
/// skipped dim) select one run of adjacent dims [first, first + k); `moved` is x with the
/// run moved to the front (dims in `toFront` order), `linear` the row index over the
/// run's flattened dims (i64, the indices broadcast together, negatives wrapped, each
/// index bounds-checked when k > 1). first < 0: every dim skipped.
struct IndexedRows {
  mlir::Value moved, linear;
  int64_t first = -1, k = 0;
  llvm::SmallVector<int64_t> toFront;
};
IndexedRows indexedRows(NodeContext &ctx, mlir::Value x, llvm::ArrayRef<mlir::Value> all,
                        const std::string &op);
Values indexPut(NodeContext &ctx);
Values put(NodeContext &ctx);
Values scatterSrc(NodeContext &ctx);
Values scatterValue(NodeContext &ctx);
Values scatterReduceOld(NodeContext &ctx);
Values scatterAdd(NodeContext &ctx);
Values scatterReduceTwo(NodeContext &ctx);
Values indexReduce(NodeContext &ctx);
Values embeddingBag(NodeContext &ctx);
Values maskedScatter(NodeContext &ctx);
Values histc(NodeContext &ctx);
Values searchsorted(NodeContext &ctx);
Values bucketize(NodeContext &ctx);
Values embeddingBagDenseBackward(NodeContext &ctx);
Values embeddingBagBackward(NodeContext &ctx);
Values embeddingBagPerSampleWeightsBackward(NodeContext &ctx);

// AtenKernel.cpp
Values kernel(NodeContext &ctx);

} // namespace neuron::compiler::aten
