// Parsing, printing and ranges of loop terms (see LoopTerms.h).
#include "dialects/Common/LoopTerms.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

using namespace mlir;

namespace neuron {

llvm::SmallVector<LoopTerm> unpackTerms(llvm::ArrayRef<int64_t> flat) {
  llvm::SmallVector<LoopTerm> terms;
  for (size_t i = 0; i + 2 < flat.size(); i += 3)
    terms.push_back({flat[i], flat[i + 1], flat[i + 2]});
  return terms;
}

llvm::SmallVector<int64_t> packTerms(llvm::ArrayRef<LoopTerm> terms) {
  llvm::SmallVector<int64_t> flat;
  for (const LoopTerm &t : terms)
    flat.append({t.level, t.coef, t.modulus});
  return flat;
}

/// `ivN` -> N.
static ParseResult parseInductionVariable(AsmParser &parser, int64_t &level) {
  StringRef name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&name))
    return failure();
  if (!name.consume_front("iv") || name.getAsInteger(10, level) || level < 0)
    return parser.emitError(loc, "expected an induction variable ivN");
  return success();
}

ParseResult parseLoopTerms(AsmParser &parser, llvm::SmallVectorImpl<int64_t> &flat) {
  while (succeeded(parser.parseOptionalPlus())) {
    int64_t coef, level, modulus = 0;
    if (parser.parseInteger(coef) || parser.parseStar())
      return failure();
    if (succeeded(parser.parseOptionalLParen())) {
      if (parseInductionVariable(parser, level) || parser.parseKeyword("mod") ||
          parser.parseInteger(modulus) || parser.parseRParen())
        return failure();
    } else if (parseInductionVariable(parser, level)) {
      return failure();
    }
    flat.append({level, coef, modulus});
  }
  return success();
}

void printLoopTerms(AsmPrinter &printer, llvm::ArrayRef<int64_t> flat) {
  for (const LoopTerm &t : unpackTerms(flat)) {
    printer << " + " << t.coef << "*";
    if (t.modulus > 0)
      printer << "(iv" << t.level << " mod " << t.modulus << ")";
    else
      printer << "iv" << t.level;
  }
}

llvm::SmallVector<int64_t> enclosingLoopCounts(Operation *op) {
  llvm::SmallVector<int64_t> counts;
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (p->getName().stripDialect() == "loop")
      if (auto count = p->getAttrOfType<IntegerAttr>("count"))
        counts.insert(counts.begin(), count.getInt());
  return counts;
}

std::pair<int64_t, int64_t> termRange(llvm::ArrayRef<int64_t> flat,
                                      llvm::ArrayRef<int64_t> counts) {
  int64_t lo = 0, hi = 0;
  for (const LoopTerm &t : unpackTerms(flat)) {
    int64_t count = t.level < (int64_t)counts.size() ? counts[t.level] : 1;
    int64_t top = (t.modulus > 0 ? std::min(t.modulus, count) : count) - 1;
    (t.coef < 0 ? lo : hi) += t.coef * top;
  }
  return {lo, hi};
}

LogicalResult verifyTerms(Operation *op, llvm::ArrayRef<int64_t> flat, llvm::StringRef what) {
  if (flat.size() % 3 != 0)
    return op->emitOpError() << what << " terms must be (level, coef, modulus) triples";
  int64_t depth = enclosingLoopCounts(op).size();
  for (const LoopTerm &t : unpackTerms(flat)) {
    if (t.level < 0 || t.level >= depth)
      return op->emitOpError() << what << " term uses iv" << t.level << " but the op is inside "
                               << depth << " loop(s)";
    if (t.modulus < 0)
      return op->emitOpError() << what << " term has a negative modulus";
  }
  return success();
}

} // namespace neuron

namespace neuron {

static constexpr int64_t kMaxLoopDepth = 8;

ParseResult parseLoopOp(OpAsmParser &parser, OperationState &result) {
  int64_t level, count;
  if (parseInductionVariable(parser, level) || parser.parseKeyword("to") ||
      parser.parseInteger(count))
    return failure();
  result.addAttribute("count", parser.getBuilder().getI64IntegerAttr(count));
  Region *body = result.addRegion();
  if (parser.parseRegion(*body) || parser.parseOptionalAttrDict(result.attributes))
    return failure();
  if (body->empty())
    body->emplaceBlock();
  return success();
}

void printLoopOp(OpAsmPrinter &printer, Operation *op) {
  printer << " iv" << enclosingLoopCounts(op).size() << " to "
          << op->getAttrOfType<IntegerAttr>("count").getInt() << " ";
  printer.printRegion(op->getRegion(0), /*printEntryBlockArgs=*/false,
                      /*printBlockTerminators=*/false);
  printer.printOptionalAttrDict(op->getAttrs(), {"count"});
}

LogicalResult verifyLoopOp(Operation *op) {
  if (op->getAttrOfType<IntegerAttr>("count").getInt() < 1)
    return op->emitOpError("must run at least once");
  if ((int64_t)enclosingLoopCounts(op).size() >= kMaxLoopDepth)
    return op->emitOpError("nests deeper than ") << kMaxLoopDepth << " loops";
  return success();
}

} // namespace neuron
