// Only the `pull` subcommand of qvl, so it can be tried before it is wired into the qvl binary.
#include <CLI/CLI.hpp>

#include "cli/pull_command.h"

int main(int argc, char** argv) {
  CLI::App app{"qvl pull (standalone)"};
  app.require_subcommand(1);
  qvl::cli::add_pull_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
