// The hub's HTTP API: which commit a revision points to, which files the repository has, and
// each file's cache identity (etag) and size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/model_spec.h"

namespace qvl::hub {

struct RepoFile {
  std::string name;    // path inside the repository
  int64_t size = -1;   // bytes of the real content (for LFS files, not the pointer); -1 unknown
  std::string etag;    // blob name in the cache: sha256 for LFS files, git blob sha1 otherwise
  std::string sha256;  // content hash, known for LFS files only
};

struct RepoInfo {
  std::string commit;  // 40-hex sha the revision resolved to
  std::vector<RepoFile> files;

  const RepoFile* find(const std::string& name) const;
};

class HubClient {
 public:
  HubClient(std::string endpoint, std::string token)
      : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

  const std::string& endpoint() const { return endpoint_; }
  const std::string& token() const { return token_; }

  // GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true: the commit and the file
  // listing with sizes and etags.
  RepoInfo repo_info(const HubModelId& id) const;
  // HEAD {endpoint}/{repo}/resolve/{commit}/{file} without following the CDN redirect, reading
  // X-Linked-Etag / ETag, X-Linked-Size / Content-Length and X-Repo-Commit; for listings that
  // lack per-file metadata.
  RepoFile file_metadata(const std::string& repo, const std::string& commit,
                         const std::string& file) const;
  // {endpoint}/{repo}/resolve/{revision}/{file}
  std::string file_url(const std::string& repo, const std::string& revision,
                       const std::string& file) const;

 private:
  std::string endpoint_;
  std::string token_;
};

// Strips the weak-validator prefix and the quotes from an ETag header value, as huggingface_hub
// does before naming blobs after it.
std::string normalize_etag(const std::string& etag);

}  // namespace qvl::hub
