// The Hugging Face hub cache on disk, in huggingface_hub's own layout:
//   <cache>/models--Org--Name/refs/<revision>            text file holding the commit sha
//   <cache>/models--Org--Name/blobs/<etag>               file contents (sha256 for LFS files,
//                                                        git blob sha1 for small files)
//   <cache>/models--Org--Name/blobs/<etag>.incomplete    a download in progress (resumable)
//   <cache>/models--Org--Name/snapshots/<commit>/<file>  relative symlink to ../../blobs/<etag>
//   <cache>/.locks/models--Org--Name/<etag>.lock         per-blob lock shared with Python
#pragma once

#include <optional>
#include <string>

namespace qvl::hub {

class HubCache {
 public:
  explicit HubCache(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  // "Org/Name" -> "models--Org--Name".
  static std::string repo_folder_name(const std::string& repo);

  std::string repo_dir(const std::string& repo) const;
  std::string blob_path(const std::string& repo, const std::string& etag) const;
  std::string incomplete_blob_path(const std::string& repo, const std::string& etag) const;
  std::string lock_path(const std::string& repo, const std::string& etag) const;
  std::string snapshot_dir(const std::string& repo, const std::string& commit) const;
  std::string snapshot_file(const std::string& repo, const std::string& commit,
                            const std::string& file) const;

  // The commit stored in refs/<revision>, if any and well-formed.
  std::optional<std::string> read_ref(const std::string& repo, const std::string& revision) const;
  // Writes refs/<revision> atomically (no-op when the revision is itself a commit sha).
  void write_ref(const std::string& repo, const std::string& revision,
                 const std::string& commit) const;
  // The commit a revision means locally: the revision itself when it is a commit sha, else the
  // content of refs/<revision>.
  std::optional<std::string> local_commit(const std::string& repo,
                                          const std::string& revision) const;

  // True when blobs/<etag> exists with exactly `size` bytes (size < 0: any size).
  bool has_blob(const std::string& repo, const std::string& etag, int64_t size) const;
  // True when snapshots/<commit>/<file> exists and resolves to a regular file.
  bool has_snapshot_file(const std::string& repo, const std::string& commit,
                         const std::string& file) const;
  // Points snapshots/<commit>/<file> at its blob with a relative symlink, replacing whatever was
  // there atomically.
  void link_snapshot_file(const std::string& repo, const std::string& commit,
                          const std::string& file, const std::string& etag) const;

 private:
  std::string root_;
};

// Writes `content` to a temporary file next to `path`, then renames it over `path`, so readers
// see either the old or the new file, never a partial one.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace qvl::hub
