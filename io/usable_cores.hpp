// How many cores this process may use: the CPUs it may run on, fewer if
// its cgroup's CPU quota says so. std::thread::hardware_concurrency counts
// the machine's, which in a container limited to two cores of sixty-four
// would size the wire loops for sixty-four.
#pragma once

#include <optional>
#include <string_view>

namespace qf::io {

unsigned usable_cores();

/// The cores a cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD") allows,
/// rounded up; nullopt without a limit, or for text it cannot read.
std::optional<unsigned> cores_in_cpu_max(std::string_view text);

} // namespace qf::io
