#include "yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "yaml_input.h"

namespace kpack {

namespace fs = std::filesystem;

std::optional<std::string> ReadInput(const std::string& path, const LoadOptions& options) {
  if (options.files) {
    auto it = options.files->find(path);
    if (it == options.files->end()) return std::nullopt;
    return it->second;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool InputExists(const std::string& path, const LoadOptions& options) {
  if (options.files) return options.files->count(path) > 0;
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool InsideRoot(const std::string& path, const std::string& root, const LoadOptions& options) {
  auto resolve = [&options](const std::string& s, std::error_code& ec) {
    fs::path absolute = fs::absolute(s, ec).lexically_normal();
    // weakly_canonical keeps a missing relative path relative: absolutize first.
    return options.files || ec ? absolute : fs::weakly_canonical(absolute, ec);
  };
  std::error_code ec;
  fs::path p = resolve(path, ec);
  if (ec) return false;
  fs::path r = resolve(root, ec);
  if (ec) return false;
  fs::path rel = p.lexically_relative(r);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

std::string ResolveBeside(const std::string& base_file, const std::string& relative) {
  fs::path joined = fs::path(base_file).parent_path() / relative;
  return joined.lexically_normal().generic_string();
}

std::string RootRelative(const std::string& path, const std::string& root) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  fs::path r = ec ? fs::path() : fs::absolute(root, ec).lexically_normal();
  fs::path rel = ec ? fs::path() : p.lexically_relative(r);
  return rel.empty() ? fs::path(path).filename().generic_string() : rel.generic_string();
}

std::optional<YAML::Node> FileReader::Parse() {
  std::optional<std::string> text = ReadInput(file_, options_);
  if (!text) {
    diag_.Error(SourceLoc{file_, 0, 0}, "cannot read file");
    return std::nullopt;
  }
  return ParseManifestText(file_, *text, diag_);
}

SourceLoc FileReader::Loc(const YAML::Node& node) const {
  YAML::Mark mark = node.Mark();
  // Only an empty document's root has no mark (found by the fuzzer): its
  // position is the start of the file.
  if (mark.is_null()) return SourceLoc{file_, 1, 1};
  return SourceLoc{file_, mark.line + 1, mark.column + 1};
}

SourceLoc FileReader::ValueLoc(const YAML::Node& node) const {
  SourceLoc loc = Loc(node);
  if (node.Tag() == "!") loc.col += 1;  // yaml-cpp tags quoted scalars "!"
  return loc;
}

bool FileReader::Inside(const YAML::Node& node, const std::string& what, const std::string& path) {
  if (options_.allow_outside_root || InsideRoot(path, root_, options_)) return true;
  Error(node, what + " is outside the project root '" + root_ +
                  "' (kpack reads only files inside the project; pass --allow-outside-root to lift this)");
  return false;
}

bool FileReader::CheckMap(const YAML::Node& node, const std::string& what,
                          std::initializer_list<std::string_view> allowed,
                          std::initializer_list<std::string_view> required) {
  if (!node.IsMap()) {
    Error(node, what + " must be a mapping");
    return false;
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      Error(key, "keys of " + what + " must be plain names");
      continue;
    }
    std::string name = key.Scalar();
    if (!seen.insert(name).second) {
      Error(key, "duplicate key '" + name + "' in " + what);
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      Error(key, "unknown key '" + name + "' in " + what + " (expected one of: " + Join(allowed) + ")");
  }
  for (std::string_view key : required)
    if (!seen.count(std::string(key))) Error(node, what + " is missing required key '" + std::string(key) + "'");
  return true;
}

YAML::Node FileReader::Get(const YAML::Node& node, std::string_view key) {
  for (const auto& entry : node)
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  return YAML::Node(YAML::NodeType::Undefined);
}

std::optional<std::string> FileReader::String(const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) {
    Error(node, what + " must be a string");
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<std::string> FileReader::Identifier(const YAML::Node& node, const std::string& what) {
  std::optional<std::string> s = String(node, what);
  if (!s) return std::nullopt;
  if (!IsCIdentifier(*s)) {
    Error(node, what + " '" + *s + "' is not a valid C identifier");
    return std::nullopt;
  }
  return s;
}

std::string FileReader::SpelledIdentifier(const YAML::Node& node, const std::string& what) {
  std::optional<std::string> s = String(node, what);
  if (!s) return "";
  if (!IsCIdentifier(*s)) Error(node, what + " '" + *s + "' is not a valid C identifier");
  return *s;
}

std::optional<bool> FileReader::Bool(const YAML::Node& node, const std::string& what) {
  if (node.IsScalar() && node.Tag() != "!") {
    const std::string& s = node.Scalar();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  Error(node, what + " must be true or false");
  return std::nullopt;
}

std::optional<int64_t> FileReader::Integer(const YAML::Node& node, const std::string& what) {
  if (node.IsScalar() && node.Tag() != "!") {
    const std::string& s = node.Scalar();
    size_t digits_at = (!s.empty() && s[0] == '-') ? 1 : 0;
    bool all_digits = s.size() > digits_at && s.size() <= digits_at + 18 &&
                      std::all_of(s.begin() + digits_at, s.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (all_digits) return std::stoll(s);
  }
  Error(node, what + " must be an integer");
  return std::nullopt;
}

namespace {

// [+-]digits[.digits][(e|E)[+-]digits], or [+-].digits...: a decimal
// number as YAML and Python write one; no hex, no inf or nan.
bool IsDecimalNumber(const std::string& s) {
  size_t i = 0, n = s.size();
  if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exponent = 0;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exponent;
    if (exponent == 0) return false;
  }
  return i == n;
}

// A decimal number in JSON's stricter grammar, keeping whether it was
// written as an integer or a float (Python reads "3" as int, "3.0" as
// float): no '+', no leading zeros, digits on both sides of the point.
std::string JsonNumber(const std::string& s) {
  size_t i = s[0] == '+' || s[0] == '-' ? 1 : 0;
  std::string out = s[0] == '-' ? "-" : "";
  size_t int_end = s.find_first_not_of("0123456789", i);
  if (int_end == std::string::npos) int_end = s.size();
  std::string whole = s.substr(i, int_end - i);
  whole.erase(0, std::min(whole.find_first_not_of('0'), whole.size() - (whole.empty() ? 0 : 1)));
  out += whole.empty() ? "0" : whole;
  i = int_end;
  if (i < s.size() && s[i] == '.') {
    size_t frac_end = s.find_first_not_of("0123456789", i + 1);
    if (frac_end == std::string::npos) frac_end = s.size();
    std::string fraction = s.substr(i + 1, frac_end - i - 1);
    out += "." + (fraction.empty() ? std::string("0") : fraction);
    i = frac_end;
  }
  return out + s.substr(i);
}

}  // namespace

std::optional<double> FileReader::Float(const YAML::Node& node, const std::string& what) {
  if (node.IsScalar() && node.Tag() != "!" && IsDecimalNumber(node.Scalar())) {
    const std::string& s = node.Scalar();
    double value = 0;
    const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, s.data() + s.size(), value);
    if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(value)) return value;
  }
  Error(node, what + " must be a finite decimal number");
  return std::nullopt;
}

bool FileReader::NonEmptySequence(const YAML::Node& node, const std::string& what) {
  if (!node.IsSequence()) {
    Error(node, what + " must be a list");
    return false;
  }
  if (node.size() == 0) {
    Error(node, what + " must not be empty");
    return false;
  }
  return true;
}

std::vector<std::string> FileReader::StringList(const YAML::Node& node, const std::string& what) {
  std::vector<std::string> out;
  if (!node.IsSequence()) {
    Error(node, what + " must be a list");
    return out;
  }
  for (const YAML::Node& item : node)
    if (std::optional<std::string> s = String(item, "each entry of " + what)) out.push_back(*s);
  return out;
}

std::vector<Arch> FileReader::Archs(const YAML::Node& node) {
  std::vector<Arch> out;
  if (!NonEmptySequence(node, "archs")) return out;
  for (const YAML::Node& item : node) {
    std::optional<std::string> name = String(item, "an arch");
    if (!name) continue;
    std::optional<Arch> arch = ParseArch(*name);
    if (!arch) {
      Error(item, "unknown arch '" + *name + "' (CUDA 13 supports: " + SupportedArchList() + ")");
      continue;
    }
    if (std::find(out.begin(), out.end(), *arch) != out.end()) {
      Error(item, "duplicate arch '" + *name + "'");
      continue;
    }
    out.push_back(*arch);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> FileReader::JsonLiteral(const YAML::Node& node, const std::string& what) {
  if (node.IsNull()) return std::string("null");
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    const bool quoted = node.Tag() == "!";
    if (!quoted && (s == "true" || s == "false")) return s;
    if (!quoted && IsDecimalNumber(s)) {
      double value = 0;
      const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
      auto [end, ec] = std::from_chars(begin, s.data() + s.size(), value);
      if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(value)) return JsonNumber(s);
      Error(node, what + " must be a finite number");  // 1e999: no double holds it
      return std::nullopt;
    }
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (c < 0x20) {
        static const char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
        continue;
      }
      out += static_cast<char>(c);
    }
    return out + "\"";
  }
  Error(node, what + " must be true, false, a number, a string or null");
  return std::nullopt;
}

std::string FileReader::Join(std::initializer_list<std::string_view> items) {
  std::string out;
  for (std::string_view item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace kpack
