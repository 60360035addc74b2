// A bounded, non-recursive-in-depth rendering of a JSON value for error messages.
//
// nlohmann::json::dump() recurses once per nesting level: quoting a crafted,
// deeply nested value in an error message would overflow the stack. jsonBrief
// renders at most `maxDepth` levels ("[...]" / "{...}" below) and `maxChars`
// characters, in dump()'s compact form.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace neuron::runtime {

namespace detail {
inline void jsonBriefInto(const nlohmann::json &j, int depth, std::string &out,
                          size_t maxChars) {
  if (out.size() > maxChars)
    return;
  if (!j.is_structured()) {
    out += j.dump();
    return;
  }
  const bool array = j.is_array();
  if (depth <= 0 || j.empty()) {
    out += array ? (j.empty() ? "[]" : "[...]") : (j.empty() ? "{}" : "{...}");
    return;
  }
  out += array ? '[' : '{';
  bool first = true;
  for (auto it = j.begin(); it != j.end() && out.size() <= maxChars; ++it) {
    if (!first)
      out += ",";
    first = false;
    if (!array)
      out += nlohmann::json(it.key()).dump() + ":";
    jsonBriefInto(*it, depth - 1, out, maxChars);
  }
  out += array ? ']' : '}';
}
} // namespace detail

inline std::string jsonBrief(const nlohmann::json &j, size_t maxChars = 200,
                             int maxDepth = 4) {
  std::string out;
  detail::jsonBriefInto(j, maxDepth, out, maxChars);
  if (out.size() > maxChars)
    out = out.substr(0, maxChars) + "...";
  return out;
}

} // namespace neuron::runtime
