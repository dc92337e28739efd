#include "json_util.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/Support/FormatVariadic.h"
#pragma GCC diagnostic pop

namespace kpack {

llvm::json::Array JsonStrings(const std::vector<std::string>& items) {
  llvm::json::Array out;
  for (const std::string& s : items) out.push_back(s);
  return out;
}

std::string JsonText(llvm::json::Value value, int indent) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const std::string format = "{0:" + std::to_string(indent) + "}";
  os << llvm::formatv(format.c_str(), value);
  os.flush();
  return out + "\n";
}

std::string JsonGetString(const llvm::json::Object& o, llvm::StringRef key) {
  std::optional<llvm::StringRef> s = o.getString(key);
  return s ? s->str() : "";
}

std::vector<std::string> JsonGetStrings(const llvm::json::Object& o, llvm::StringRef key) {
  std::vector<std::string> out;
  if (const llvm::json::Array* a = o.getArray(key))
    for (const llvm::json::Value& v : *a)
      if (std::optional<llvm::StringRef> s = v.getAsString()) out.push_back(s->str());
  return out;
}

const llvm::json::Array& JsonArrayOf(const llvm::json::Object* o, llvm::StringRef key) {
  static const llvm::json::Array empty;
  const llvm::json::Array* a = o ? o->getArray(key) : nullptr;
  return a ? *a : empty;
}

}  // namespace kpack
