// cpp_text.h - the few character-level facts about C++ source and
// demangled names that the entry scan (cuda_entry.cc) and the instance
// proof (cuda_instance.cc) share.
#pragma once

#include <string>
#include <string_view>

namespace kpack::cpp_text {

// A character that may start an identifier ('$' too: nvcc accepts it).
inline bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

// `s` without leading and trailing blanks (space, tab, CR, LF).
inline std::string Trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t b = 0, e = s.size();
  while (b < e && blank(s[b])) ++b;
  while (e > b && blank(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

}  // namespace kpack::cpp_text
