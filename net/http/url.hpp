// Splitting request targets: path segments and query parameters. Pure.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace qf::http {

/// "/v1/query/abc?x=1" -> {"v1", "query", "abc"}.
std::vector<std::string> path_segments(std::string_view target);

/// "?a=1&b=x%20y" -> {a: "1", b: "x y"}.
std::map<std::string, std::string> query_params(std::string_view target);

} // namespace qf::http
