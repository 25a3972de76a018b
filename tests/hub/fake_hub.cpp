#include "hub/fake_hub.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "hub/sha256.h"

namespace qvl::testing {
namespace {

void send_error(httplib::Response& res, int status, const std::string& error_code,
                const std::string& message) {
  res.status = status;
  if (!error_code.empty()) res.set_header("X-Error-Code", error_code);
  res.set_header("X-Error-Message", message);
  res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
}

// Serves `content`, or only its first half and then closes the connection.
void send_content(httplib::Response& res, const std::string& content, bool drop_halfway) {
  if (!drop_halfway) {
    res.set_content(content, "application/octet-stream");  // httplib answers Range requests
    return;
  }
  auto data = std::make_shared<std::string>(content);
  res.set_content_provider(data->size(), "application/octet-stream",
                           [data](size_t offset, size_t, httplib::DataSink& sink) {
                             const size_t half = data->size() / 2;
                             if (offset < half) sink.write(data->data() + offset, half - offset);
                             return false;  // abort: the client sees a short body
                           });
}

// Appending instead of operator+ chains avoids a GCC 12 -Wrestrict false positive.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  out.append(text);
  out.push_back('"');
  return out;
}

std::string pseudo_random_bytes(size_t size, uint32_t seed) {
  std::string bytes(size, '\0');
  uint32_t state = seed;
  for (char& byte : bytes) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<char>(state >> 24);
  }
  return bytes;
}

}  // namespace

std::vector<FakeFile> make_tiny_model_files(size_t shard_bytes) {
  const nlohmann::json index = {
      {"metadata", {{"total_size", 2 * shard_bytes}}},
      {"weight_map",
       {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
        {"model.layers.0.mlp.up_proj.weight", "model-00001-of-00002.safetensors"},
        {"model.norm.weight", "model-00002-of-00002.safetensors"}}}};
  return {
      {"config.json", R"({"model_type": "qwen3_vl", "tie_word_embeddings": true})", false},
      {"generation_config.json", R"({"temperature": 0.7, "top_p": 0.8})", false},
      {"preprocessor_config.json", R"({"patch_size": 16, "merge_size": 2})", false},
      {"tokenizer.json", R"({"version": "1.0", "model": {"type": "BPE"}})", false},
      {"tokenizer_config.json", R"({"model_max_length": 262144})", false},
      {"chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}", false},
      {"model.safetensors.index.json", index.dump(2), false},
      {"model-00001-of-00002.safetensors", pseudo_random_bytes(shard_bytes, 1), true},
      {"model-00002-of-00002.safetensors", pseudo_random_bytes(shard_bytes, 2), true},
      {"model-00003-of-00002.safetensors", pseudo_random_bytes(shard_bytes, 3), true},
      {"onnx/model.onnx", pseudo_random_bytes(shard_bytes, 4), true},
      {"README.md", "# tiny model\n", false},
  };
}

FakeHub::FakeHub() : server_(std::make_unique<httplib::Server>()) {
  install_routes();
  port_ = server_->bind_to_any_port("127.0.0.1");
  // The socket listens from here on, so clients can connect before the thread starts accepting.
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
  // httplib's stop() does nothing until the server runs: a test that ends before the thread got
  // there would leave it accepting forever and the destructor's join waiting for it.
  while (!server_->is_running() && !listen_returned_)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeHub::~FakeHub() {
  server_->stop();
  thread_.join();
}

std::string FakeHub::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::string FakeHub::etag_of(const FakeFile& file) {
  if (file.lfs) return hub::sha256_hex(file.content);
  const std::string git_blob = "blob " + std::to_string(file.content.size()) + '\0' + file.content;
  return hub::sha256_hex(git_blob).substr(0, 40);
}

std::string FakeHub::advertised_sha256(const FakeFile& file) const {
  const std::string real = etag_of(file);
  return wrong_sha_.count(file.name) ? hub::sha256_hex(real) : real;
}

void FakeHub::add_repo(const std::string& repo, const std::string& commit,
                       std::vector<FakeFile> files) {
  std::lock_guard lock(mutex_);
  repos_[repo] = Repo{commit, std::move(files)};
}

void FakeHub::require_token(const std::string& token) {
  std::lock_guard lock(mutex_);
  token_ = token;
}

void FakeHub::drop_connection_once(const std::string& file) {
  std::lock_guard lock(mutex_);
  drop_once_[file] = true;
}

void FakeHub::advertise_wrong_sha256(const std::string& file) {
  std::lock_guard lock(mutex_);
  wrong_sha_[file] = true;
}

void FakeHub::omit_file_metadata(bool omit) {
  std::lock_guard lock(mutex_);
  omit_metadata_ = omit;
}

void FakeHub::rename_repo(const std::string& old_repo, const std::string& new_repo) {
  std::lock_guard lock(mutex_);
  renamed_[old_repo] = new_repo;
}

std::vector<FakeRequest> FakeHub::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void FakeHub::clear_requests() {
  std::lock_guard lock(mutex_);
  requests_.clear();
}

int FakeHub::content_requests() const {
  std::lock_guard lock(mutex_);
  int count = 0;
  for (const FakeRequest& request : requests_) {
    const bool resolve = request.path.find("/resolve/") != std::string::npos;
    if (request.method == "GET" && (resolve || request.path.rfind("/cdn/", 0) == 0)) ++count;
  }
  return count;
}

void FakeHub::install_routes() {
  using httplib::Request;
  using httplib::Response;
  server_->set_pre_routing_handler([this](const Request& req, Response& res) {
    std::lock_guard lock(mutex_);
    requests_.push_back({req.method, req.path, req.get_header_value("Range"),
                         req.get_header_value("Authorization")});
    const bool needs_token = !token_.empty() && req.path.rfind("/cdn/", 0) != 0;
    if (needs_token && req.get_header_value("Authorization") != "Bearer " + token_) {
      send_error(res, 401, "", "Invalid credentials in Authorization header");
      return httplib::Server::HandlerResponse::Handled;
    }
    for (const auto& [old_repo, new_repo] : renamed_) {
      for (const std::string prefix : {"/api/models/", "/"}) {
        if (req.path.rfind(prefix + old_repo + "/", 0) != 0) continue;
        res.status = 307;
        res.set_header("Location",
                       prefix + new_repo + req.path.substr(prefix.size() + old_repo.size()));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server_->Get(
      R"(/api/models/([^/]+)/([^/]+)/revision/(.+))", [this](const Request& req, Response& res) {
        std::lock_guard lock(mutex_);
        const auto repo = repos_.find(req.matches[1].str() + "/" + req.matches[2].str());
        if (repo == repos_.end())
          return send_error(res, 404, "RepoNotFound", "Repository not found");
        const std::string revision = req.matches[3];
        if (revision != "main" && revision != repo->second.commit) {
          return send_error(res, 404, "RevisionNotFound", "Invalid rev id: " + revision);
        }
        const bool blobs = req.get_param_value("blobs") == "true" && !omit_metadata_;
        nlohmann::json siblings = nlohmann::json::array();
        for (const FakeFile& file : repo->second.files) {
          nlohmann::json sibling = {{"rfilename", file.name}};
          if (blobs) {
            sibling["size"] = file.content.size();
            sibling["blobId"] = hub::sha256_hex(file.name).substr(0, 40);  // LFS: the pointer's id
            if (!file.lfs) sibling["blobId"] = etag_of(file);
            if (file.lfs) {
              sibling["lfs"] = {{"sha256", advertised_sha256(file)},
                                {"size", file.content.size()},
                                {"pointerSize", 134}};
            }
          }
          siblings.push_back(sibling);
        }
        const nlohmann::json body = {{"id", repo->first},
                                     {"sha", repo->second.commit},
                                     {"private", !token_.empty()},
                                     {"siblings", siblings}};
        res.set_content(body.dump(), "application/json");
      });

  server_->Get(
      R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))", [this](const Request& req, Response& res) {
        std::lock_guard lock(mutex_);
        const auto repo = repos_.find(req.matches[1].str() + "/" + req.matches[2].str());
        if (repo == repos_.end())
          return send_error(res, 404, "RepoNotFound", "Repository not found");
        const std::string revision = req.matches[3];
        if (revision != "main" && revision != repo->second.commit) {
          return send_error(res, 404, "RevisionNotFound", "Invalid rev id: " + revision);
        }
        const std::string name = req.matches[4];
        for (const FakeFile& file : repo->second.files) {
          if (file.name != name) continue;
          res.set_header("X-Repo-Commit", repo->second.commit);
          if (!file.lfs) {
            res.set_header("ETag", quoted(etag_of(file)));
            return send_content(res, file.content, false);
          }
          const std::string sha = advertised_sha256(file);
          cdn_[sha] = file.name;
          res.status = 302;
          res.set_header("ETag", quoted(hub::sha256_hex(file.name).substr(0, 40)));
          res.set_header("X-Linked-Etag", quoted(sha));
          res.set_header("X-Linked-Size", std::to_string(file.content.size()));
          res.set_header("Location", "/cdn/" + sha + "?sig=fake");
          return;
        }
        send_error(res, 404, "EntryNotFound", name + " does not exist on \"" + revision + "\"");
      });

  server_->Get(R"(/cdn/([0-9a-f]+))", [this](const Request& req, Response& res) {
    std::lock_guard lock(mutex_);
    const auto entry = cdn_.find(req.matches[1]);
    if (entry == cdn_.end()) return send_error(res, 404, "", "no such object");
    for (const auto& [repo_name, repo] : repos_) {
      for (const FakeFile& file : repo.files) {
        if (file.name != entry->second || advertised_sha256(file) != entry->first) continue;
        bool drop = false;
        if (!req.has_header("Range") && drop_once_[file.name]) {
          drop_once_[file.name] = false;
          drop = true;
        }
        return send_content(res, file.content, drop);
      }
    }
    send_error(res, 404, "", "no such object");
  });
}

}  // namespace qvl::testing
