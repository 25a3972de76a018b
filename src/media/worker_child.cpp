// The child side of the media worker (media_worker.h): limits first, then input, then the job.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "base/error.h"
#include "media/media_worker.h"
#include "media/worker_frames.h"
#include "media/worker_protocol.h"

namespace qvl::media {
namespace {

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(worker_exit::kOutputClosed);  // the parent gave up on us
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(worker_exit::kBadInput);
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Whether the sanitizers' shadow memory is in this build (it cannot live under the limit).
constexpr bool sanitizer_build() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// qemu-user accepts setrlimit(RLIMIT_AS) and ignores it (the emulator's own allocations share the
// guest's address space), so a limit only counts if it reads back as set. The probe raises an
// unlimited soft limit to 2^62 bytes, beyond any address space, and puts it back.
bool address_space_limit_takes_effect() {
  rlimit old{};
  if (::getrlimit(RLIMIT_AS, &old) != 0) return false;
  if (old.rlim_cur != RLIM_INFINITY) return true;  // already limited: by the kernel
  rlimit probe = old;
  probe.rlim_cur = rlim_t{1} << 62;
  if (::setrlimit(RLIMIT_AS, &probe) != 0) return false;
  rlimit seen{};
  const bool applied = ::getrlimit(RLIMIT_AS, &seen) == 0 && seen.rlim_cur == probe.rlim_cur;
  ::setrlimit(RLIMIT_AS, &old);
  return applied;
}

void set_limit(int resource, rlim_t soft, rlim_t hard) {
  const rlimit limit{soft, hard};
  if (::setrlimit(resource, &limit) != 0) std::_Exit(worker_exit::kSetupFailed);
}

// Before any untrusted byte is read: die with the parent, no inherited descriptors beyond the
// socket, no core files, no file writes, and the memory and CPU limits.
void confine(const WorkerArgs& args) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != args.parent_pid) std::_Exit(worker_exit::kSetupFailed);
  ::close_range(3, ~0U, 0);
  set_limit(RLIMIT_CORE, 0, 0);
  ::signal(SIGXFSZ, SIG_IGN);  // a write to a file fails with EFBIG rather than killing the job
  set_limit(RLIMIT_FSIZE, 0, 0);
  const auto cpu = static_cast<rlim_t>(args.cpu_seconds);
  set_limit(RLIMIT_CPU, cpu, cpu + 1);
  if (!sanitizer_build()) {
    set_limit(RLIMIT_AS, static_cast<rlim_t>(args.memory_bytes),
              static_cast<rlim_t>(args.memory_bytes));
  }
}

void write_error(WorkerOutput& out, ErrorCode code, const char* message) {
  const char code_byte = static_cast<char>(code);
  out.write(frames::kErrorTag, std::string_view(&code_byte, 1), message);
}

[[noreturn]] void worker_main(const WorkerArgs& args) {
  confine(args);
  char length[8];
  read_all(0, length, 4);
  std::string params(frames::get_u32(length), '\0');
  read_all(0, params.data(), params.size());
  read_all(0, length, 8);
  std::string input(frames::get_u64(length), '\0');
  read_all(0, input.data(), input.size());

  WorkerOutput out(1);
  const WorkerJob job = find_worker_job(args.job);
  try {
    if (!job) fail(ErrorCode::kInternal, "no media job named '" + args.job + "'");
    job(params, input, out);
  } catch (const std::bad_alloc&) {
    std::_Exit(worker_exit::kOutOfMemory);  // nothing more can be allocated to report it
  } catch (const Error& e) {
    write_error(out, e.code(), e.what());
    std::_Exit(0);
  } catch (const std::exception& e) {
    write_error(out, ErrorCode::kInternal, e.what());
    std::_Exit(0);
  }
  out.write(frames::kDoneTag, {});
  std::_Exit(0);
}

}  // namespace

void WorkerOutput::write(uint8_t tag, std::string_view head, std::string_view body) {
  const uint64_t length = head.size() + body.size();
  if (length > UINT32_MAX) fail(ErrorCode::kResourceExhausted, "a media frame above 4 GiB");
  const std::string prefix = frames::header(tag, static_cast<uint32_t>(length));
  write_all(fd_, prefix.data(), prefix.size());
  write_all(fd_, head.data(), head.size());
  write_all(fd_, body.data(), body.size());
}

bool worker_memory_limit_enforced() {
  static const bool enforced = !sanitizer_build() && address_space_limit_takes_effect();
  return enforced;
}

bool run_worker_if_requested(int argc, char** argv) {
  const auto args = parse_worker_args(argc, argv);
  if (!args) return false;
  worker_main(*args);
}

}  // namespace qvl::media
