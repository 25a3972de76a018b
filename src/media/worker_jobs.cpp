// The media worker's table of jobs and its command line (worker_protocol.h).
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "base/error.h"
#include "media/document_jobs.h"
#include "media/video_jobs.h"
#include "media/worker_protocol.h"

namespace qvl::media {
namespace {

std::map<std::string, WorkerJob>& registered_jobs() {
  static std::map<std::string, WorkerJob> jobs;
  return jobs;
}

// Built into every executable that links qvl_media; a new media family adds its line here.
const std::map<std::string, WorkerJob>& builtin_jobs() {
  static const std::map<std::string, WorkerJob> jobs = {
      {kPdfJob, &run_pdf_job},
      {kTiffJob, &run_tiff_job},
      {kVideoInfoJob, &run_video_info_job},
      {kVideoFramesJob, &run_video_frames_job},
      {kVideoSampledJob, &run_video_sampled_job},
  };
  return jobs;
}

uint64_t parse_number(const char* text) {
  uint64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end) std::_Exit(worker_exit::kSetupFailed);
  return value;
}

}  // namespace

void register_worker_job(const std::string& name, WorkerJob job) {
  if (builtin_jobs().count(name) || !registered_jobs().emplace(name, job).second) {
    fail(ErrorCode::kInternal, "media job '" + name + "' is registered twice");
  }
}

WorkerJob find_worker_job(const std::string& name) {
  if (auto it = builtin_jobs().find(name); it != builtin_jobs().end()) return it->second;
  if (auto it = registered_jobs().find(name); it != registered_jobs().end()) return it->second;
  return nullptr;
}

std::vector<std::string> worker_argv(const std::string& job, const WorkerLimits& limits) {
  // RLIMIT_CPU counts whole seconds; round up so that a limit is never tighter than asked.
  const auto cpu = static_cast<uint64_t>(limits.cpu_seconds < 1 ? 1 : limits.cpu_seconds + 0.999);
  return {kWorkerArgument, job, std::to_string(limits.memory_bytes), std::to_string(cpu),
          std::to_string(::getpid())};
}

std::optional<WorkerArgs> parse_worker_args(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], kWorkerArgument) != 0) return std::nullopt;
  if (argc != 6) std::_Exit(worker_exit::kSetupFailed);
  WorkerArgs args;
  args.job = argv[2];
  args.memory_bytes = parse_number(argv[3]);
  args.cpu_seconds = parse_number(argv[4]);
  args.parent_pid = static_cast<pid_t>(parse_number(argv[5]));
  return args;
}

}  // namespace qvl::media
