// The `queryflux` command line: serve, validate, version, --help.
#pragma once

namespace qf::cli {

/// Runs the command argv names; returns the process exit code.
int run(int argc, char** argv);

} // namespace qf::cli
