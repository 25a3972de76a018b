// qvl: one binary, several subcommands (see DESIGN.md).
#include <cstdio>

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  std::puts("qvl");
  return 0;
}
