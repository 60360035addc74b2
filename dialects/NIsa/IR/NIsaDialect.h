// The nisa dialect: NeuronCore instructions with physical access patterns.
#pragma once

#include "dialects/Common/NeuronEnums.h"
#include "dialects/NTile/IR/NTileDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"

#include "dialects/NIsa/IR/NIsaOpsDialect.h.inc"
#include "dialects/NIsa/IR/NIsaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NIsa/IR/NIsaAttrs.h.inc"
