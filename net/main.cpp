// The composition root of the `queryflux` binary.
#include "net/cli.hpp"

int main(int argc, char** argv) {
  return qf::cli::run(argc, argv);
}
