#include "toolchain.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace kpack {

ToolResult RunStreaming(const std::vector<std::string>& argv,
                        const std::function<void(const char* data, size_t size)>& on_output) {
  ToolResult result;
  if (argv.empty()) {
    result.spawn_error = "empty command";
    return result;
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.spawn_error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);

  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    result.spawn_error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return result;
  }
  char buffer[65536];
  while (true) {
    ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    on_output(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.signal = WTERMSIG(status), result.exit_code = 128 + result.signal;
  return result;
}

ToolResult ProcessRunner::Run(const std::vector<std::string>& argv) {
  std::string output;
  ToolResult result = RunStreaming(argv, [&output](const char* data, size_t size) { output.append(data, size); });
  result.output = std::move(output);
  if (result.signal != 0)
    result.output += "\n(" + argv[0] + " was killed by signal " + std::to_string(result.signal) + ")";
  return result;
}

int RunWithInheritedOutput(const std::vector<std::string>& argv, std::string* spawn_error) {
  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = argv.empty() ? EINVAL : posix_spawnp(&pid, c_argv[0], nullptr, nullptr, c_argv.data(), environ);
  if (rc != 0) {
    *spawn_error = "cannot run " + (argv.empty() ? std::string("(nothing)") : argv[0]) + ": " + std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string ProbeToolchain(ToolRunner& runner, Toolchain& toolchain) {
  ToolResult r = runner.Run({toolchain.nvcc, "--version"});
  if (!r.ok()) {
    return "cannot run nvcc (" + toolchain.nvcc + "): " + (r.spawn_error.empty() ? r.output : r.spawn_error) +
           "\n  install the CUDA Toolkit 13 at /usr/local/cuda, or pass --cuda-root";
  }
  toolchain.version = r.output;
  return "";
}

std::string FormatCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`;&|<>*?()") == std::string::npos;
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace kpack
