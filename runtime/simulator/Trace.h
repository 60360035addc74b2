// Chrome trace-event / Perfetto JSON timelines of a simulated run.
//
// The output is the JSON object form of the trace-event format
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
//
//   {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
//
// with one process (pid 0, the simulated NeuronCore) and one lane (tid) per
// queue: tid = queue index (Program.h: 0 Tensor, 1 Vector, 2 Scalar,
// 3 GpSimd, 4 + i DMA queue i), named by "thread_name" metadata events
// ("Tensor", "Vector", "Scalar", "GpSimd", "DMA q0" .. "DMA q15") and ordered
// by "thread_sort_index". Every instruction instance (an instruction inside
// loops runs once per iteration) is one complete event ("ph": "X") on its
// queue's lane:
//   name  opcode ("nc_matmul", "dma_copy", ...)
//   cat   engine ("tensor", "vector", "scalar", "gpsimd", "dma")
//   ts    start, dur = end - start, in microseconds (floats; ns precision)
//   args  instruction  index in Program::instructions
//         origin       Program::origins[inst.origin] (ATen node, source line);
//                      absent if the program has no such origin
//         bytes        DmaCopy, DmaGather, DmaScatter: bytes moved; others: bytes read
//                      + written
//         waits        ["Scalar>=2", ...]: the semaphore waits; a value with
//                      loop terms reads "Scalar>=1+2*i0+1*(i1%4)" (i<level>:
//                      the induction variable of the loop at that level)
//         complete_us  when the result is visible (matmul latency, DMA end)
//         func / alu   the activation function or ALU op, where it applies
// Instruction events are sorted by start time (ties: queue, then program
// order); on every lane they never overlap. "otherData" holds the target and,
// if given, the run's stats.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/Simulator.h"

#include <string>
#include <vector>

namespace neuron::runtime {

/// Lane name of queue `q`: "Tensor", "Vector", "Scalar", "GpSimd", "DMA q<i>".
std::string traceLaneName(int q);

/// The trace of `program` from `timeline` (RunOptions::timeline of a run of
/// it). `stats` (optional) is summarized in "otherData". Throws
/// std::invalid_argument if a timeline entry names an instruction or queue
/// the program does not have.
std::string traceToJson(const Program &program,
                        const std::vector<InstructionTiming> &timeline,
                        const RunStats *stats = nullptr);

/// Writes traceToJson(...) to `path`; throws std::runtime_error if the file
/// cannot be written.
void writeTrace(const std::string &path, const Program &program,
                const std::vector<InstructionTiming> &timeline,
                const RunStats *stats = nullptr);

} // namespace neuron::runtime
