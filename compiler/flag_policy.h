// flag_policy.h - what a manifest's nvcc flags and paths may do.
//
// nvcc runs its internal steps (cudafe++, cicc, the host compiler) through
// /bin/sh, and a manifest may come from anywhere while its flags run during
// the build: shell metacharacters, a host compiler of the manifest's choice
// and include or library paths outside the project are refused, each at its
// list entry (docs/manifest.md, "What nvcc_flags may do").
#pragma once

#include <string>
#include <vector>

#include "yaml_reader.h"

namespace kpack {

// The first shell metacharacter in `s`, or 0.
char ShellMetacharacter(const std::string& s);

// How a message names character `c`: "'$'", "a space".
std::string Quoted(char c);

// "" when `path` is free of shell metacharacters; else the error, which
// starts with `subject` ("source path 'a$b'"): nvcc passes include paths
// through a shell.
std::string IncludePathProblem(const std::string& subject, const std::string& path);

// nvcc flags: strings free of shell metacharacters that do not reach out of
// the project.  Appends each accepted flag's position to `locs`.
std::vector<std::string> FlagList(FileReader& r, const YAML::Node& node, std::vector<SourceLoc>& locs);

}  // namespace kpack
