// How deep a JSON text nests, without parsing it: parsers are iterative,
// but writing a document back out (and destroying it, in some versions)
// recurses once per level, so untrusted text is checked first.
#pragma once

#include <string_view>

namespace qf::json_text {

/// False when brackets nest deeper than max_depth outside strings.
inline bool nests_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '[' || c == '{') && ++depth > max_depth) {
      return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

} // namespace qf::json_text
