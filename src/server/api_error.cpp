#include "server/api_error.h"

#include <utility>

namespace qvl::server {

ApiError::ApiError(int status, std::string type, std::string message, std::string param,
                   std::string code)
    : status_(status),
      type_(std::move(type)),
      message_(std::move(message)),
      param_(std::move(param)),
      code_(std::move(code)) {}

nlohmann::json ApiError::to_json() const {
  nlohmann::json error = {{"message", message_}, {"type", type_}};
  error["param"] = param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_);
  error["code"] = code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_);
  return {{"error", error}};
}

void fail_request(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, "invalid_request_error", message, param, code);
}

ApiError api_error_from(const Error& error) {
  switch (error.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kCorrupt:
    case ErrorCode::kNotFound:
      return ApiError(400, "invalid_request_error", error.what(), "", "invalid_value");
    case ErrorCode::kUnsupported:
      return ApiError(400, "invalid_request_error", error.what(), "", "unsupported_value");
    case ErrorCode::kResourceExhausted:
      return ApiError(400, "invalid_request_error", error.what(), "", "limit_exceeded");
    case ErrorCode::kCancelled:
      return ApiError(499, "cancelled", error.what(), "", "cancelled");
    case ErrorCode::kIo:
    case ErrorCode::kInternal:
      break;
  }
  return ApiError(500, "server_error", std::string("internal error: ") + error.what(), "",
                  "internal_error");
}

}  // namespace qvl::server
