// Fetches one file into the cache as blobs/<etag>: streams into blobs/<etag>.incomplete, resumes
// a partial file with a Range request, verifies size and sha256, and only then renames it to its
// final name, so a killed or failed download never leaves a file that looks complete.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "hub/hub_errors.h"

namespace qvl::hub {

struct BlobDownload {
  std::string url;
  std::string bearer_token;
  std::string blob_path;        // final name
  std::string lock_path;        // shared with huggingface_hub's per-blob locks
  int64_t expected_size = -1;   // -1 when unknown
  std::string expected_sha256;  // empty when unknown (small non-LFS files)
  int max_attempts = 3;         // connection drops are retried by resuming
  HubRequestContext context;    // for error messages
};

// Called with the bytes of the file on disk so far; `resumed_from` is set once per attempt.
struct BlobProgress {
  std::function<void(int64_t resumed_from)> on_start;
  std::function<void(int64_t done)> on_bytes;
};

struct BlobResult {
  bool downloaded = false;    // false: another process finished the blob while we waited
  int64_t bytes_fetched = 0;  // over the network, this call (resumed bytes not counted)
};

// Throws qvl::Error on failure; blob_path exists with verified content on return.
BlobResult download_blob(const BlobDownload& download, const BlobProgress& progress);

// Throws a kResourceExhausted error when the file system holding `folder` has less than
// `bytes_needed` bytes available.
void check_free_space(const std::string& folder, int64_t bytes_needed);

}  // namespace qvl::hub
