// Offsets affine in the induction variables of enclosing loops, shared by ntile and nisa.
//
// A term is a flattened triple (level, coef, modulus): coef * iv[level], or
// coef * (iv[level] mod modulus) when modulus > 0 (a rotating buffer). Level 0 is
// the outermost `loop` op around the op that carries the term. Printed as
// `+ 128*iv0 + 512*(iv1 mod 2)` after a constant offset.
#pragma once

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <utility>

namespace neuron {

struct LoopTerm {
  int64_t level, coef, modulus;
};

/// The terms of a flattened (level, coef, modulus) array.
llvm::SmallVector<LoopTerm> unpackTerms(llvm::ArrayRef<int64_t> flat);
llvm::SmallVector<int64_t> packTerms(llvm::ArrayRef<LoopTerm> terms);

/// Parses zero or more `+ coef*ivN` / `+ coef*(ivN mod M)` terms.
mlir::ParseResult parseLoopTerms(mlir::AsmParser &parser, llvm::SmallVectorImpl<int64_t> &flat);
void printLoopTerms(mlir::AsmPrinter &printer, llvm::ArrayRef<int64_t> flat);

/// Trip counts of the loops around `op`, outermost first (ops named `*.loop` with a
/// `count` attribute).
llvm::SmallVector<int64_t> enclosingLoopCounts(mlir::Operation *op);

/// Smallest and largest value of the terms over all iterations of loops with `counts`.
std::pair<int64_t, int64_t> termRange(llvm::ArrayRef<int64_t> flat,
                                      llvm::ArrayRef<int64_t> counts);

/// Checks that every term names an enclosing loop and has a positive modulus or none.
mlir::LogicalResult verifyTerms(mlir::Operation *op, llvm::ArrayRef<int64_t> flat,
                                llvm::StringRef what);

} // namespace neuron

namespace neuron {
/// Custom assembly of the `loop` ops of ntile and nisa: `iv<depth> to <count> { body }`.
mlir::ParseResult parseLoopOp(mlir::OpAsmParser &parser, mlir::OperationState &result);
void printLoopOp(mlir::OpAsmPrinter &printer, mlir::Operation *op);
/// A loop runs at least once and nests at most 8 deep (runtime::kMaxLoopDepth).
mlir::LogicalResult verifyLoopOp(mlir::Operation *op);
} // namespace neuron
