// Registration of the ntile dialect and its attributes (access patterns, memory spaces).
#include "dialects/NTile/IR/NTileDialect.h"
#include "dialects/NTile/IR/NTileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "dialects/Common/LoopTerms.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace neuron::ntile;

#include "dialects/NTile/IR/NTileOpsDialect.cpp.inc"
#include "dialects/NTile/IR/NTileEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/NTile/IR/NTileAttrs.cpp.inc"

void NTileDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/NTile/IR/NTileAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/NTile/IR/NTileOps.cpp.inc"
      >();
}

std::optional<MemSpace> neuron::ntile::getMemSpace(MemRefType type) {
  if (auto attr = dyn_cast_or_null<MemSpaceAttr>(type.getMemorySpace()))
    return attr.getValue();
  return std::nullopt;
}

MemRefType neuron::ntile::getBufferType(ArrayRef<int64_t> shape, Type elementType,
                                        MemSpace space) {
  return MemRefType::get(shape, elementType, MemRefLayoutAttrInterface{},
                         MemSpaceAttr::get(elementType.getContext(), space));
}

int64_t neuron::ntile::getElementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

int64_t neuron::ntile::getBufferCount(Operation *alloc) {
  auto attr = alloc->getAttrOfType<IntegerAttr>(kBuffersAttr);
  return attr ? attr.getInt() : 1;
}

int64_t neuron::ntile::getBufferStride(MemRefType tile, int64_t psumBankBytes) {
  int64_t bytes = tile.getDimSize(1) * getElementBytes(tile.getElementType());
  int64_t alignment = getMemSpace(tile) == MemSpace::psum ? psumBankBytes : 64;
  return (bytes + alignment - 1) / alignment * alignment;
}

//===----------------------------------------------------------------------===//
// AccessPatternAttr: #ntile.ap<offset + terms, [[stride, size], ...]>
//===----------------------------------------------------------------------===//

int64_t AccessPatternAttr::getNumElements() const {
  int64_t n = 1;
  for (size_t i = 0; i < getRank(); ++i)
    n *= getSize(i);
  return n;
}

std::pair<int64_t, int64_t> AccessPatternAttr::getExtent() const {
  int64_t lo = getOffset(), hi = getOffset();
  for (size_t i = 0; i < getRank(); ++i) {
    int64_t span = getStride(i) * (getSize(i) - 1);
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi + 1};
}

Attribute AccessPatternAttr::parse(AsmParser &parser, Type) {
  int64_t offset;
  SmallVector<int64_t> dims, terms;
  if (parser.parseLess() || parser.parseInteger(offset) ||
      neuron::parseLoopTerms(parser, terms) || parser.parseComma())
    return {};
  auto parsePair = [&]() -> ParseResult {
    int64_t stride, size;
    if (parser.parseLSquare() || parser.parseInteger(stride) || parser.parseComma() ||
        parser.parseInteger(size) || parser.parseRSquare())
      return failure();
    dims.append({stride, size});
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parsePair) ||
      parser.parseGreater())
    return {};
  return AccessPatternAttr::get(parser.getContext(), offset, dims, terms);
}

void AccessPatternAttr::print(AsmPrinter &printer) const {
  printer << "<" << getOffset();
  neuron::printLoopTerms(printer, getTerms());
  printer << ", [";
  for (size_t i = 0; i < getRank(); ++i)
    printer << (i ? ", " : "") << "[" << getStride(i) << ", " << getSize(i) << "]";
  printer << "]>";
}

int64_t neuron::ntile::getCore(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto core = op->getAttrOfType<IntegerAttr>(kCoreAttr))
      return core.getInt();
  return 0;
}
