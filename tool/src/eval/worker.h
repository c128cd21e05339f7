// `kopt worker`: the process that owns the GPU. It reads EvalRequests as JSON
// lines on stdin and writes replies on stdout (see eval/protocol.h).
//
// Defenses (README "Evaluation" explains each, DESIGN.md section 4 the why):
//  * every buffer ends against an unmapped page (virtual memory API), with
//    poison (0xFF) canary bytes between the buffer's end and that page and
//    before its start, checked after every launch;
//  * outputs poisoned before every launch (timed ones too), shared memory
//    poisoned by a built-in kernel before every candidate launch;
//  * trial 1 on seeded inputs (run `repeats` times, compared bit for bit),
//    trial 2 with new contents in the same buffers, trial 3 in new buffers;
//    inputs compared after every checked launch;
//  * feasibility checked before launch (threads per block against the compiled
//    function's limit, grid limits, shared memory opt-in set when needed);
//  * launches watched by a deadline; a hang or a sticky fault ends this process
//    after the verdict is sent (the supervisor starts a fresh one);
//  * timing: per launch a pair of CUDA events around the launch alone; the
//    output of the timed launches is validated again afterwards.
#pragma once

#include <string>

namespace kopt::eval {

struct WorkerOptions {
  int device = 0;  // CUDA device ordinal
};

/// The CUDA C++ source of the worker's built-in kernels (shared-memory
/// poisoning, the GEMM error-bound scale, the on-GPU output screen and buffer
/// diff). Exposed so that a CPU-only test can check it compiles with NVRTC.
const char* builtin_kernels_source();

/// Runs the worker loop until stdin closes or "shutdown" arrives. Returns the
/// process exit code. Never throws.
int run_worker(const WorkerOptions& options);

}  // namespace kopt::eval
