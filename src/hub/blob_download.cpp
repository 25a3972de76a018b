#include "hub/blob_download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "hub/download_progress.h"
#include "hub/http_client.h"
#include "hub/sha256.h"

namespace qvl::hub {
namespace {
namespace fs = std::filesystem;

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void fail_errno(const std::string& what, const std::string& path, int error) {
  if (error == ENOSPC || error == EDQUOT) {
    fail(ErrorCode::kResourceExhausted, "disk full while writing " + path +
                                            ": free some space and run the command again (the "
                                            "partial download is kept and will be resumed)");
  }
  fail(ErrorCode::kIo, what + " " + path + ": " + std::strerror(error));
}

// Holds an exclusive flock, the same kind Python's filelock takes on these lock files.
FileDescriptor lock_file(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  FileDescriptor fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail_errno("cannot open lock file", path, errno);
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) fail_errno("cannot lock", path, errno);
  }
  return fd;
}

int64_t file_size_or_zero(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 ? static_cast<int64_t>(info.st_size) : 0;
}

void write_all(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail_errno("cannot write", path, errno);
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

// One GET appending to the .incomplete file; returns the transport outcome.
HttpResponse fetch_into(const BlobDownload& download, const std::string& incomplete,
                        int64_t& on_disk, Sha256& hash, const BlobProgress& progress) {
  FileDescriptor fd(::open(incomplete.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail_errno("cannot create", incomplete, errno);
  HttpRequest request;
  request.url = download.url;
  request.bearer_token = download.bearer_token;
  request.range_start = on_disk > 0 ? on_disk : -1;
  bool first_chunk = true;
  request.sink = [&](long status, const char* data, size_t size) {
    if (first_chunk && on_disk > 0 && status != 206) {
      // The server ignored the Range and sends everything: start the file over.
      if (::ftruncate(fd.get(), 0) != 0) fail_errno("cannot truncate", incomplete, errno);
      on_disk = 0;
      hash = Sha256();
      if (progress.on_start) progress.on_start(0);
    }
    first_chunk = false;
    if (download.expected_size >= 0 &&
        on_disk + static_cast<int64_t>(size) > download.expected_size) {
      fail(ErrorCode::kCorrupt, "the hub sent more than the expected " +
                                    std::to_string(download.expected_size) + " bytes for " +
                                    download.context.file);
    }
    write_all(fd.get(), data, size, incomplete);
    if (!download.expected_sha256.empty()) hash.update(data, size);
    on_disk += static_cast<int64_t>(size);
    if (progress.on_bytes) progress.on_bytes(on_disk);
    return true;
  };
  HttpResponse response = http_request(request);
  if (::fsync(fd.get()) != 0) fail_errno("cannot flush", incomplete, errno);
  return response;
}

}  // namespace

void check_free_space(const std::string& folder, int64_t bytes_needed) {
  struct statvfs info;
  if (bytes_needed <= 0 || ::statvfs(folder.c_str(), &info) != 0) return;
  const auto available = static_cast<int64_t>(info.f_bavail) * static_cast<int64_t>(info.f_frsize);
  if (available < bytes_needed) {
    fail(ErrorCode::kResourceExhausted,
         "not enough disk space in " + folder + ": the download needs " +
             DownloadProgress::format_bytes(static_cast<double>(bytes_needed)) + " but only " +
             DownloadProgress::format_bytes(static_cast<double>(available)) +
             " are free. Free some space or point HF_HUB_CACHE at a larger disk.");
  }
}

BlobResult download_blob(const BlobDownload& download, const BlobProgress& progress) {
  const FileDescriptor lock = lock_file(download.lock_path);
  std::error_code ec;
  if (fs::is_regular_file(download.blob_path, ec) &&
      (download.expected_size < 0 ||
       file_size_or_zero(download.blob_path) == download.expected_size)) {
    return {};  // another process finished it while we waited for the lock
  }
  fs::create_directories(fs::path(download.blob_path).parent_path(), ec);
  if (ec) fail(ErrorCode::kIo, "cannot create " + download.blob_path + ": " + ec.message());

  const std::string incomplete = download.blob_path + ".incomplete";
  int64_t fetched = 0;
  for (int attempt = 1;; ++attempt) {
    int64_t on_disk = file_size_or_zero(incomplete);
    if (download.expected_size >= 0 && on_disk > download.expected_size) {
      fs::remove(incomplete, ec);  // cannot be a prefix of the right file
      on_disk = 0;
    }
    Sha256 hash;
    if (!download.expected_sha256.empty() && on_disk > 0) {
      sha256_update_from_file(hash, incomplete, on_disk);
    }
    if (progress.on_start) progress.on_start(on_disk);
    const int64_t before = on_disk;
    HttpResponse response;
    if (download.expected_size < 0 || on_disk < download.expected_size) {
      response = fetch_into(download, incomplete, on_disk, hash, progress);
    } else {
      response.status = 200;  // everything is already on disk; only verification is left
    }
    fetched += on_disk > before ? on_disk - before : 0;

    if (response.failure == TransportFailure::kInterrupted && attempt < download.max_attempts) {
      continue;  // resume from what arrived
    }
    if (response.failure == TransportFailure::kNone && response.status == 416 &&
        attempt < download.max_attempts) {
      fs::remove(incomplete, ec);  // our partial file does not match the server's
      continue;
    }
    check_hub_response(response, download.context);
    if (response.status < 200 || response.status >= 300) {
      fail(ErrorCode::kIo,
           "unexpected HTTP " + std::to_string(response.status) + " for " + download.url);
    }

    if (download.expected_size >= 0 && on_disk != download.expected_size) {
      if (attempt < download.max_attempts) continue;
      fail(ErrorCode::kCorrupt, "size mismatch for " + download.context.file + ": expected " +
                                    std::to_string(download.expected_size) + " bytes, got " +
                                    std::to_string(on_disk) + "; run the command again to resume");
    }
    if (!download.expected_sha256.empty()) {
      const std::string actual = hash.hex_digest();
      if (actual != download.expected_sha256) {
        fs::remove(incomplete, ec);  // the bytes are wrong; resuming would keep them wrong
        fail(ErrorCode::kCorrupt, "checksum mismatch for " + download.context.file +
                                      ": expected sha256 " + download.expected_sha256 + ", got " +
                                      actual + ". The download was discarded; try again.");
      }
    }
    if (::rename(incomplete.c_str(), download.blob_path.c_str()) != 0) {
      fail_errno("cannot rename to", download.blob_path, errno);
    }
    return {true, fetched};
  }
}

}  // namespace qvl::hub
