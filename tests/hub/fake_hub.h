// An in-process stand-in for the Hugging Face hub on a loopback port, for tests: the repository
// info API, /resolve/ URLs with the hub's headers, LFS redirects to a "/cdn/" path, a bearer
// token check, and fault injection (dropped connection mid-file, wrong advertised sha256).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace qvl::testing {

struct FakeFile {
  std::string name;
  std::string content;
  bool lfs = false;  // served through a redirect to /cdn/<sha256>, like large hub files
};

struct FakeRequest {
  std::string method;
  std::string path;
  std::string range;          // Range header, empty when absent
  std::string authorization;  // Authorization header, empty when absent
};

// A tiny synthetic model repository: configs, tokenizer, chat template, a safetensors index and
// two LFS shards of `shard_bytes` pseudo-random bytes each, plus files qvl must not fetch
// (README.md, an ONNX export, a stray shard not in the index).
std::vector<FakeFile> make_tiny_model_files(size_t shard_bytes);

class FakeHub {
 public:
  // Starts serving on 127.0.0.1 at a free port chosen by the OS.
  FakeHub();
  ~FakeHub();
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  std::string endpoint() const;  // "http://127.0.0.1:<port>"

  // Adds a repository whose branch "main" points at `commit`.
  void add_repo(const std::string& repo, const std::string& commit, std::vector<FakeFile> files);
  // Non-empty: every hub request (not /cdn/) needs "Authorization: Bearer <token>".
  void require_token(const std::string& token);
  // The next GET of this file's content without a Range header sends half and closes.
  void drop_connection_once(const std::string& file);
  // The listing and headers advertise a sha256 that does not match this file's content.
  void advertise_wrong_sha256(const std::string& file);
  // The listing omits per-file sizes and hashes, so clients must ask with HEAD.
  void omit_file_metadata(bool omit);

  // Requests for `old_repo` get a 307 with a relative Location to `new_repo`, as the hub does
  // for renamed repositories.
  void rename_repo(const std::string& old_repo, const std::string& new_repo);

  std::vector<FakeRequest> requests() const;
  void clear_requests();
  // Requests for file content (resolve GETs of small files and /cdn/ GETs).
  int content_requests() const;

  // The etag the hub uses for a file: sha256 for LFS files, a 40-hex stand-in for the git blob
  // sha1 otherwise.
  static std::string etag_of(const FakeFile& file);

 private:
  struct Repo {
    std::string commit;
    std::vector<FakeFile> files;
  };
  void install_routes();
  std::string advertised_sha256(const FakeFile& file) const;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_ = false;  // listen_after_bind ended (it failed, or stop())
  int port_ = 0;
  mutable std::mutex mutex_;
  std::map<std::string, Repo> repos_;
  std::map<std::string, std::string> cdn_;  // advertised sha256 -> content
  std::string token_;
  std::map<std::string, bool> drop_once_;
  std::map<std::string, bool> wrong_sha_;
  bool omit_metadata_ = false;
  std::map<std::string, std::string> renamed_;  // old repo -> new repo
  std::vector<FakeRequest> requests_;
};

}  // namespace qvl::testing
