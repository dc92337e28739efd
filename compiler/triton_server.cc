#include "triton_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "fs_util.h"
#include "json_util.h"
#include "toolchain.h"

extern char** environ;

namespace kpack {
namespace {

namespace fs = std::filesystem;
namespace json = llvm::json;
using Clock = std::chrono::steady_clock;

// How long a server that accepted a connection may take to say hello: it
// answers at once unless it is still finishing a request of a client
// that went away.
constexpr double kHelloSeconds = 10;
constexpr double kQuitSeconds = 2;

const char* EnvText(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

double EnvNumber(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  return *end == '\0' && value > 0 ? value : fallback;
}

struct SlotFiles {
  std::string lock, sock, pid, log;
};
SlotFiles FilesOf(const std::string& dir, int slot) {
  std::string stem = dir + "/slot-" + std::to_string(slot);
  return SlotFiles{stem + ".lock", stem + ".sock", stem + ".pid", stem + ".log"};
}

// A slot held by this thread: an flock on its lock file, released on
// destruction.  Each holder opens the file itself, so threads of one
// process exclude each other too (flock belongs to the open file).
class Slot {
 public:
  Slot(const TritonServerOptions& o) {
    std::error_code ec;
    fs::create_directories(o.dir, ec);
    int n = std::max(1, o.slots);
    for (int i = 0; i < n && fd_ < 0; ++i) Take(o.dir, i, LOCK_EX | LOCK_NB);
    if (fd_ >= 0) return;
    // All busy: wait on one, spread by process and thread.
    size_t h = std::hash<std::thread::id>()(std::this_thread::get_id()) ^ static_cast<size_t>(getpid());
    Take(o.dir, static_cast<int>(h % static_cast<size_t>(n)), LOCK_EX);
  }
  ~Slot() {
    if (fd_ >= 0) close(fd_);  // releases the flock
  }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  const SlotFiles& files() const { return files_; }
  bool held() const { return fd_ >= 0; }

 private:
  void Take(const std::string& dir, int i, int how) {
    SlotFiles files = FilesOf(dir, i);
    // O_CLOEXEC: a server started while we hold the lock must not inherit it.
    int fd = open(files.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    int rc;
    while ((rc = flock(fd, how)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      close(fd);
      return;
    }
    fd_ = fd;
    files_ = files;
  }
  int fd_ = -1;
  SlotFiles files_;
};

// One connection to a server.
class Connection {
 public:
  enum class Read { kLine, kClosed, kTimeout };
  ~Connection() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    buffer_.clear();
  }
  // Connects to the socket at `path`; false when nothing listens there.
  bool Connect(const std::string& path) {
    Close();
    // A socket address holds about 107 bytes; a longer path is reached
    // through its directory's descriptor.
    std::string address = path;
    int dir_fd = -1;
    if (path.size() >= sizeof(sockaddr_un::sun_path)) {
      fs::path p(path);
      dir_fd = open(p.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (dir_fd < 0) return false;
      address = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + p.filename().string();
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, address.c_str(), sizeof addr.sun_path - 1);
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (dir_fd >= 0) close(dir_fd);
    if (!ok) Close();
    return ok;
  }
  bool Send(const std::string& line) {
    for (size_t at = 0; at < line.size();) {
      ssize_t n = send(fd_, line.data() + at, line.size() - at, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  Read ReadLine(std::string& line, Clock::time_point deadline) {
    while (true) {
      if (size_t newline = buffer_.find('\n'); newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return Read::kLine;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return Read::kTimeout;
      pollfd p{fd_, POLLIN, 0};
      int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (rc < 0 && errno != EINTR) return Read::kClosed;
      if (rc <= 0) continue;
      char chunk[4096];
      ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Read::kClosed;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

std::string FormatSeconds(double s) {
  char text[32];
  snprintf(text, sizeof text, "%g", s);
  return text;
}

Clock::time_point After(double seconds) {
  return Clock::now() + std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// The servers this process started and has not reaped: only these are
// waited for here, as any other child of ours (an nvcc of another thread
// whose pid a stale pid file names) belongs to its own waiter.
std::mutex children_mutex;
std::vector<pid_t> children;

void AddChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(children_mutex);
  children.push_back(pid);
}

// Whether `pid` has exited (reaped here when we started it; a zombie
// whose parent has not reaped it counts as exited).
bool Exited(pid_t pid, int* status = nullptr) {
  {
    std::lock_guard<std::mutex> lock(children_mutex);
    auto it = std::find(children.begin(), children.end(), pid);
    if (it != children.end()) {
      int st = 0;
      pid_t r = waitpid(pid, &st, WNOHANG);
      if (r == 0) return false;
      children.erase(it);
      if (status) *status = st;
      return true;
    }
  }
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::optional<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  size_t paren = stat->rfind(')');
  return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
}

// Whether `pid` is a server this process started and has not reaped.  Such
// a one may be exiting: its command line is already gone, yet it must be
// waited for, or it stays a zombie.
bool IsChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(children_mutex);
  return std::find(children.begin(), children.end(), pid) != children.end();
}

// Whether `pid` is a server of the socket `sock`: a pid file may be stale
// and its number reused by another program, which must not be killed.
bool IsServerOf(pid_t pid, const std::string& sock) {
  std::optional<std::string> cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (!cmdline) return false;
  std::string arg;
  for (char c : *cmdline) {
    if (c != '\0') {
      arg += c;
      continue;
    }
    if (arg == sock) return true;
    arg.clear();
  }
  return false;
}

pid_t ReadPid(const std::string& path) {
  std::optional<std::string> text = ReadFile(path);
  return text ? static_cast<pid_t>(std::atol(text->c_str())) : 0;
}

// Kills the server `pid` of `sock` and waits for it to go.
void KillServer(pid_t pid, const std::string& sock) {
  if (pid <= 0 || Exited(pid) || (!IsServerOf(pid, sock) && !IsChild(pid))) return;
  // Its process group (it leads one: started with setsid), so that a
  // compiler it was running (ptxas) goes too, rather than burn on.
  if (kill(-pid, SIGKILL) != 0) kill(pid, SIGKILL);
  for (auto deadline = After(kQuitSeconds); !Exited(pid) && Clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// The last lines of a server's log, for an error.
std::string LogTail(const std::string& log, size_t lines = 20) {
  std::string text = ReadFile(log).value_or("");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t at = text.size();
  for (size_t n = 0; n < lines && at != std::string::npos && at > 0; ++n) at = text.rfind('\n', at - 1);
  return at == std::string::npos || at == 0 ? text : text.substr(at + 1);
}

std::vector<std::string> ServerArgv(const TritonServerOptions& o, const SlotFiles& files) {
  char idle[32];
  snprintf(idle, sizeof idle, "%g", o.idle_s);
  return {o.python, o.helper, "serve", files.sock, "--idle", idle};
}

// Starts the slot's server: its own session (Ctrl-C and Ninja's process
// group do not reach it; `kpack build` stops it), stdin /dev/null, stdout
// and stderr to the slot's log, no other descriptor of ours (all are
// close-on-exec).  Returns "" or why it could not start.
std::string Spawn(const TritonServerOptions& o, const SlotFiles& files, pid_t& pid) {
  std::error_code ec;
  fs::remove(files.sock, ec);  // a dead server's: bind would refuse the name
  std::vector<std::string> argv = ServerArgv(o, files);
  std::vector<char*> c_argv;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, files.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Also what others opened without close-on-exec (Ninja's pipes to its
  // step, above all: Ninja would wait for the server's exit).
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  int rc = posix_spawnp(&pid, c_argv[0], &actions, &attr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return "cannot run " + o.python + ": " + std::strerror(rc);
  AddChild(pid);
  return WriteFileAtomic(files.pid, std::to_string(pid) + "\n");
}

struct Hello {
  pid_t pid = 0;
  double startup_cpu = 0;
};

bool ParseHello(const std::string& line, Hello& hello) {
  llvm::Expected<json::Value> value = json::parse(line);
  if (!value) {
    llvm::consumeError(value.takeError());
    return false;
  }
  const json::Object* o = value->getAsObject();
  if (!o || !o->getInteger("pid")) return false;
  hello.pid = static_cast<pid_t>(*o->getInteger("pid"));
  hello.startup_cpu = o->getNumber("startup_cpu").value_or(0);
  return true;
}

// A connection to the slot's server, which has said hello.
struct Session {
  Connection conn;
  Hello hello;
  bool started = false;  // this call started the server
};

// Connects to the slot's running server.
bool Reconnect(const SlotFiles& files, Session& s, double hello_s = kHelloSeconds) {
  if (!s.conn.Connect(files.sock)) return false;
  std::string line;
  if (s.conn.ReadLine(line, After(hello_s)) == Connection::Read::kLine && ParseHello(line, s.hello)) return true;
  s.conn.Close();
  return false;
}

// Starts the slot's server and connects to it.  Returns "" or the unit's
// error text: the server exited or hung on start-up.
std::string StartAndConnect(const TritonServerOptions& o, const SlotFiles& files, const std::string& label,
                            Session& s) {
  // Whatever is left of an earlier server (one that stopped answering).
  KillServer(ReadPid(files.pid), files.sock);
  pid_t pid = 0;
  std::string argv_text = FormatCommand(ServerArgv(o, files));
  if (std::string err = Spawn(o, files, pid); !err.empty())
    return "Triton failed (" + err + ") for " + label + "\n  command: " + argv_text;
  s.started = true;
  for (auto deadline = After(o.timeout_s);;) {
    if (Reconnect(files, s)) return "";
    int status = 0;
    if (Exited(pid, &status)) {
      std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                            : "exited with code " + std::to_string(WEXITSTATUS(status));
      std::string text = "Triton failed (the compiler process " + how + " on start-up) for " + label +
                         "\n  command: " + argv_text;
      if (std::string tail = LogTail(files.log); !tail.empty()) text += "\n" + tail;
      return text;
    }
    if (Clock::now() >= deadline) {
      KillServer(pid, files.sock);
      std::string text = "Triton failed (the compiler process did not start in " + FormatSeconds(o.timeout_s) +
                         " s) for " + label + "\n  command: " + argv_text;
      if (std::string tail = LogTail(files.log); !tail.empty()) text += "\n" + tail;
      return text;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

enum class Outcome { kAnswered, kDied, kTimedOut };

// Sends one compile and reads its response.
Outcome Ask(Session& s, const TritonServerOptions& o, const TritonCompile& c, TritonServerReply& reply) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  json::Object message{{"op", "compile"}, {"request", c.request}, {"cubin", c.cubin}, {"meta", c.meta},
                       {"cwd", cwd.string()}};
  std::string line;
  if (!s.conn.Send(JsonText(json::Value(std::move(message)), 0))) return Outcome::kDied;
  switch (s.conn.ReadLine(line, After(o.timeout_s))) {
    case Connection::Read::kTimeout: return Outcome::kTimedOut;
    case Connection::Read::kClosed: return Outcome::kDied;
    case Connection::Read::kLine: break;
  }
  llvm::Expected<json::Value> value = json::parse(line);
  if (!value) {
    llvm::consumeError(value.takeError());
    return Outcome::kDied;  // half a line: it died while answering
  }
  const json::Object* r = value->getAsObject();
  if (!r) return Outcome::kDied;
  reply.ok = r->getBoolean("ok").value_or(false);
  reply.output = JsonGetString(*r, "error");
  reply.cpu = r->getNumber("cpu").value_or(0);
  reply.compile_cpu = r->getNumber("compile_cpu").value_or(0);
  return Outcome::kAnswered;
}

}  // namespace

TritonServerOptions TritonServerOptionsFor(const std::string& python, const std::string& helper,
                                           const std::string& work_dir) {
  TritonServerOptions o;
  o.python = python;
  o.helper = helper;
  std::error_code ec;
  // Absolute: the server's command line names its socket, which is how a
  // pid is known to be a server of this directory (IsServerOf).  One
  // directory per compiler: the Python, the helper and the Triton version
  // kpack build probed (KPACK_TRITON_IDENTITY), so that a server left by a
  // killed build (it idles out after a minute) never serves a build whose
  // Triton or Python changed: its results would be cached under the new
  // version's keys.
  std::string identity = python + "\n" + helper + "\n" + std::string(EnvText(kTritonIdentityVariable));
  o.dir = (fs::absolute(work_dir, ec) / "triton" / Hasher().Add(identity).HexDigest().substr(0, 12))
              .lexically_normal()
              .string();
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  o.slots = static_cast<int>(EnvNumber(kTritonSlotsVariable, cores > 0 ? cores : 1));
  o.timeout_s = EnvNumber(kTritonTimeoutVariable, 600);
  return o;
}

bool TritonServerEnabled() {
  const char* value = std::getenv(kTritonServerVariable);
  return !value || std::string(value) != "0";
}

TritonServerReply CompileOnTritonServer(const TritonServerOptions& o, const TritonCompile& c, std::ostream& err) {
  TritonServerReply reply;
  Slot slot(o);
  if (!slot.held()) {
    reply.failure = "Triton failed (cannot lock a compiler slot in " + o.dir + ") for " + c.label;
    return reply;
  }
  const SlotFiles& files = slot.files();
  std::string died_text, timed_text;
  for (int attempt = 0; attempt < 2; ++attempt) {
    Session s;
    if (attempt > 0 || !Reconnect(files, s)) {
      if (std::string e = StartAndConnect(o, files, c.label, s); !e.empty()) {
        reply.failure = e;
        return reply;
      }
    }
    if (s.started) {
      reply.started += 1;
      reply.startup_cpu += s.hello.startup_cpu;
    }
    Outcome outcome = Ask(s, o, c, reply);
    if (outcome == Outcome::kAnswered) return reply;
    s.conn.Close();
    std::string pid = std::to_string(s.hello.pid);
    // Killed either way: a hung one must not go on, and a dead one is
    // reaped here when it is our child.
    KillServer(s.hello.pid, files.sock);
    std::string why = outcome == Outcome::kDied ? "the compiler process died twice"
                                                : "timed out twice after " + FormatSeconds(o.timeout_s) + " s";
    if (attempt == 0) {
      std::string what = outcome == Outcome::kDied
                             ? "died while compiling " + c.label
                             : "did not finish compiling " + c.label + " in " + FormatSeconds(o.timeout_s) +
                                   " s and was killed";
      err << "kpack: the Triton compiler process (pid " << pid << ") " << what
          << "; retrying once in a fresh process\n" << std::flush;
      continue;
    }
    reply.failure = "Triton failed (" + why + ") for " + c.label + "\n  command: " +
                    FormatCommand(ServerArgv(o, files));
    if (std::string tail = LogTail(files.log); !tail.empty()) reply.failure += "\n" + tail;
    // What the compile itself printed before it died (an LLVM assertion, a
    // stack dump), which the server writes to <sock>.out while it compiles.
    if (std::string tail = LogTail(files.sock + ".out"); !tail.empty()) reply.failure += "\n" + tail;
  }
  return reply;
}

void StopTritonServers(const std::string& dir) {
  std::error_code ec;
  std::vector<std::pair<pid_t, SlotFiles>> servers;
  std::set<int> slots;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string(), ext = e.path().extension().string();
    if (name.rfind("slot-", 0) == 0 && (ext == ".pid" || ext == ".sock")) slots.insert(std::atoi(name.c_str() + 5));
  }
  for (int slot : slots) {
    SlotFiles files = FilesOf(dir, slot);
    servers.emplace_back(ReadPid(files.pid), files);
  }
  // Ask all first, then wait for all: they exit in parallel.  Every
  // compile has ended, so each answers at once.
  for (auto& [pid, files] : servers) {
    Session s;
    if (Reconnect(files, s, kQuitSeconds)) s.conn.Send("{\"op\": \"quit\"}\n");
  }
  auto deadline = After(kQuitSeconds);
  for (auto& [pid, files] : servers) {
    while (pid > 0 && !Exited(pid) && (IsServerOf(pid, files.sock) || IsChild(pid)) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    KillServer(pid, files.sock);
    fs::remove(files.sock, ec);
    fs::remove(files.pid, ec);
    fs::remove(files.sock + ".out", ec);
  }
}

}  // namespace kpack
