#include "hub/hub_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "hub/model_spec.h"

namespace qvl::hub {
namespace fs = std::filesystem;

namespace {

std::string unique_temp_name(const std::string& path) {
  static std::atomic<int> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter);
}

void create_parent_dirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) fail(ErrorCode::kIo, "cannot create folder for " + path + ": " + ec.message());
}

}  // namespace

std::string HubCache::repo_folder_name(const std::string& repo) {
  std::string name = "models--";
  for (char c : repo) {
    if (c == '/') {
      name += "--";
    } else {
      name += c;
    }
  }
  return name;
}

std::string HubCache::repo_dir(const std::string& repo) const {
  return root_ + "/" + repo_folder_name(repo);
}

std::string HubCache::blob_path(const std::string& repo, const std::string& etag) const {
  return repo_dir(repo) + "/blobs/" + etag;
}

std::string HubCache::incomplete_blob_path(const std::string& repo, const std::string& etag) const {
  return blob_path(repo, etag) + ".incomplete";
}

std::string HubCache::lock_path(const std::string& repo, const std::string& etag) const {
  return root_ + "/.locks/" + repo_folder_name(repo) + "/" + etag + ".lock";
}

std::string HubCache::snapshot_dir(const std::string& repo, const std::string& commit) const {
  return repo_dir(repo) + "/snapshots/" + commit;
}

std::string HubCache::snapshot_file(const std::string& repo, const std::string& commit,
                                    const std::string& file) const {
  return snapshot_dir(repo, commit) + "/" + file;
}

std::optional<std::string> HubCache::read_ref(const std::string& repo,
                                              const std::string& revision) const {
  std::ifstream in(repo_dir(repo) + "/refs/" + revision);
  std::string commit;
  if (!in || !(in >> commit) || !is_commit_hash(commit)) return std::nullopt;
  return commit;
}

void HubCache::write_ref(const std::string& repo, const std::string& revision,
                         const std::string& commit) const {
  if (revision == commit) return;
  if (!is_safe_repo_path(revision)) fail(ErrorCode::kInvalidArgument, "bad revision " + revision);
  write_file_atomically(repo_dir(repo) + "/refs/" + revision, commit);
}

std::optional<std::string> HubCache::local_commit(const std::string& repo,
                                                  const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  return read_ref(repo, revision);
}

bool HubCache::has_blob(const std::string& repo, const std::string& etag, int64_t size) const {
  std::error_code ec;
  const fs::path path = blob_path(repo, etag);
  if (!fs::is_regular_file(path, ec)) return false;
  const auto actual = fs::file_size(path, ec);
  return !ec && (size < 0 || actual == static_cast<uintmax_t>(size));
}

bool HubCache::has_snapshot_file(const std::string& repo, const std::string& commit,
                                 const std::string& file) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot_file(repo, commit, file), ec);
}

void HubCache::link_snapshot_file(const std::string& repo, const std::string& commit,
                                  const std::string& file, const std::string& etag) const {
  if (!is_safe_repo_path(file)) fail(ErrorCode::kCorrupt, "unsafe file name from hub: " + file);
  // snapshots/<commit>/<a/b/file> climbs one level per folder in the file name, plus two.
  std::string target;
  for (char c : file) {
    if (c == '/') target += "../";
  }
  target += "../../blobs/" + etag;
  const std::string link = snapshot_file(repo, commit, file);
  std::error_code ec;
  if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec) == target && !ec) return;
  create_parent_dirs(link);
  const std::string temp = unique_temp_name(link);
  if (::symlink(target.c_str(), temp.c_str()) != 0) {
    fail(ErrorCode::kIo, "cannot create link " + temp + ": " + std::strerror(errno));
  }
  if (::rename(temp.c_str(), link.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail(ErrorCode::kIo, "cannot rename " + temp + " to " + link + ": " + std::strerror(error));
  }
}

void write_file_atomically(const std::string& path, const std::string& content) {
  create_parent_dirs(path);
  const std::string temp = unique_temp_name(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      const int error = errno;
      out.close();
      ::unlink(temp.c_str());
      fail(error == ENOSPC ? ErrorCode::kResourceExhausted : ErrorCode::kIo,
           "cannot write " + temp + ": " + std::strerror(error));
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail(ErrorCode::kIo, "cannot rename " + temp + " to " + path + ": " + std::strerror(error));
  }
}

}  // namespace qvl::hub
