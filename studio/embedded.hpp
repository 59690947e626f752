// Studio's files, compiled into the binary at build time from studio/src by
// studio/build.mjs (esbuild), and served by the admin port.
#pragma once

#include <string_view>
#include <vector>

namespace qf::studio {

struct asset {
  /// Where it is served: "/studio/" (the page) or /studio/assets/<name>.
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
  std::string_view gzipped;
  /// A quoted strong ETag of the body.
  std::string_view etag;
  /// Its name carries a hash of its content: cached for good.
  bool immutable;
};

/// Every file of Studio, the page first.
const std::vector<asset>& assets();

} // namespace qf::studio
