// Registration of the nisa dialect and the physical access-pattern attribute.
#include "dialects/NIsa/IR/NIsaDialect.h"
#include "dialects/NIsa/IR/NIsaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "dialects/Common/LoopTerms.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace neuron::nisa;
using neuron::ntile::MemSpace;

#include "dialects/NIsa/IR/NIsaOpsDialect.cpp.inc"
#include "dialects/NIsa/IR/NIsaEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/NIsa/IR/NIsaAttrs.cpp.inc"

void NIsaDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/NIsa/IR/NIsaAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/NIsa/IR/NIsaOps.cpp.inc"
      >();
}

int64_t AccessPatternAttr::getNumElements() const {
  int64_t n = 1;
  for (size_t i = 0; i < getRank(); ++i)
    n *= getSize(i);
  return n;
}

int64_t AccessPatternAttr::getFreeSize() const {
  int64_t n = 1;
  for (size_t i = 1; i < getRank(); ++i)
    n *= getSize(i);
  return n;
}

// #nisa.ap<space[index] + offset + terms, [[stride, size], ...], type[, core N]>
Attribute AccessPatternAttr::parse(AsmParser &parser, Type) {
  StringRef spaceName;
  uint32_t index;
  int64_t offset;
  SmallVector<int64_t> dims, terms;
  Type elementType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&spaceName))
    return {};
  std::optional<MemSpace> space = neuron::ntile::symbolizeMemSpace(spaceName);
  if (!space) {
    parser.emitError(loc, "unknown memory space '") << spaceName << "'";
    return {};
  }
  auto parsePair = [&]() -> ParseResult {
    int64_t stride, size;
    if (parser.parseLSquare() || parser.parseInteger(stride) || parser.parseComma() ||
        parser.parseInteger(size) || parser.parseRSquare())
      return failure();
    dims.append({stride, size});
    return success();
  };
  if (parser.parseLSquare() || parser.parseInteger(index) || parser.parseRSquare() ||
      parser.parsePlus() || parser.parseInteger(offset) ||
      neuron::parseLoopTerms(parser, terms) || parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parsePair) ||
      parser.parseComma() || parser.parseType(elementType))
    return {};
  uint32_t core = 0;
  if (succeeded(parser.parseOptionalComma()) &&
      (parser.parseKeyword("core") || parser.parseInteger(core)))
    return {};
  if (parser.parseGreater())
    return {};
  return AccessPatternAttr::get(parser.getContext(), *space, index, offset, dims, elementType,
                                terms, core);
}

void AccessPatternAttr::print(AsmPrinter &printer) const {
  printer << "<" << neuron::ntile::stringifyMemSpace(getSpace()) << "[" << getIndex() << "] + "
          << getOffset();
  neuron::printLoopTerms(printer, getTerms());
  printer << ", [";
  for (size_t i = 0; i < getRank(); ++i)
    printer << (i ? ", " : "") << "[" << getStride(i) << ", " << getSize(i) << "]";
  printer << "], " << getElementType();
  if (getCore() != 0)
    printer << ", core " << getCore();
  printer << ">";
}
