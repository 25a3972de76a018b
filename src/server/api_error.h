// OpenAI-style error objects: {"error":{"message","type","param","code"}} plus the HTTP status.
// Every 4xx the server sends is one of these, and its message says what to change.
#pragma once

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"

namespace qvl::server {

class ApiError : public std::exception {
 public:
  ApiError(int status, std::string type, std::string message, std::string param = {},
           std::string code = {});

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& message() const { return message_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

  // The response body; empty param / code become JSON null as OpenAI sends them.
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string type_;
  std::string message_;
  std::string param_;
  std::string code_;
};

// 400 invalid_request_error about one request field (`param` is its JSON path, e.g.
// "messages[0].content").
[[noreturn]] void fail_request(const std::string& param, const std::string& message,
                               const std::string& code = "invalid_value");

// Maps an engine error to the status the client should see (bad input 400, limits 400,
// cancellation 499, the rest 500).
ApiError api_error_from(const Error& error);

}  // namespace qvl::server
