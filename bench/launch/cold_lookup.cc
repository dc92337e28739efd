// cold_lookup.cc - kpack_cold_lookup: what finding the CUDA driver costs in a
// fresh process that already has a context, step by step, for the ways the
// kpack runtime could find it.  An experiment, not a benchmark of kpack: the
// cold first launch spends about 10 us finding a driver that is already
// loaded (bench/RESULTS.md, "Cold first launch: what the gap is not"), and
// these numbers decide how the runtime should look it up.
//
//   kpack_cold_lookup [--runs N]     N samples of each mode (default 30)
//
// Each sample is a fresh process (/proc/self/exe --child MODE), because
// every step's first call is the one that matters; modes are interleaved
// round-robin so drift hits them all alike.  Each child runs cudaFree(0),
// making device 0's primary context current as the cold bench does, then
// times its steps in order with clock_gettime(CLOCK_MONOTONIC) and prints
// one JSON line.  The parent copies those lines to stdout and prints
// per-mode, per-step medians with p10 and p90 to stderr.  Exit 77: no CUDA
// device; 1: any other failure.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

extern char** environ;

namespace {

// The entry points kpack resolves when it loads the driver (runtime/driver.c).
constexpr const char* kNames[5] = {"cuCtxGetDevice", "cuDeviceGetAttribute", "cuLibraryLoadData",
                                   "cuLibraryGetKernel", "cuLaunchKernel"};
constexpr const char* kModes[] = {"dlopen", "noload", "default", "procaddr", "attr"};

long long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// One timed step and its duration; printed in the order taken.
struct Step {
  const char* name;
  long long ns;
};

// dlsym of the five names from `h`; returns how many were found.
int dlsym5(void* h, void* out[5]) {
  int found = 0;
  for (int i = 0; i < 5; ++i) found += (out[i] = dlsym(h, kNames[i])) != nullptr;
  return found;
}

// Says on stderr why a child gives up; returns its exit status.
int fail(const char* why) {
  std::fprintf(stderr, "kpack_cold_lookup: %s\n", why);
  return 1;
}

// Times `f` as step `name`.
template <typename F>
void timed(std::vector<Step>& steps, const char* name, F f) {
  const long long t0 = now_ns();
  f();
  steps.push_back({name, now_ns() - t0});
}

// The child: one mode, in a process whose only CUDA work so far is the
// context.  Extra facts (found, equal, cc) are checked after the timing.
int child(const std::string& mode) {
  if (cudaFree(nullptr) != cudaSuccess) {
    int count = 0;
    return cudaGetDeviceCount(&count) != cudaSuccess || count == 0 ? 77 : 1;
  }
  std::vector<Step> steps;
  steps.reserve(8);
  std::string extra;
  void* h = nullptr;
  void* syms[5] = {};
  void* again[5] = {};  // a second lookup, or dlsym's answers to compare with
  if (mode == "dlopen") {
    // What kpack did: a plain dlopen of a library cudart already loaded.
    timed(steps, "dlopen_first", [&] { h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); });
    void* h2 = nullptr;
    timed(steps, "dlopen_second", [&] { h2 = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); });
    if (h == nullptr || h2 != h) return fail("dlopen(libcuda.so.1) failed");
    int found = 0;
    timed(steps, "dlsym5_first", [&] { found = dlsym5(h, syms); });
    timed(steps, "dlsym5_second", [&] { dlsym5(h, again); });
    extra = ", \"found\": " + std::to_string(found);
  } else if (mode == "noload") {
    // What kpack does now: find the loaded library without loading it.
    timed(steps, "dlopen_noload_first",
          [&] { h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD); });
    int found = 0;  // stays 0, without a dlsym step, if NOLOAD found nothing
    if (h != nullptr) timed(steps, "dlsym5", [&] { found = dlsym5(h, syms); });
    extra = ", \"found\": " + std::to_string(found);
  } else if (mode == "default") {
    // No handle at all: works only where libcuda was loaded RTLD_GLOBAL.
    int found = 0;
    timed(steps, "dlsym_default5", [&] { found = dlsym5(RTLD_DEFAULT, syms); });
    extra = ", \"found\": " + std::to_string(found);
  } else if (mode == "procaddr") {
    // One dlsym, then the driver's own lookup (CUDA 12.0 ABI, legacy stream
    // as kpack's dlsym of "cuLaunchKernel" gets).
    void* gpa = nullptr;
    timed(steps, "dlopen_noload",
          [&] { h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD); });
    if (h == nullptr) return fail("RTLD_NOLOAD found no libcuda.so.1");
    timed(steps, "dlsym_cuGetProcAddress_v2", [&] { gpa = dlsym(h, "cuGetProcAddress_v2"); });
    if (gpa == nullptr) return fail("libcuda.so.1 has no cuGetProcAddress_v2");
    decltype(&cuGetProcAddress_v2) get_proc;
    std::memcpy(&get_proc, &gpa, sizeof gpa);  // ISO C++ has no void* -> function pointer cast
    int ok = 0;
    timed(steps, "procaddr5", [&] {
      for (int i = 0; i < 5; ++i) {
        CUdriverProcAddressQueryResult status;
        ok += get_proc(kNames[i], &syms[i], 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) ==
              CUDA_SUCCESS;
      }
    });
    dlsym5(h, again);
    int equal = 0;
    for (int i = 0; i < 5; ++i) equal += syms[i] == again[i];
    extra = ", \"found\": " + std::to_string(ok) + ", \"equal_dlsym\": " + std::to_string(equal);
  } else if (mode == "attr") {
    // The calls kpack's first launch made besides the lookup.
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr || dlsym5(h, syms) != 5) return fail("dlopen or dlsym failed");
    decltype(&cuCtxGetDevice) ctx_get_device;
    decltype(&cuDeviceGetAttribute) get_attribute;
    std::memcpy(&ctx_get_device, &syms[0], sizeof syms[0]);
    std::memcpy(&get_attribute, &syms[1], sizeof syms[1]);
    int major = 0, minor = 0;
    CUdevice dev = 0;
    auto cc = [&] {
      get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
      get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
    };
    timed(steps, "attr2_first", cc);
    timed(steps, "attr2_second", cc);
    timed(steps, "ctx_get_device_first", [&] { ctx_get_device(&dev); });
    timed(steps, "ctx_get_device_second", [&] { ctx_get_device(&dev); });
    extra = ", \"cc\": " + std::to_string(10 * major + minor) +
            ", \"device\": " + std::to_string(dev);
  } else {
    return 2;
  }
  std::printf("{\"mode\": \"%s\"", mode.c_str());
  for (const Step& s : steps) std::printf(", \"%s_ns\": %lld", s.name, s.ns);
  std::printf("%s}\n", extra.c_str());
  return 0;
}

// Runs /proc/self/exe --child `mode`; returns its stdout line (empty on
// failure) and sets *status to its exit status.
std::string spawn_child(const char* mode, int* status) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  char* argv[] = {const_cast<char*>("kpack_cold_lookup"), const_cast<char*>("--child"),
                  const_cast<char*>(mode), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; rc == 0 && (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  *status = 1;
  int ws = 0;
  if (rc == 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws)) *status = WEXITSTATUS(ws);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return *status == 0 ? out : "";
}

// The "<key>": <number> pairs of one child's line, in order ("mode" has a
// string value and is skipped).
std::vector<std::pair<std::string, double>> fields_of(const std::string& line) {
  std::vector<std::pair<std::string, double>> out;
  for (size_t at = line.find("\": "); at != std::string::npos; at = line.find("\": ", at + 1)) {
    const size_t open = line.rfind('"', at - 1);
    if (line[at + 3] != '"') {
      out.emplace_back(line.substr(open + 1, at - open - 1), std::atof(line.c_str() + at + 3));
    }
  }
  return out;
}

// Whether `key` names a timed step ("..._ns") rather than a fact.
bool is_step(const std::string& key) {
  return key.size() > 3 && key.compare(key.size() - 3, 3, "_ns") == 0;
}

// The q-quantile of sorted `v` (nearest rank).
double quantile(const std::vector<double>& v, double q) {
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--child") == 0) return child(argv[2]);
  int runs = 30;
  if (argc == 3 && std::strcmp(argv[1], "--runs") == 0) runs = std::atoi(argv[2]);
  if ((argc != 1 && argc != 3) || runs < 1) {
    std::fprintf(stderr, "usage: kpack_cold_lookup [--runs N]\n");
    return 2;
  }
  // mode -> step -> samples, and each mode's step order for the table.
  std::map<std::string, std::map<std::string, std::vector<double>>> samples;
  std::map<std::string, std::vector<std::string>> order;
  std::map<std::string, std::string> facts;  // mode -> " found=5 ..." of its first run
  for (int run = 0; run < runs; ++run) {
    for (const char* mode : kModes) {
      int status = 0;
      const std::string line = spawn_child(mode, &status);
      if (status != 0) {
        std::fprintf(stderr, "kpack_cold_lookup: %s child exited %d%s\n", mode, status,
                     status == 77 ? " (no CUDA device)" : "");
        return status == 77 ? 77 : 1;
      }
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      for (const auto& [key, value] : fields_of(line)) {
        if (!is_step(key)) {
          if (run == 0) facts[mode] += " " + key + "=" + std::to_string(static_cast<long>(value));
          continue;
        }
        if (run == 0) order[mode].push_back(key);
        samples[mode][key].push_back(value);
      }
    }
  }
  std::fprintf(stderr, "%-9s %-26s %10s %10s %10s  (ns, %d runs)\n", "mode", "step", "median",
               "p10", "p90", runs);
  for (const char* mode : kModes) {
    for (const std::string& step : order[mode]) {
      std::vector<double>& v = samples[mode][step];
      std::sort(v.begin(), v.end());
      std::fprintf(stderr, "%-9s %-26s %10.0f %10.0f %10.0f\n", mode, step.c_str(),
                   quantile(v, 0.5), quantile(v, 0.1), quantile(v, 0.9));
    }
  }
  for (const char* mode : kModes) {
    std::fprintf(stderr, "%-9s run 0:%s\n", mode, facts[mode].c_str());
  }
  return 0;
}
