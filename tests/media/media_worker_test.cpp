// The media worker runs jobs in a child process (this test executable started again through
// tests/test_main.cpp) and turns every way a job can go wrong into a clear error, with no child or
// descriptor left behind.
#include "media/media_worker.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"

namespace qvl::media {
namespace {

// Echoes the input back in frames of `params` bytes each (tag 7), then the params (tag 8).
void echo_job(std::string_view params, std::string_view input, WorkerOutput& out) {
  const size_t chunk = std::stoul(std::string(params));
  for (size_t at = 0; at < input.size(); at += chunk) out.write(7, input.substr(at, chunk));
  out.write(8, params);
}

void memory_job(std::string_view, std::string_view, WorkerOutput&) {
  std::vector<std::vector<char>> blocks;
  for (;;) blocks.emplace_back(size_t{16} << 20, 'x');
}

void cpu_job(std::string_view, std::string_view, WorkerOutput&) {
  volatile uint64_t x = 1;
  for (;;) x = x * 6364136223846793005ull + 1;
}

void sleep_job(std::string_view, std::string_view, WorkerOutput&) {
  for (;;) ::pause();
}

void flood_job(std::string_view, std::string_view, WorkerOutput& out) {
  const std::string block(1 << 16, 'f');
  for (;;) out.write(1, block);
}

void abort_job(std::string_view, std::string_view, WorkerOutput&) {
  std::abort();
}

void segfault_job(std::string_view, std::string_view, WorkerOutput&) {
  ::raise(SIGSEGV);
}

void error_job(std::string_view, std::string_view, WorkerOutput&) {
  fail(ErrorCode::kInvalidArgument, "the input is a cabbage");
}

void quit_job(std::string_view, std::string_view, WorkerOutput& out) {
  out.write(1, "half");
  std::_Exit(0);  // without the done frame
}

const bool registered = [] {
  register_worker_job("test-echo", &echo_job);
  register_worker_job("test-memory", &memory_job);
  register_worker_job("test-cpu", &cpu_job);
  register_worker_job("test-sleep", &sleep_job);
  register_worker_job("test-flood", &flood_job);
  register_worker_job("test-abort", &abort_job);
  register_worker_job("test-segfault", &segfault_job);
  register_worker_job("test-error", &error_job);
  register_worker_job("test-quit", &quit_job);
  return true;
}();

int open_descriptors() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count;
}

// After each test: no child left (reaped, so no zombie) and no descriptor leaked.
class MediaWorker : public ::testing::Test {
 protected:
  void SetUp() override { descriptors_ = open_descriptors(); }
  void TearDown() override {
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
    EXPECT_EQ(open_descriptors(), descriptors_);
  }

  // The error message of a job that must fail with `code`.
  static std::string failure(const std::string& job, const WorkerLimits& limits, ErrorCode code) {
    try {
      run_worker_job(job, "", "", limits);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return e.what();
    }
    ADD_FAILURE() << job << " did not fail";
    return "";
  }

  int descriptors_ = 0;
};

TEST_F(MediaWorker, ReturnsTheJobsFramesInOrderForALargeInput) {
  ASSERT_TRUE(registered);
  std::string input(5 << 20, '\0');
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<char>(i * 131 + (i >> 12));
  const auto frames = run_worker_job("test-echo", "100000", input, WorkerLimits{});
  ASSERT_EQ(frames.size(), (input.size() + 99999) / 100000 + 1);
  std::string echoed;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    EXPECT_EQ(frames[i].tag, 7);
    echoed += frames[i].bytes;
  }
  EXPECT_TRUE(echoed == input);
  EXPECT_EQ(frames.back().tag, 8);
  EXPECT_EQ(frames.back().bytes, "100000");
}

TEST_F(MediaWorker, EmptyInputAndConcurrentJobs) {
  std::vector<std::thread> threads;
  std::vector<size_t> counts(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      counts[t] = run_worker_job("test-echo", "3", std::string(t, 'a'), WorkerLimits{}).size();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counts[0], 1u);  // only the params frame
  EXPECT_EQ(counts[3], 2u);
}

TEST_F(MediaWorker, AJobsOwnErrorKeepsItsCodeAndMessage) {
  EXPECT_EQ(failure("test-error", {}, ErrorCode::kInvalidArgument), "the input is a cabbage");
}

TEST_F(MediaWorker, UnknownJob) {
  EXPECT_NE(failure("no-such-job", {}, ErrorCode::kInternal).find("no media job named"),
            std::string::npos);
}

TEST_F(MediaWorker, MemoryLimit) {
  if (!worker_memory_limit_enforced()) {
    GTEST_SKIP() << "no address-space limit here (a sanitizer build, or qemu-user, which ignores "
                    "RLIMIT_AS)";
  }
  WorkerLimits limits;
  limits.memory_bytes = uint64_t{256} << 20;
  const std::string message = failure("test-memory", limits, ErrorCode::kResourceExhausted);
  EXPECT_NE(message.find("256 MiB memory limit"), std::string::npos) << message;
}

TEST_F(MediaWorker, CpuTimeLimit) {
  WorkerLimits limits;
  limits.cpu_seconds = 1;
  limits.wall_seconds = 120;  // the CPU limit must be what stops it, even on a loaded machine
  const std::string message = failure("test-cpu", limits, ErrorCode::kResourceExhausted);
  EXPECT_NE(message.find("CPU time limit of 1 s"), std::string::npos) << message;
}

TEST_F(MediaWorker, WallClockLimit) {
  WorkerLimits limits;
  limits.wall_seconds = 0.3;
  const std::string message = failure("test-sleep", limits, ErrorCode::kResourceExhausted);
  EXPECT_NE(message.find("time limit of 0.3 s"), std::string::npos) << message;
}

TEST_F(MediaWorker, OutputLimit) {
  WorkerLimits limits;
  limits.output_bytes = 1 << 20;
  const std::string message = failure("test-flood", limits, ErrorCode::kResourceExhausted);
  EXPECT_NE(message.find("output limit of 1048576 bytes"), std::string::npos) << message;
}

TEST_F(MediaWorker, CrashesAreErrorsNamingTheSignal) {
  EXPECT_NE(failure("test-abort", {}, ErrorCode::kInternal).find("crashed (signal 6"),
            std::string::npos);
  const std::string segfault = failure("test-segfault", {}, ErrorCode::kInternal);
  // A sanitizer build's runtime catches SIGSEGV itself (and exits or aborts as its options say).
  if (worker_memory_limit_enforced()) {
    EXPECT_NE(segfault.find("crashed (signal 11"), std::string::npos) << segfault;
  }
}

TEST_F(MediaWorker, OutputWithoutItsEnd) {
  EXPECT_NE(failure("test-quit", {}, ErrorCode::kInternal).find("without finishing its output"),
            std::string::npos);
}

}  // namespace
}  // namespace qvl::media
