// The parent side of the media worker (media_worker.h): spawn, feed, collect, judge.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "media/worker_frames.h"
#include "media/worker_protocol.h"

namespace qvl::media {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Owns the child: whatever way the call ends, the child is killed (if still running) and reaped.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait_blocking();
    }
  }
  void kill() { ::kill(pid_, SIGKILL); }
  // The exit status once the child has ended, or -1 while it runs.
  bool try_wait(int& status) {
    pid_t r;
    do r = ::waitpid(pid_, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == pid_ || r < 0) {
      pid_ = -1;
      return true;
    }
    return false;
  }
  int wait_blocking() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
};

[[noreturn]] void fail_job(ErrorCode code, const std::string& label, const std::string& what) {
  fail(code, label + " " + what);
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

// This executable's path. Under qemu-user, /proc/self/exe is the emulator itself, while readlink
// (which qemu answers) names the program it runs; a binary replaced since it started still runs
// as itself through /proc/self/exe.
std::string own_executable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "/proc/self/exe";
  const std::string resolved(path, static_cast<size_t>(n));
  const std::string deleted = " (deleted)";
  if (resolved.size() >= deleted.size() &&
      resolved.compare(resolved.size() - deleted.size(), deleted.size(), deleted) == 0) {
    return "/proc/self/exe";
  }
  return resolved;
}

pid_t spawn_worker(const std::string& job, const WorkerLimits& limits, int child_socket) {
  std::vector<std::string> args = worker_argv(job, limits);
  args.insert(args.begin(), "qvl-media-worker");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_socket, 0);
  posix_spawn_file_actions_adddup2(&actions, child_socket, 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  // The server's threads may block or ignore signals; the worker starts with the defaults.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const std::string executable = own_executable();
  const int rc = posix_spawn(&pid, executable.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) fail(ErrorCode::kIo, std::string("cannot start the media worker: ") + strerror(rc));
  return pid;
}

// Why a child that ended without its done frame ended.
[[noreturn]] void fail_ended(const std::string& job, int status, const WorkerLimits& limits) {
  const std::string memory = std::to_string(limits.memory_bytes >> 20) + " MiB memory limit";
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == worker_exit::kOutOfMemory) {
      fail_job(ErrorCode::kResourceExhausted, job, "ran out of its " + memory);
    }
    if (code == worker_exit::kSetupFailed) {
      fail_job(ErrorCode::kInternal, job,
               "could not start its sandbox: setting its resource limits was refused (a seccomp "
               "filter without setrlimit/prlimit64?)");
    }
    fail_job(ErrorCode::kInternal, job,
             "ended without finishing its output (exit status " + std::to_string(code) + ")");
  }
  const int signal = WTERMSIG(status);
  if (signal == SIGXCPU || signal == SIGKILL) {
    fail_job(ErrorCode::kResourceExhausted, job,
             "used more than its CPU time limit of " + seconds_text(limits.cpu_seconds) + " s");
  }
  // Parser libraries abort() when an allocation fails, so an abort may be the memory limit.
  const std::string hint =
      signal == SIGABRT || signal == SIGSEGV ? " (or ran out of its " + memory + ")" : "";
  fail_job(ErrorCode::kInternal, job,
           "crashed (signal " + std::to_string(signal) + ": " + strsignal(signal) + ")" + hint);
}

}  // namespace

std::vector<WorkerFrame> run_worker_job(const std::string& job_name, std::string_view params,
                                        std::string_view input, const WorkerLimits& limits,
                                        const std::string& label) {
  // In messages: the caller's label or the job's name.
  const std::string job = label.empty() ? "media job '" + job_name + "'" : label;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(limits.wall_seconds));
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    fail(ErrorCode::kIo, std::string("cannot make the media worker's socket: ") + strerror(errno));
  }
  Fd mine(sockets[0]), theirs(sockets[1]);
  Child child(spawn_worker(job_name, limits, theirs.get()));
  theirs.reset();
  ::fcntl(mine.get(), F_SETFL, ::fcntl(mine.get(), F_GETFL) | O_NONBLOCK);

  std::string request;
  frames::put_u32(request, static_cast<uint32_t>(params.size()));
  request.append(params);
  frames::put_u64(request, input.size());
  // The input is sent from where it lies: header, then the caller's bytes.
  const std::string_view parts[2] = {request, input};
  size_t part = 0, sent = 0;
  bool input_closed = false;

  frames::FrameReader reader(limits.output_bytes);
  std::vector<WorkerFrame> out;
  bool done = false;
  char buffer[1 << 16];
  for (;;) {
    while (part < 2 && sent == parts[part].size()) {
      ++part;
      sent = 0;
    }
    if (part == 2 && !input_closed) {
      ::shutdown(mine.get(), SHUT_WR);
      input_closed = true;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      child.kill();
      fail_job(ErrorCode::kResourceExhausted, job,
               "took longer than its time limit of " + seconds_text(limits.wall_seconds) + " s");
    }
    pollfd p{mine.get(), static_cast<short>(POLLIN | (part < 2 ? POLLOUT : 0)), 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) fail(ErrorCode::kIo, "poll on the media worker failed");
    if (ready <= 0) continue;
    if (part < 2 && (p.revents & POLLOUT)) {
      const std::string_view chunk = parts[part].substr(sent);
      const ssize_t n = ::send(mine.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL);
      if (n > 0)
        sent += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR)
        part = 2;  // it stopped reading
    }
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = ::recv(mine.get(), buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;  // end of output (or the child is gone)
    if (done) fail_job(ErrorCode::kInternal, job, "wrote after its last frame");
    reader.append(buffer, static_cast<size_t>(n));
    for (;;) {
      std::optional<WorkerFrame> frame;
      try {
        frame = reader.next();
      } catch (const Error& e) {
        child.kill();
        fail_job(e.code(), job, e.what());
      }
      if (!frame) break;
      if (frame->tag == frames::kDoneTag) {
        done = true;
      } else if (frame->tag == frames::kErrorTag) {
        if (frame->bytes.empty()) fail_job(ErrorCode::kInternal, job, "sent an empty error");
        const auto code = static_cast<ErrorCode>(static_cast<uint8_t>(frame->bytes[0]));
        if (code > ErrorCode::kInternal) fail_job(ErrorCode::kInternal, job, "sent a bad error");
        fail(code, frame->bytes.substr(1));
      } else if (frame->tag < 0x80) {
        out.push_back(std::move(*frame));
      } else {
        fail_job(ErrorCode::kInternal, job, "sent a frame with an unknown tag");
      }
    }
  }
  // The output ended: the child exits now (or was killed); wait for it within the deadline.
  int status = 0;
  while (!child.try_wait(status)) {
    if (Clock::now() >= deadline) {
      child.kill();
      fail_job(ErrorCode::kResourceExhausted, job,
               "took longer than its time limit of " + seconds_text(limits.wall_seconds) + " s");
    }
    ::poll(nullptr, 0, 5);
  }
  if (!done || reader.pending()) fail_ended(job, status, limits);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_ended(job, status, limits);
  return out;
}

}  // namespace qvl::media
