// cuda_instance.cc - which instance of an entry a cubin holds, from the
// kernels' mangled symbols (see cuda_instance.h).
#include "cuda_instance.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/Demangle/Demangle.h"
#pragma GCC diagnostic pop

#include "cpp_text.h"

namespace kpack {
namespace {

using cpp_text::IsDigit;
using cpp_text::IsIdentChar;
using cpp_text::IsIdentStart;
using cpp_text::StartsWith;
using cpp_text::Trim;

// Splits `s` at top-level occurrences of `sep` ("," or "::"), outside <>, ()
// and []; each part trimmed.  An empty (all blank) `s` gives no parts.
std::vector<std::string> SplitTopLevel(const std::string& s, std::string_view sep) {
  std::vector<std::string> parts;
  if (Trim(s).empty()) return parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<' || c == '(' || c == '[') {
      ++depth;
    } else if (c == '>' || c == ')' || c == ']') {
      if (depth > 0) --depth;
    } else if (depth == 0 && s.compare(i, sep.size(), sep) == 0) {
      parts.push_back(Trim(std::string_view(s).substr(start, i - start)));
      start = i + sep.size();
      i += sep.size() - 1;
    }
  }
  parts.push_back(Trim(std::string_view(s).substr(start)));
  return parts;
}

// nvcc's and the demangler's spellings of internal linkage.
bool IsInternalComponent(const std::string& c) {
  return c == "(anonymous namespace)" || StartsWith(c, "_INTERNAL_") || StartsWith(c, "_GLOBAL__N_");
}

// Qualified-name components of `s` without the internal ones; *anchored
// when it starts with "::".
std::vector<std::string> Components(const std::string& s, bool* anchored = nullptr) {
  std::string t = Trim(s);
  bool global = StartsWith(t, "::");
  if (global) t = t.substr(2);
  if (anchored) *anchored = global;
  std::vector<std::string> out;
  for (std::string& c : SplitTopLevel(t, "::"))
    if (!IsInternalComponent(c)) out.push_back(std::move(c));
  return out;
}

// Whether `part` is a suffix of `whole`, component-wise.
bool IsSuffix(const std::vector<std::string>& part, const std::vector<std::string>& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.end() - part.size());
}

// The -rdc prefix of internal-linkage symbols: "__nv_static_<n>_<n chars>_".
std::string StripNvStatic(const std::string& symbol) {
  static constexpr std::string_view kPrefix = "__nv_static_";
  if (!StartsWith(symbol, kPrefix)) return symbol;
  size_t p = kPrefix.size();
  size_t digits = p;
  while (digits < symbol.size() && IsDigit(symbol[digits])) ++digits;
  if (digits > p && digits < symbol.size() && symbol[digits] == '_') {
    size_t len = std::strtoul(symbol.substr(p, digits - p).c_str(), nullptr, 10);
    size_t rest = digits + 1 + len;
    if (rest < symbol.size() && symbol[rest] == '_' && symbol.compare(rest + 1, 2, "_Z") == 0)
      return symbol.substr(rest + 1);
  }
  size_t z = symbol.find("__Z", p);
  return z == std::string::npos ? symbol : symbol.substr(z + 1);
}

struct ParsedSymbol {
  std::vector<std::string> name;       // qualified name, internal components left out
  std::string name_with_args;          // "ns::k<float, 8u>"
  std::vector<std::string> args;       // "float", "8u"
  std::string readable;                // "ns::k<float, 8u>(float*, int)"
};

std::string TakeDemangled(char* buffer) {
  std::string s = buffer ? buffer : "";
  std::free(buffer);
  return s;
}

ParsedSymbol ParseSymbol(const std::string& symbol) {
  ParsedSymbol parsed;
  std::string mangled = StripNvStatic(symbol);
  llvm::ItaniumPartialDemangler demangler;
  if (!StartsWith(mangled, "_Z") || demangler.partialDemangle(mangled.c_str())) {
    parsed.readable = parsed.name_with_args = symbol;  // extern "C"
    parsed.name = Components(symbol);
    return parsed;
  }
  if (!demangler.isFunction()) {
    parsed.readable = parsed.name_with_args = TakeDemangled(demangler.finishDemangle(nullptr, nullptr));
    parsed.name = Components(parsed.readable);
    return parsed;
  }
  std::string name = TakeDemangled(demangler.getFunctionName(nullptr, nullptr));
  std::string context = TakeDemangled(demangler.getFunctionDeclContextName(nullptr, nullptr));
  std::string base = TakeDemangled(demangler.getFunctionBaseName(nullptr, nullptr));
  std::string params = TakeDemangled(demangler.getFunctionParameters(nullptr, nullptr));
  parsed.name_with_args = name;
  parsed.readable = name + params;
  std::string plain = context.empty() ? base : context + "::" + base;
  std::string rest;
  if (StartsWith(name, plain)) {
    rest = name.substr(plain.size());
  } else if (!name.empty() && name.back() == '>') {
    // Not expected from LLVM 19: find the trailing <...> by hand.
    int depth = 0;
    size_t i = name.size();
    while (i-- > 0) {
      if (name[i] == '>' || name[i] == ')') ++depth;
      if ((name[i] == '<' || name[i] == '(') && --depth == 0) break;
    }
    plain = name.substr(0, i == std::string::npos ? 0 : i);
    rest = name.substr(plain.size());
  } else {
    plain = name;
  }
  parsed.name = Components(plain);
  if (rest.size() >= 2 && rest.front() == '<' && rest.back() == '>')
    parsed.args = SplitTopLevel(rest.substr(1, rest.size() - 2), ",");
  return parsed;
}

// ---- Type spellings ----

// kpack's (and <cstdint>'s) type names as the demangler spells them.
const char* DemangledSpelling(const std::string& word) {
  static const std::pair<const char*, const char*> kMap[] = {
      {"half", "__half"},
      {"half2", "__half2"},
      {"nv_bfloat16", "__nv_bfloat16"},
      {"nv_bfloat162", "__nv_bfloat162"},
      {"int8_t", "signed char"},
      {"uint8_t", "unsigned char"},
      {"int16_t", "short"},
      {"uint16_t", "unsigned short"},
      {"int32_t", "int"},
      {"uint32_t", "unsigned int"},
      {"int64_t", "long"},
      {"uint64_t", "unsigned long"},
      {"size_t", "unsigned long"},
      {"ptrdiff_t", "long"},
      {"intptr_t", "long"},
      {"uintptr_t", "unsigned long"},
  };
  for (const auto& [from, to] : kMap)
    if (word == from) return to;
  return nullptr;
}

bool IsIntegerWord(std::string_view w) {
  return w == "unsigned" || w == "signed" || w == "short" || w == "long" || w == "int" || w == "char";
}

struct TypeToken {
  std::string text;
  bool word;  // identifier or number
};

std::vector<TypeToken> LexType(const std::string& s) {
  std::vector<TypeToken> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (IsIdentChar(c) || c == '-') {
      size_t start = i++;
      while (i < s.size() && IsIdentChar(s[i])) ++i;
      out.push_back({s.substr(start, i - start), true});
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.push_back({"::", false});
      i += 2;
    } else {
      out.push_back({std::string(1, c), false});
      ++i;
    }
  }
  return out;
}

// `s` without internal-linkage qualifiers, wherever they are (nested
// template arguments included): "(anonymous namespace)::", and
// "_INTERNAL_...::" and "_GLOBAL__N_...::" identifiers.
std::string RemoveInternalQualifiers(std::string s) {
  static constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  size_t at;
  while ((at = s.find(kAnonymous)) != std::string::npos) s.erase(at, kAnonymous.size());
  for (std::string_view marker : {std::string_view("_INTERNAL_"), std::string_view("_GLOBAL__N_")}) {
    size_t from = 0;
    while ((at = s.find(marker, from)) != std::string::npos) {
      from = at + 1;
      if (at > 0 && IsIdentChar(s[at - 1])) continue;  // inside another identifier
      size_t end = at;
      while (end < s.size() && IsIdentChar(s[end])) ++end;
      if (s.compare(end, 2, "::") != 0) continue;
      s.erase(at, end + 2 - at);
      from = at;
    }
  }
  return s;
}

// A type in one canonical spelling, for comparing kpack's with the
// demangler's: <cstdint> and CUDA aliases mapped (a `std::` in front of them
// dropped), builtin integer words in canonical order (`unsigned` ->
// `unsigned int`, `long int` -> `long`), a leading const moved behind the
// type it qualifies (`const float*` -> `float const*`), internal-linkage
// qualifiers dropped, and spaces only between two words.
std::string NormalizeType(const std::string& text) {
  std::vector<TypeToken> in = LexType(text);
  // Aliases, and std:: in front of them.
  std::vector<TypeToken> mapped;
  for (size_t i = 0; i < in.size(); ++i) {
    const char* to = in[i].word ? DemangledSpelling(in[i].text) : nullptr;
    // Only an unqualified, std:: or ::-qualified alias: mylib::half is the user's.
    bool qualified = !mapped.empty() && mapped.back().text == "::";
    bool by_std = qualified && mapped.size() >= 2 && mapped[mapped.size() - 2].text == "std";
    bool by_other = qualified && !by_std && mapped.size() >= 2 && mapped[mapped.size() - 2].word;
    if (to && !by_other) {
      if (by_std) mapped.resize(mapped.size() - 2);
      else if (qualified) mapped.pop_back();
      for (TypeToken& t : LexType(to)) mapped.push_back(std::move(t));
    } else {
      mapped.push_back(in[i]);
    }
  }
  // Builtin integer words in canonical order.
  std::vector<TypeToken> ints;
  for (size_t i = 0; i < mapped.size();) {
    if (!(mapped[i].word && IsIntegerWord(mapped[i].text))) {
      ints.push_back(mapped[i++]);
      continue;
    }
    bool is_unsigned = false, is_signed = false, is_short = false, is_char = false;
    int longs = 0;
    for (; i < mapped.size() && mapped[i].word && IsIntegerWord(mapped[i].text); ++i) {
      const std::string& w = mapped[i].text;
      is_unsigned |= w == "unsigned";
      is_signed |= w == "signed";
      is_short |= w == "short";
      is_char |= w == "char";
      longs += w == "long";
    }
    std::string canonical;
    if (is_char) canonical = is_unsigned ? "unsigned char" : is_signed ? "signed char" : "char";
    else if (is_short) canonical = is_unsigned ? "unsigned short" : "short";
    else if (longs >= 2) canonical = is_unsigned ? "unsigned long long" : "long long";
    else if (longs == 1) canonical = is_unsigned ? "unsigned long" : "long";
    else canonical = is_unsigned ? "unsigned int" : "int";
    for (TypeToken& t : LexType(canonical)) ints.push_back(std::move(t));
  }
  // A leading cv-qualifier goes behind the first type name.
  std::vector<TypeToken> tokens = std::move(ints);
  if (!tokens.empty() && (tokens[0].text == "const" || tokens[0].text == "volatile")) {
    TypeToken cv = tokens[0];
    size_t p = 1;
    if (p < tokens.size() && tokens[p].text == "::") ++p;
    while (p < tokens.size()) {
      if (!tokens[p].word) break;
      bool builtin = IsIntegerWord(tokens[p].text);
      ++p;
      while (builtin && p < tokens.size() && tokens[p].word && IsIntegerWord(tokens[p].text)) ++p;
      if (p < tokens.size() && tokens[p].text == "<") {
        int depth = 0;
        for (; p < tokens.size(); ++p) {
          if (tokens[p].text == "<" || tokens[p].text == "(") ++depth;
          if ((tokens[p].text == ">" || tokens[p].text == ")") && --depth == 0) {
            ++p;
            break;
          }
        }
      }
      if (p < tokens.size() && tokens[p].text == "::") {
        ++p;
        continue;
      }
      break;
    }
    tokens.insert(tokens.begin() + static_cast<std::ptrdiff_t>(p), cv);
    tokens.erase(tokens.begin());
  }
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0 && tokens[i].word && tokens[i - 1].word) out += ' ';
    out += tokens[i].text;
  }
  return RemoveInternalQualifiers(out);
}

// Whether demangled `actual` is expected `wanted`, qualified-suffix-wise at
// every level: each qualified name in `wanted` ("Traits", "Vec<Vec<int>>")
// may leave out leading qualifiers of the one in `actual`
// ("ns::Traits", "ns::Vec<ns::Vec<int>>"); one written with a leading "::"
// must be whole.  Everything else (punctuation, builtin words, numbers) must
// be equal, after NormalizeType.
bool QualifiedMatch(const std::string& actual, const std::string& wanted) {
  std::vector<TypeToken> a = LexType(NormalizeType(actual));
  std::vector<TypeToken> w = LexType(NormalizeType(Trim(wanted)));
  if (w.empty()) return false;
  // The chain `word (:: word)*` at tokens[p]; p moves past it.
  auto chain = [](const std::vector<TypeToken>& tokens, size_t& p) {
    std::vector<std::string> words;
    while (p < tokens.size() && tokens[p].word) {
      words.push_back(tokens[p++].text);
      if (p + 1 < tokens.size() && tokens[p].text == "::" && tokens[p + 1].word) {
        ++p;
        continue;
      }
      break;
    }
    return words;
  };
  size_t i = 0, j = 0;
  while (i < a.size() && j < w.size()) {
    bool anchored = w[j].text == "::" && (j == 0 || !w[j - 1].word) && j + 1 < w.size() && w[j + 1].word;
    if (anchored || w[j].word) {
      if (anchored) {
        ++j;
        if (a[i].text == "::") ++i;
      }
      std::vector<std::string> want = chain(w, j);
      std::vector<std::string> have = chain(a, i);
      if (have.empty() || (anchored ? want != have : !IsSuffix(want, have))) return false;
      continue;
    }
    if (a[i].text != w[j].text) return false;
    ++i;
    ++j;
  }
  return i == a.size() && j == w.size();
}

// ---- Integer literals ----

struct IntLiteral {
  bool negative = false;
  uint64_t magnitude = 0;
  bool is_bool = false;
  std::string cast;  // "(unsigned char)200" -> "unsigned char"
};

// 8, 8u, -1l, 7ul, -5ll, 9ull, (unsigned char)200, (ns::Mode)1, true, false.
std::optional<IntLiteral> ParseIntLiteral(const std::string& text) {
  IntLiteral v;
  std::string s = Trim(text);
  if (s == "true" || s == "false") {
    v.is_bool = true;
    v.magnitude = s == "true";
    return v;
  }
  if (!s.empty() && s[0] == '(') {
    int depth = 0;
    size_t i = 0;
    for (; i < s.size(); ++i) {
      if (s[i] == '(') ++depth;
      if (s[i] == ')' && --depth == 0) break;
    }
    if (i == s.size()) return std::nullopt;
    v.cast = Trim(std::string_view(s).substr(1, i - 1));
    s = Trim(std::string_view(s).substr(i + 1));
  }
  if (!s.empty() && s[0] == '-') {
    v.negative = true;
    s = s.substr(1);
  }
  size_t i = 0;
  for (; i < s.size() && IsDigit(s[i]); ++i) {
    uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (v.magnitude > (UINT64_MAX - digit) / 10) return std::nullopt;
    v.magnitude = v.magnitude * 10 + digit;
  }
  if (i == 0) return std::nullopt;
  std::string suffix = s.substr(i);
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::set<std::string> kSuffixes = {"", "u", "l", "ul", "lu", "ll", "ull", "llu"};
  if (!kSuffixes.count(suffix)) return std::nullopt;
  return v;
}

bool IntEquals(const IntLiteral& v, int64_t expected) {
  uint64_t bits = static_cast<uint64_t>(expected);
  if (expected >= 0) return v.magnitude == bits && (!v.negative || v.magnitude == 0);
  if (v.negative) return v.magnitude == uint64_t{0} - bits;
  // A 64-bit unsigned value past INT64_MAX, given as its negative pattern.
  return v.magnitude == bits;
}

bool IsPointerCast(const std::string& cast) {
  return cast.find('*') != std::string::npos || cast.find('(') != std::string::npos;
}

// A builtin integral type: `(unsigned char)200` is a value, not an enumerator.
bool IsBuiltinIntegral(const std::string& cast) {
  std::string t = NormalizeType(cast);
  return t == "char" || t == "signed char" || t == "unsigned char" || t == "short" || t == "unsigned short" ||
         t == "int" || t == "unsigned int" || t == "long" || t == "unsigned long" || t == "long long" ||
         t == "unsigned long long" || t == "bool" || t == "wchar_t" || t == "char8_t" || t == "char16_t" ||
         t == "char32_t" || t == "__int128" || t == "unsigned __int128";
}

std::string ExpectedText(const ExpectedArg& arg) {
  switch (arg.kind) {
    case ExpectedArg::kInteger: return std::to_string(arg.integer);
    case ExpectedArg::kBool: return arg.integer ? "true" : "false";
    case ExpectedArg::kType:
    case ExpectedArg::kName: return arg.text;
  }
  return arg.text;
}

// Whether demangled template argument `actual` is `wanted`.
bool ArgMatches(const std::string& actual, const ExpectedArg& wanted) {
  switch (wanted.kind) {
    case ExpectedArg::kInteger: {
      std::optional<IntLiteral> v = ParseIntLiteral(actual);
      return v && !IsPointerCast(v->cast) && IntEquals(*v, wanted.integer);
    }
    case ExpectedArg::kBool: {
      std::optional<IntLiteral> v = ParseIntLiteral(actual);
      return v && (v->cast.empty() || IsBuiltinIntegral(v->cast)) && !v->negative &&
             v->magnitude == (wanted.integer != 0 ? 1u : 0u);
    }
    case ExpectedArg::kType:
      if (ParseIntLiteral(actual)) return false;  // a value, not a type
      return QualifiedMatch(actual, wanted.text);
    case ExpectedArg::kName: {
      std::string want = Trim(wanted.text);
      std::optional<IntLiteral> v = ParseIntLiteral(actual);
      if (want == "nullptr" || want == "NULL")
        return actual == "nullptr" || (v && !v->is_bool && v->magnitude == 0 && (v->cast.empty() || IsPointerCast(v->cast)));
      if (v) {
        // An enumerator: only its type can be proven.
        if (v->is_bool || v->cast.empty() || IsPointerCast(v->cast) || IsBuiltinIntegral(v->cast)) return false;
        bool anchored = false;
        std::vector<std::string> name = Components(NormalizeType(want), &anchored);
        if (name.empty()) return false;
        name.pop_back();
        std::vector<std::string> type = Components(NormalizeType(v->cast));
        std::vector<std::string> scope(type.begin(), type.end() - (type.empty() ? 0 : 1));
        if (anchored) return name == type || name == scope;
        return IsSuffix(name, type) || IsSuffix(name, scope);
      }
      // A type (a manifest's `type: cpp` value may name one).
      if (actual.empty() || actual[0] != '&') return QualifiedMatch(actual, want);
      // &ns::gelu(float const&), &float ns::act<float>(float const&).
      std::string s = Trim(std::string_view(actual).substr(1));
      if (!s.empty() && s.back() == ')') {
        int depth = 0;
        size_t i = s.size();
        while (i-- > 0) {
          if (s[i] == ')') ++depth;
          if (s[i] == '(' && --depth == 0) break;
        }
        if (i != std::string::npos) s = Trim(std::string_view(s).substr(0, i));
      }
      int depth = 0;
      size_t cut = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<' || s[i] == '(') ++depth;
        if ((s[i] == '>' || s[i] == ')') && depth > 0) --depth;
        if (s[i] == ' ' && depth == 0) cut = i + 1;  // behind a return type
      }
      return QualifiedMatch(s.substr(cut), want);
    }
  }
  return false;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string DisplayEntry(const std::string& entry) {
  std::string s = Trim(entry);
  return StartsWith(s, "::") ? s.substr(2) : s;
}

// The entry's name as ParseSymbol splits a symbol's.
std::vector<std::string> EntryComponents(const std::string& entry) { return Components(DisplayEntry(entry)); }

InstanceMatch MatchParsed(const ParsedSymbol& parsed, const std::string& entry,
                          const std::vector<ExpectedArg>& args) {
  InstanceMatch match;
  match.demangled = parsed.readable;
  if (parsed.name != EntryComponents(entry)) {
    match.detail = "it is not " + DisplayEntry(entry);
    return match;
  }
  // More arguments than kpack wrote are the template's defaults: the unit
  // instantiated entry<args> and nothing else of that name.
  if (parsed.args.size() < args.size()) {
    match.detail = "it has " + std::to_string(parsed.args.size()) + " template argument" +
                   (parsed.args.size() == 1 ? "" : "s") + ", expected " + std::to_string(args.size());
    return match;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!ArgMatches(parsed.args[i], args[i])) {
      match.detail = "template argument " + std::to_string(i + 1) + " is " + parsed.args[i] + ", expected " +
                     ExpectedText(args[i]);
      return match;
    }
  }
  match.ok = true;
  return match;
}

}  // namespace

std::string Demangle(const std::string& symbol) { return ParseSymbol(symbol).readable; }

InstanceMatch MatchInstance(const std::string& symbol, const std::string& entry,
                            const std::vector<ExpectedArg>& args) {
  return MatchParsed(ParseSymbol(symbol), entry, args);
}

std::optional<std::string> FindInstance(const std::vector<std::string>& symbols, const std::string& entry,
                                        const std::vector<ExpectedArg>& args, std::string* demangled,
                                        std::string* error) {
  std::vector<std::string> want = EntryComponents(entry);
  std::vector<ParsedSymbol> parsed;
  std::vector<size_t> named;
  for (const std::string& symbol : symbols) {
    parsed.push_back(ParseSymbol(symbol));
    if (!want.empty() && parsed.back().name == want) named.push_back(parsed.size() - 1);
  }
  auto fail = [&](std::string text) -> std::optional<std::string> {
    if (error) *error = std::move(text);
    return std::nullopt;
  };
  if (named.empty()) {
    std::vector<std::string> all;
    for (const ParsedSymbol& p : parsed) all.push_back(p.readable);
    return fail("the cubin has no kernel named " + DisplayEntry(entry) +
                "; its kernels: " + (all.empty() ? std::string("(none)") : Join(all, ", ")));
  }
  if (named.size() > 1) {
    // A batch's cubin (plan.h) holds every member's instance: take the one
    // with the specialization's arguments.
    std::vector<size_t> matching;
    for (size_t i : named)
      if (MatchParsed(parsed[i], entry, args).ok) matching.push_back(i);
    if (matching.size() == 1) {
      if (demangled) *demangled = parsed[matching[0]].readable;
      return symbols[matching[0]];
    }
    std::vector<std::string> instances;
    for (size_t i : named) instances.push_back(parsed[i].name_with_args);
    return fail("the cubin has " + std::to_string(named.size()) + " instances of " + DisplayEntry(entry) + ": " +
                Join(instances, ", ") + "; kpack asked for one");
  }
  const ParsedSymbol& only = parsed[named[0]];
  InstanceMatch match = MatchParsed(only, entry, args);
  if (!match.ok)
    return fail("the cubin's kernel is " + only.readable + ", not the instance kpack asked for: " + match.detail);
  if (demangled) *demangled = only.readable;
  return symbols[named[0]];
}

}  // namespace kpack

