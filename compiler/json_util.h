// The small llvm::json helpers that several passes share: the request and
// result files of `kpack step`, the inventory and `kpack inspect --json`.
#pragma once

#include <string>
#include <vector>

// LLVM's headers are not clean under this project's warnings.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/Support/JSON.h"
#pragma GCC diagnostic pop

namespace kpack {

// A JSON array of the strings, in order.
llvm::json::Array JsonStrings(const std::vector<std::string>& items);

// `value` printed with `indent` spaces per level, then a newline.
std::string JsonText(llvm::json::Value value, int indent);

// o[key] as a string; "" when missing or not a string.
std::string JsonGetString(const llvm::json::Object& o, llvm::StringRef key);

// The string elements of the array o[key]; empty when missing.  Elements
// that are not strings are skipped.
std::vector<std::string> JsonGetStrings(const llvm::json::Object& o, llvm::StringRef key);

// The array o->at(key); an empty one when `o` is null or it is missing.
const llvm::json::Array& JsonArrayOf(const llvm::json::Object* o, llvm::StringRef key);

}  // namespace kpack
