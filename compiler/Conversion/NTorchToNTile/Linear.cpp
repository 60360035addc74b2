// Tiling of matmul onto the Tensor engine: [K, M]^T @ [K, N] tiles accumulated in PSUM.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

/// Keep the stationary tiles of one row block resident while they fit in this
/// many bytes per partition; otherwise reload them for every column block.
static constexpr int64_t kResidentStationaryBytes = 96 * 1024;

LogicalResult lowerMatmul(TileEmitter &e, Operation *operation) {
  auto op = dyn_cast<ntorch::MatmulOp>(operation);
  if (!op)
    return failure();
  Location loc = op.getLoc();
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
  auto resType = cast<RankedTensorType>(op.getType());
  // A leading batch dimension (aten.bmm) repeats the 2-D product per batch.
  int64_t b0 = resType.getRank() - 2, batches = b0 ? resType.getDimSize(0) : 1;
  int64_t M = resType.getDimSize(b0), N = resType.getDimSize(b0 + 1);
  int64_t K = op.getTransposeLhs() ? lhsType.getDimSize(b0) : lhsType.getDimSize(b0 + 1);
  // Element strides of lhs'[m, k] and rhs'[k, n] in their buffers.
  int64_t lhsM = op.getTransposeLhs() ? 1 : K, lhsK = op.getTransposeLhs() ? M : 1;
  int64_t rhsK = op.getTransposeRhs() ? 1 : N, rhsN = op.getTransposeRhs() ? K : 1;

  Value lhs = e.buffer(op.getLhs()), rhs = e.buffer(op.getRhs());
  std::optional<MatmulEpilogue> epilogue = matchMatmulEpilogue(e, op);
  Value out = epilogue ? Value() : e.createResultBuffer(op.getResult(), loc);
  Type lhsEt = lhsType.getElementType(), rhsEt = rhsType.getElementType();
  Type f32 = e.b.getF32Type();
  const int64_t tileK = e.target.partitions, tileM = e.target.matmulMaxM,
                tileN = e.target.matmulMaxN;
  int64_t kTiles = (K + tileK - 1) / tileK;
  int64_t lhsBytes = ntile::getElementBytes(lhsEt), rhsBytes = ntile::getElementBytes(rhsEt);
  // Loop order: keep one operand's tiles for a row (column) block resident in SBUF and
  // stream the other; pick the order that moves fewer bytes from HBM.
  bool lhsFits = kTiles * tileM * lhsBytes <= kResidentStationaryBytes;
  bool rhsFits = kTiles * tileN * rhsBytes <= kResidentStationaryBytes;
  double lhsResidentTraffic = M * K * lhsBytes + (double)K * N * rhsBytes * ((M + tileM - 1) / tileM);
  double rhsResidentTraffic = K * N * rhsBytes + (double)M * K * lhsBytes * ((N + tileN - 1) / tileN);
  bool columnsOuter = rhsFits && (!lhsFits || rhsResidentTraffic < lhsResidentTraffic);

  int64_t lhsBase = 0, rhsBase = 0, outBase = 0, batch = 0;
  auto loadStationary = [&](int64_t m0, int64_t mm, int64_t k0, int64_t kk) {
    Value tile = e.allocTile(loc, kk, mm, lhsEt, MemSpace::sbuf);
    e.dma(loc, lhs, e.pattern(lhsBase + m0 * lhsM + k0 * lhsK, {{lhsK, kk}, {lhsM, mm}}), tile,
          e.pattern(0, {{mm, kk}, {1, mm}}));
    return tile;
  };
  auto loadMoving = [&](int64_t n0, int64_t nn, int64_t k0, int64_t kk) {
    Value tile = e.allocTile(loc, kk, nn, rhsEt, MemSpace::sbuf);
    e.dma(loc, rhs, e.pattern(rhsBase + k0 * rhsK + n0 * rhsN, {{rhsK, kk}, {rhsN, nn}}), tile,
          e.pattern(0, {{nn, kk}, {1, nn}}));
    return tile;
  };
  // One [mm, nn] output tile: accumulate over K in PSUM, then the epilogue or a store.
  auto outputTile = [&](int64_t m0, int64_t mm, int64_t n0, int64_t nn,
                        function_ref<Value(int64_t, int64_t, int64_t)> stationary,
                        function_ref<Value(int64_t, int64_t, int64_t)> moving) -> LogicalResult {
    Value acc = e.allocTile(loc, mm, nn, f32, MemSpace::psum);
    for (int64_t k0 = 0, kt = 0; k0 < K; k0 += tileK, ++kt) {
      int64_t kk = std::min(tileK, K - k0);
      Value st = stationary(kt, k0, kk), mv = moving(kt, k0, kk);
      e.b.create<ntile::MatmulOp>(loc, st, mv, acc, /*accumulate=*/k0 > 0);
    }
    Value result = acc;
    Type resultType = epilogue ? epilogue->elementType : resType.getElementType();
    if (!epilogue || !resultType.isF32()) {
      // Evacuate PSUM, rounding to the result type as eager PyTorch does.
      result = e.allocTile(loc, mm, nn, resultType, MemSpace::sbuf);
      e.b.create<ntile::CopyOp>(loc, acc, result);
    }
    if (epilogue)
      return epilogue->emit(batch * M + m0, mm, n0, nn, result);
    e.dma(loc, result, e.pattern(0, {{nn, mm}, {1, nn}}), out,
          e.pattern(outBase + m0 * N + n0, {{N, mm}, {1, nn}}));
    return success();
  };

  for (batch = 0; batch < batches; ++batch) {
    lhsBase = batch * M * K;
    rhsBase = batch * K * N;
    outBase = batch * M * N;
    if (columnsOuter) {
      for (int64_t n0 = 0; n0 < N; n0 += tileN) {
        int64_t nn = std::min(tileN, N - n0);
        SmallVector<Value> panel;
        for (int64_t k0 = 0; k0 < K; k0 += tileK)
          panel.push_back(loadMoving(n0, nn, k0, std::min(tileK, K - k0)));
        for (int64_t m0 = 0; m0 < M; m0 += tileM) {
          int64_t mm = std::min(tileM, M - m0);
          if (failed(outputTile(
                  m0, mm, n0, nn,
                  [&](int64_t, int64_t k0, int64_t kk) { return loadStationary(m0, mm, k0, kk); },
                  [&](int64_t kt, int64_t, int64_t) { return panel[kt]; })))
            return failure();
        }
      }
      continue;
    }
    for (int64_t m0 = 0; m0 < M; m0 += tileM) {
      int64_t mm = std::min(tileM, M - m0);
      SmallVector<Value> panel;
      if (lhsFits)
        for (int64_t k0 = 0; k0 < K; k0 += tileK)
          panel.push_back(loadStationary(m0, mm, k0, std::min(tileK, K - k0)));
      for (int64_t n0 = 0; n0 < N; n0 += tileN) {
        int64_t nn = std::min(tileN, N - n0);
        if (failed(outputTile(
                m0, mm, n0, nn,
                [&](int64_t kt, int64_t k0, int64_t kk) {
                  return lhsFits ? panel[kt] : loadStationary(m0, mm, k0, kk);
                },
                [&](int64_t, int64_t k0, int64_t kk) { return loadMoving(n0, nn, k0, kk); })))
          return failure();
      }
    }
  }
  return success();
}

} // namespace neuron::compiler
