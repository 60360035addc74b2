// Generated string conversions of the shared engine enums.
#include "dialects/Common/NeuronEnums.h"

#include "dialects/Common/NeuronEnums.cpp.inc"
