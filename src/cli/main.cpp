// qvl: one binary, several subcommands (see DESIGN.md).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "cli/batch_command.h"
#include "cli/bench_command.h"
#include "cli/gen_model_command.h"
#include "cli/loadtest_command.h"
#include "cli/pull_command.h"
#include "cli/quality_command.h"
#include "cli/quantize_command.h"
#include "cli/run_command.h"
#include "cli/serve_command.h"
#include "media/media_worker.h"
#include "ops/int8_gemm.h"
#include "ops/packed_matrix.h"

namespace {

// --isa: the kernel level every command runs at. Lower levels let a machine reproduce what a
// lesser CPU of its architecture runs (an AVX-512 host what an AVX2-only or AVX-VNNI one runs, an
// i8mm ARM core what a dotprod-only one runs), e.g. to measure it, or step around a kernel
// suspected of a fault. A level the CPU cannot run is an error, not a silent fallback.
void apply_isa_choice(const std::string& choice) {
  using qvl::ops::IsaLevel;
  if (choice == "auto") return;
  if (choice == "avx-vnni") {
    if (!qvl::ops::cpu_runs_int8_gemm_kernel(qvl::ops::Int8GemmKernel::kAvxVnni)) {
      qvl::fail(qvl::ErrorCode::kUnsupported, "this CPU has no AVX-VNNI (--isa avx-vnni)");
    }
    qvl::ops::set_isa_override(IsaLevel::kAvx2);
    return;
  }
  const std::optional<IsaLevel> level = qvl::ops::parse_isa_level(choice);
  if (!level) qvl::fail(qvl::ErrorCode::kInvalidArgument, "unknown --isa level " + choice);
  qvl::ops::set_isa_override(*level);
  qvl::ops::set_avx_vnni_allowed(choice != "avx2");
}

}  // namespace

int main(int argc, char** argv) {
  // A media worker (this executable started again to parse untrusted documents or video in a
  // sandboxed child) runs its job and exits here.
  qvl::media::run_worker_if_requested(argc, argv);
  CLI::App app{"qvl: Qwen3-VL vision-language inference on CPUs"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warn, error or off");
  const char* log_format_env = std::getenv("QVL_LOG_FORMAT");
  std::string log_format = log_format_env != nullptr ? log_format_env : "text";
  app.add_option("--log-format", log_format,
                 "text ([qvl I local-time] message) or json (one object per line); default "
                 "$QVL_LOG_FORMAT, else text");
  std::string isa = "auto";
  app.add_option("--isa", isa,
                 "kernel level: auto (the best this CPU runs); on x86-64 avx512, avx-vnni (AVX2 "
                 "with 256-bit VNNI), avx2 (as on an AVX2-only CPU); on aarch64 i8mm (I8MM and "
                 "BF16), dotprod, neon; scalar everywhere")
      ->check(CLI::IsMember(
          {"auto", "avx512", "avx-vnni", "avx2", "i8mm", "dotprod", "neon", "scalar"}));
  app.parse_complete_callback([&] {
    qvl::set_log_level(qvl::parse_log_level(log_level));
    qvl::set_log_format(qvl::parse_log_format(log_format));
    apply_isa_choice(isa);
  });
  qvl::cli::add_run_command(app);
  qvl::cli::add_serve_command(app);
  qvl::cli::add_gen_model_command(app);
  qvl::cli::add_bench_command(app);
  qvl::cli::add_pull_command(app);
  qvl::cli::add_quantize_command(app);
  qvl::cli::add_quality_command(app);
  qvl::cli::add_loadtest_command(app);
  qvl::cli::add_batch_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const qvl::Error& e) {
    std::fprintf(stderr, "qvl: error: %s\n", e.what());
    return e.code() == qvl::ErrorCode::kInternal ? 70 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qvl: internal error: %s\n", e.what());
    return 70;
  }
  // Output that never reached its destination (stdout on a full disk, a closed pipe) is a
  // failure, not success: scripts must not take a missing answer for an answer.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "qvl: error: cannot write to standard output%s%s\n",
                 errno != 0 ? ": " : "", errno != 0 ? std::strerror(errno) : "");
    return 1;
  }
  return 0;
}
