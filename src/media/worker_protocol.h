// How the parent starts the media worker (its hidden command line), the child's exit codes, and
// the table of jobs (media_worker.h).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "media/media_worker.h"

namespace qvl::media {

// argv[1] of a worker process; no user types it.
inline constexpr const char* kWorkerArgument = "--qvl-media-worker";

struct WorkerArgs {
  std::string job;
  uint64_t memory_bytes = 0;
  uint64_t cpu_seconds = 0;
  pid_t parent_pid = 0;
};

// The worker's command line after the executable's name: the argument, job, memory, CPU, parent.
std::vector<std::string> worker_argv(const std::string& job, const WorkerLimits& limits);
// The worker's arguments when argv[1] is kWorkerArgument; a malformed worker command line exits.
std::optional<WorkerArgs> parse_worker_args(int argc, char** argv);

// Exit statuses of a worker that could not report through a frame.
namespace worker_exit {
inline constexpr int kOutOfMemory = 86;   // std::bad_alloc under the address-space limit
inline constexpr int kSetupFailed = 87;   // bad command line or a limit that could not be set
inline constexpr int kBadInput = 88;      // the parent's input ended early
inline constexpr int kOutputClosed = 89;  // the parent closed the socket
}  // namespace worker_exit

// The job of that name (built-in or registered), or nullptr.
WorkerJob find_worker_job(const std::string& name);

}  // namespace qvl::media
