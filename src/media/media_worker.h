// Untrusted media bytes (PDFs, TIFF scans, video) are parsed in a child process, so a crash,
// hang or memory blow-up in a parser library costs one request, never the server.
//
// The child is this same executable started again by exec (fork without exec is unsafe in a
// multithreaded server) with a hidden first argument; main() calls run_worker_if_requested()
// before anything else. The child sets its own limits (address space, CPU time, no core files)
// before it reads a byte of input, then runs one job registered by name. Input goes in and
// results come out over one socket with length-prefixed frames that the parent checks; the parent
// enforces the wall-clock and output-size limits and kills the child on either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::media {

struct WorkerLimits {
  uint64_t memory_bytes = uint64_t{1} << 30;    // RLIMIT_AS of the child
  double cpu_seconds = 60;                      // RLIMIT_CPU of the child (whole seconds, >= 1)
  double wall_seconds = 60;                     // the parent kills the child after this
  uint64_t output_bytes = uint64_t{512} << 20;  // sum of frame payloads the parent accepts
};

// One result record: a job-defined tag (0..127) and its bytes.
struct WorkerFrame {
  uint8_t tag = 0;
  std::string bytes;
};

// What a job writes its results to (in the child).
class WorkerOutput {
 public:
  explicit WorkerOutput(int fd) : fd_(fd) {}
  // One frame whose payload is `head` followed by `body` (so pixels need no copy). tag < 128.
  void write(uint8_t tag, std::string_view head, std::string_view body = {});

 private:
  int fd_;
};

// A job: `params` is a job-defined description (small), `input` the untrusted bytes. It reports
// bad input by throwing qvl::Error, which the parent rethrows with the same code and message.
using WorkerJob = void (*)(std::string_view params, std::string_view input, WorkerOutput& out);

// Adds a job to this executable's table (the built-in ones are in worker_jobs.cpp). Call it
// before run_worker_if_requested (e.g. from a static initialiser); names are unique.
void register_worker_job(const std::string& name, WorkerJob job);

// In the child (argv[1] is the hidden worker argument): runs the job and exits, never returning.
// Otherwise returns false at once. Call it first thing in main().
bool run_worker_if_requested(int argc, char** argv);

// Runs `job` on `input` in a child process under `limits` and returns its frames in order.
// Throws qvl::Error: the job's own error (code and message), or kResourceExhausted naming the
// limit that stopped it (memory, CPU time, wall time, output size), or kInternal when the child
// crashed or broke the framing. No child process or descriptor outlives the call.
// `label` starts the limit errors' messages ("rendering the PDF took longer than ..."); by
// default "media job '<job>'".
std::vector<WorkerFrame> run_worker_job(const std::string& job, std::string_view params,
                                        std::string_view input, const WorkerLimits& limits,
                                        const std::string& label = {});

// False in sanitizer builds, whose shadow memory cannot live under an address-space limit, and
// under qemu-user, which accepts the limit and ignores it (the CPU, wall-clock and output limits
// still hold there).
bool worker_memory_limit_enforced();

}  // namespace qvl::media
