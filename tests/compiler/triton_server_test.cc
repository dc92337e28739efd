// The Triton compiler process's client (compiler/triton_server.h) against a
// fake server (fake_triton_server.py) that compiles, fails, crashes or
// hangs on command: the messages it receives, the slots, the retry of a
// crash or a hang in a fresh process, the second failure, a server that
// dies on start-up, and stopping every server of a directory.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "fs_util.h"
#include "test_util.h"
#include "triton_server.h"

using kpack::testing::ScratchDir;

namespace {

std::string Env(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// Options for the fake in <scratch>/work/triton.
kpack::TritonServerOptions FakeOptions(const ScratchDir& dir, int slots = 1, double timeout_s = 20) {
  kpack::TritonServerOptions o;
  o.python = Env("KPACK_TEST_PYTHON", "python3");
  o.helper = Env("KPACK_TEST_DATA", ".") + "/fake_triton_server.py";
  o.dir = dir.path() + "/work/triton";
  o.slots = slots;
  o.timeout_s = timeout_s;
  return o;
}

// A request for the fake: unit `name` behaving as `behave`.
kpack::TritonCompile Request(const ScratchDir& dir, const std::string& name, const std::string& behave) {
  dir.Write(name + ".json", "{\"name\": \"" + name + "\", \"behave\": \"" + behave + "\"}");
  return kpack::TritonCompile{name + ".json", name + ".cubin.tmp", name + ".meta.tmp", "unit " + name};
}

std::string Command(const kpack::TritonServerOptions& o, int slot) {
  return o.python + " " + o.helper + " serve " + o.dir + "/slot-" + std::to_string(slot) + ".sock --idle 60";
}

bool Alive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

pid_t PidOf(const kpack::TritonServerOptions& o, int slot) {
  return static_cast<pid_t>(std::atol(kpack::ReadFile(o.dir + "/slot-" + std::to_string(slot) + ".pid")
                                          .value_or("0").c_str()));
}

// The pid named in a retry line.
pid_t PidInLine(const std::string& line) {
  size_t at = line.find("(pid ");
  return at == std::string::npos ? 0 : static_cast<pid_t>(std::atol(line.c_str() + at + 5));
}

}  // namespace

TEST_CASE("a compile starts the slot's server once and sends it the request", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir);
  std::ostringstream err;
  kpack::TritonServerReply first = kpack::CompileOnTritonServer(o, Request(dir, "a", "ok"), err);
  CHECK(first.ok);
  CHECK(first.failure.empty());
  CHECK(first.started == 1);
  CHECK(first.startup_cpu == 0.25);
  CHECK(first.cpu == 0.5);
  CHECK(first.compile_cpu == 0.375);
  CHECK(kpack::ReadFile("a.cubin.tmp") == "cubin of a");
  CHECK(kpack::ReadFile("a.meta.tmp") == "{}");
  pid_t pid = PidOf(o, 0);
  CHECK(Alive(pid));

  kpack::TritonServerReply second = kpack::CompileOnTritonServer(o, Request(dir, "b", "ok"), err);
  CHECK(second.ok);
  CHECK(second.started == 0);  // the same server
  CHECK(second.startup_cpu == 0);
  CHECK(PidOf(o, 0) == pid);
  CHECK(err.str().empty());
  std::string cwd = std::filesystem::current_path().string();
  CHECK(kpack::ReadFile(o.dir + "/received.log") ==
        "{\"cubin\":\"a.cubin.tmp\",\"cwd\":\"" + cwd + "\",\"meta\":\"a.meta.tmp\",\"op\":\"compile\","
        "\"request\":\"a.json\"}\n"
        "{\"cubin\":\"b.cubin.tmp\",\"cwd\":\"" + cwd + "\",\"meta\":\"b.meta.tmp\",\"op\":\"compile\","
        "\"request\":\"b.json\"}\n");

  kpack::StopTritonServers(o.dir);
  CHECK_FALSE(Alive(pid));
  CHECK(kpack::ReadFile(o.dir + "/received.log").value_or("").find("{\"op\": \"quit\"}\n") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(o.dir + "/slot-0.sock"));
  CHECK_FALSE(std::filesystem::exists(o.dir + "/slot-0.pid"));
}

TEST_CASE("a socket path longer than a socket address holds", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir);
  o.dir = dir.path() + "/" + std::string(120, 'd') + "/triton";
  std::ostringstream err;
  kpack::TritonServerReply r = kpack::CompileOnTritonServer(o, Request(dir, "long", "ok"), err);
  CHECK(r.ok);
  CHECK(kpack::CompileOnTritonServer(o, Request(dir, "long2", "ok"), err).started == 0);
  pid_t pid = PidOf(o, 0);
  kpack::StopTritonServers(o.dir);
  CHECK_FALSE(Alive(pid));
  CHECK_FALSE(std::filesystem::exists(o.dir + "/slot-0.sock"));
}

TEST_CASE("a compile error is the helper's text, and the server goes on", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir);
  std::ostringstream err;
  kpack::TritonServerReply r = kpack::CompileOnTritonServer(o, Request(dir, "bad", "fail"), err);
  CHECK_FALSE(r.ok);
  CHECK(r.failure.empty());
  CHECK(r.output == "fake.py:3:7: error: on purpose\nTriton failed to compile bad: CompilationError\n");
  CHECK(r.cpu == 0.125);
  CHECK(err.str().empty());
  CHECK(kpack::CompileOnTritonServer(o, Request(dir, "good", "ok"), err).started == 0);
  kpack::StopTritonServers(o.dir);
}

TEST_CASE("concurrent compiles take different slots", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir, 2);
  // Two hang-once units: the first compile of each holds its slot until
  // the 3 s timeout, so the two run at the same time.
  o.timeout_s = 3;
  std::ostringstream err0, err1;
  kpack::TritonServerReply r0, r1;
  kpack::TritonCompile c0 = Request(dir, "x", "hang-once"), c1 = Request(dir, "y", "hang-once");
  std::thread t([&] { r1 = kpack::CompileOnTritonServer(o, c1, err1); });
  r0 = kpack::CompileOnTritonServer(o, c0, err0);
  t.join();
  CHECK(r0.ok);
  CHECK(r1.ok);
  CHECK(std::filesystem::exists(o.dir + "/slot-0.pid"));
  CHECK(std::filesystem::exists(o.dir + "/slot-1.pid"));
  CHECK(PidOf(o, 0) != PidOf(o, 1));
  kpack::StopTritonServers(o.dir);
}

TEST_CASE("a server that dies while compiling is reported and the unit retried once", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir);
  std::ostringstream err;
  kpack::TritonServerReply r = kpack::CompileOnTritonServer(o, Request(dir, "c", "crash-once"), err);
  CHECK(r.ok);
  CHECK(r.started == 2);
  CHECK(r.startup_cpu == 0.5);
  pid_t dead = PidInLine(err.str());
  CHECK(dead > 0);
  CHECK(err.str() == "kpack: the Triton compiler process (pid " + std::to_string(dead) +
                         ") died while compiling unit c; retrying once in a fresh process\n");
  CHECK(PidOf(o, 0) != dead);
  CHECK(Alive(PidOf(o, 0)));
  CHECK(kpack::ReadFile("c.cubin.tmp") == "cubin of c");
  kpack::StopTritonServers(o.dir);
}

TEST_CASE("a server that dies twice fails the unit with its log", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir);
  std::ostringstream err;
  kpack::TritonServerReply r = kpack::CompileOnTritonServer(o, Request(dir, "d", "crash"), err);
  CHECK_FALSE(r.ok);
  CHECK(r.failure == "Triton failed (the compiler process died twice) for unit d\n  command: " + Command(o, 0) +
                         "\nfake: crashing on purpose while compiling d");
  std::string said = err.str();
  CHECK(said.find("died while compiling unit d; retrying once in a fresh process\n") != std::string::npos);
  CHECK(std::count(said.begin(), said.end(), '\n') == 1);
  // The next unit starts a fresh server.
  kpack::TritonServerReply next = kpack::CompileOnTritonServer(o, Request(dir, "e", "ok"), err);
  CHECK(next.ok);
  CHECK(next.started == 1);
  kpack::StopTritonServers(o.dir);
}

TEST_CASE("a server that dies on start-up is an error with its log", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir);
  std::ostringstream err;
  setenv("FAKE_TRITON_STARTUP", "die", 1);
  kpack::TritonServerReply r = kpack::CompileOnTritonServer(o, Request(dir, "f", "ok"), err);
  unsetenv("FAKE_TRITON_STARTUP");
  CHECK_FALSE(r.ok);
  CHECK(r.failure == "Triton failed (the compiler process exited with code 3 on start-up) for unit f\n  command: " +
                         Command(o, 0) + "\nfake: cannot start (on purpose)");
  CHECK(err.str().empty());
}

TEST_CASE("a compile past the timeout is killed and retried once; twice fails the unit", "[triton_server]") {
  ScratchDir dir;
  kpack::TritonServerOptions o = FakeOptions(dir, 1, 1);
  std::ostringstream err;
  kpack::TritonServerReply once = kpack::CompileOnTritonServer(o, Request(dir, "g", "hang-once"), err);
  CHECK(once.ok);
  pid_t hung = PidInLine(err.str());
  CHECK(err.str() == "kpack: the Triton compiler process (pid " + std::to_string(hung) +
                         ") did not finish compiling unit g in 1 s and was killed; retrying once in a fresh process\n");
  CHECK_FALSE(Alive(hung));

  std::ostringstream err2;
  kpack::TritonServerReply twice = kpack::CompileOnTritonServer(o, Request(dir, "h", "hang"), err2);
  CHECK_FALSE(twice.ok);
  CHECK(twice.failure == "Triton failed (timed out twice after 1 s) for unit h\n  command: " + Command(o, 0));
  CHECK(err2.str().find("did not finish compiling unit h in 1 s and was killed; retrying once") != std::string::npos);
  CHECK_FALSE(Alive(PidOf(o, 0)));
  kpack::StopTritonServers(o.dir);
}
