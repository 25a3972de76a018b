// Errors: qvl reports failures by throwing qvl::Error, which carries a category so that callers
// (CLI exit codes, HTTP status codes) can react without parsing messages.
#pragma once

#include <stdexcept>
#include <string>

namespace qvl {

enum class ErrorCode {
  kInvalidArgument,    // the caller passed something malformed (HTTP 400)
  kNotFound,           // a file, tensor or key does not exist (HTTP 404 / 400)
  kCorrupt,            // data on disk or on the wire is damaged or inconsistent
  kUnsupported,        // well-formed but not something qvl handles
  kResourceExhausted,  // a size or count limit was hit (HTTP 413 / 429)
  kCancelled,          // the request was cancelled by its client or a deadline
  kIo,                 // the operating system refused (open, read, mmap)
  kInternal,           // a bug in qvl
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) {
  throw Error(code, message);
}

}  // namespace qvl

// Internal invariant check that stays on in release builds; failures are bugs, not user errors.
#define QVL_CHECK(cond)                                                                        \
  do {                                                                                         \
    if (!(cond))                                                                               \
      ::qvl::fail(::qvl::ErrorCode::kInternal, std::string("check failed: " #cond " at ") +    \
                                                   __FILE__ + ":" + std::to_string(__LINE__)); \
  } while (0)
