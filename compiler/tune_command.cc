// tune_command.cc - `kpack tune`: load, ask the tuner what it was built
// from (--list), time (--run, read line by line), write.  Nothing is
// written unless every step succeeded and every measurement arrived.
#include "tune_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include "codegen_text.h"
#include "fs_util.h"
#include "json_util.h"
#include "manifest.h"
#include "pass_timer.h"
#include "triton.h"
#include "triton_source.h"
#include "tune_report.h"
#include "tuner_gen.h"
#include "tuning_merge.h"
#include "tuning_writer.h"
#include "version.h"


namespace kpack {

namespace fs = std::filesystem;

// ---- Running the tuner ---------------------------------------------------

namespace {

// Keeps the end of a long output: enough for a message.
void KeepTail(std::string& output, const std::string& line) {
  output += line + "\n";
  if (output.size() > 16384) output.erase(0, output.size() - 8192);
}

}  // namespace

ToolResult TunerRunner::RunLines(const std::vector<std::string>& argv,
                                 const std::function<void(const std::string&)>& on_line) {
  ToolResult r = Run(argv);
  for (const std::string& line : codegen::SplitLines(r.output)) on_line(line);
  return r;
}

ToolResult ProcessTunerRunner::Run(const std::vector<std::string>& argv) { return ProcessRunner().Run(argv); }

ToolResult ProcessTunerRunner::RunLines(const std::vector<std::string>& argv,
                                        const std::function<void(const std::string&)>& on_line) {
  std::string pending, tail;
  ToolResult result = RunStreaming(argv, [&](const char* data, size_t size) {
    pending.append(data, size);
    for (size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) {
      std::string line = pending.substr(0, end);
      KeepTail(tail, line);
      on_line(line);
    }
  });
  if (!pending.empty()) {
    KeepTail(tail, pending);
    on_line(pending);
  }
  result.output = std::move(tail);
  return result;
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// ---- Progress ----------------------------------------------------------------

// "12s", "3m05s", "1h02m".
std::string Duration(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  char text[32];
  if (s < 60) std::snprintf(text, sizeof text, "%lds", s);
  else if (s < 3600) std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s / 60 % 60);
  return text;
}

// The progress on stderr: on a terminal one line, redrawn at most ten
// times a second; elsewhere (a CI log, a pipe) a line every 2 s, so that
// a long run shows it is alive without flooding the log.
class Progress {
 public:
  Progress(std::ostream& err, bool tty, const TuneClock& clock) : err_(err), tty_(tty), clock_(clock) {}

  void Start(int64_t total) {
    total_ = total;
    start_ = clock_();
    Show(true);
  }
  void Shape(const std::string& what) {
    what_ = what;
    Show(false);
  }
  void Result() {
    ++done_;
    Show(false);
  }
  // The last line; `ok`: all measured (else the line is only ended).
  void Finish(bool ok) {
    if (!started()) return;
    if (ok) {
      const double took = clock_() - start_;
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1fs", took);
      Line("kpack: tune: " + std::to_string(done_) + "/" + std::to_string(total_) + " measured in " +
           (took < 60 ? std::string(seconds) : Duration(took)));
    }
    if (tty_ && drawn_) err_ << "\n";
    drawn_ = false;
  }

 private:
  bool started() const { return total_ >= 0; }

  void Show(bool force) {
    if (!started()) return;
    const double now = clock_();
    if (!force && now - last_ < (tty_ ? 0.1 : 2.0)) return;
    last_ = now;
    std::string text = "kpack: tune: " + std::to_string(done_) + "/" + std::to_string(total_);
    if (total_ > 0) text += " (" + std::to_string(done_ * 100 / total_) + "%)";
    if (!what_.empty()) text += " " + what_;
    if (done_ > 0 && done_ < total_)
      text += ", about " + Duration((now - start_) / static_cast<double>(done_) * static_cast<double>(total_ - done_)) +
              " left";
    Line(text);
  }

  void Line(const std::string& text) {
    if (tty_) {
      err_ << "\r\x1b[K" << text << std::flush;
      drawn_ = true;
    } else {
      err_ << text << "\n" << std::flush;
    }
  }

  std::ostream& err_;
  const bool tty_;
  const TuneClock& clock_;
  int64_t total_ = -1, done_ = 0;
  double start_ = 0, last_ = 0;
  std::string what_;
  bool drawn_ = false;
};


// ---- The protocol ------------------------------------------------------------

// The one member of a protocol line ({"kernel": {...}}), or nullopt.
std::optional<std::pair<std::string, llvm::json::Value>> Message(const std::string& line) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(line);
  if (!v) {
    llvm::consumeError(v.takeError());
    return std::nullopt;
  }
  const llvm::json::Object* o = v->getAsObject();
  if (!o || o->size() < 1) return std::nullopt;
  // An error line also carries "status"; every other line one member.
  if (const llvm::json::Value* e = o->get("error")) return std::make_pair(std::string("error"), *e);
  if (o->size() != 1) return std::nullopt;
  return std::make_pair(o->begin()->first.str(), o->begin()->second);
}

std::string Shorten(const std::string& line) { return line.size() > 200 ? line.substr(0, 200) + "..." : line; }

// What --list said of one kernel.
struct ListedKernel {
  std::string hash;
  std::vector<std::string> combos, candidates;
  int64_t shapes = 0, probe_shapes = 0;
  bool unaligned = false;
};

// Runs --list and compares it with the layouts; "" when the tuner was
// built from these manifests, else the message.
std::string CheckList(const Package& pkg, const std::vector<TuneLayout>& layouts, const TuneOptions& o,
                      TunerRunner& runner) {
  ToolResult r = runner.Run({o.tuner, "--list"});
  if (!r.spawn_error.empty()) return "cannot run the tuner " + o.tuner + ": " + r.spawn_error;
  std::string package;
  bool done = false;
  std::map<std::string, ListedKernel> listed;
  for (const std::string& line : codegen::SplitLines(r.output)) {
    std::optional<std::pair<std::string, llvm::json::Value>> m = Message(line);
    const llvm::json::Object* body = m ? m->second.getAsObject() : nullptr;
    if (m && m->first == "error" && m->second.getAsString()) return m->second.getAsString()->str();
    if (!body)
      return "the tuner " + o.tuner + " --list printed a line kpack tune does not understand: " + Shorten(line);
    if (m->first == "package") {
      package = JsonGetString(*body, "name");
    } else if (m->first == "kernel") {
      ListedKernel& k = listed[JsonGetString(*body, "name")];
      k.hash = JsonGetString(*body, "hash");
      k.combos = JsonGetStrings(*body, "combos");
      k.candidates = JsonGetStrings(*body, "candidates");
      k.shapes = body->getInteger("shapes").value_or(-1);
      k.probe_shapes = body->getInteger("probe_shapes").value_or(-1);
      k.unaligned = body->getBoolean("unaligned").value_or(false);
    } else if (m->first == "done") {
      done = true;
    }
  }
  if (r.exit_code != 0 || !done)
    return "the tuner " + o.tuner + " --list failed (exit code " + std::to_string(r.exit_code) + ")" +
           (r.output.empty() ? "" : ":\n" + r.output);
  const std::string rebuild = "; rebuild the tuner (e.g. meson compile -C build " + pkg.prefix +
                              "-tune) and run kpack tune again";
  if (package != pkg.name)
    return "the tuner " + o.tuner + " was built for package " + package + ", not " + pkg.name + " (" +
           pkg.manifest_path + ")" + rebuild;
  std::vector<std::string> differences;
  std::set<std::string> known;
  for (const TuneLayout& l : layouts) {
    const std::string& name = l.kernel->name;
    known.insert(name);
    auto it = listed.find(name);
    std::vector<std::string> combos, candidates;
    for (size_t m = 0; m < l.combos.size(); ++m) combos.push_back(l.ComboLabel(m));
    for (size_t c = 0; c < l.candidates.size(); ++c) candidates.push_back(l.CandidateLabel(c));
    if (it == listed.end())
      differences.push_back("it has no kernel " + name);
    else if (it->second.hash != l.hash)
      differences.push_back(name + "'s manifest hash is " + it->second.hash + " in the tuner and " + l.hash + " in " +
                            l.kernel->manifest_path);
    else if (it->second.combos != combos || it->second.candidates != candidates ||
             it->second.shapes != static_cast<int64_t>(l.shapes) ||
             it->second.probe_shapes != static_cast<int64_t>(l.probes) || it->second.unaligned != l.unaligned_twin)
      differences.push_back(name + "'s combinations, candidates or shapes differ");
  }
  for (const auto& [name, k] : listed)
    if (!known.count(name)) differences.push_back("it tunes " + name + ", which " + pkg.manifest_path + " does not");
  if (differences.empty()) return "";
  std::string text;
  for (size_t i = 0; i < differences.size(); ++i) text += (i ? "; " : "") + differences[i];
  return "the tuner " + o.tuner + " was built from other manifests than " + pkg.manifest_path + ": " + text +
         rebuild;
}

// What --run reported, for the kernels it ran.
struct RunState {
  std::vector<const TuneLayout*> layouts;
  std::map<std::string, size_t> index;  // kernel name -> position in layouts
  // [kernel][variant][combo][shape][candidate]: variant 0 as the launcher
  // runs aligned calls (or the only one), 1 the unaligned twin; shapes
  // are the grid's, then the probes (TuneLayout::AllShapes).
  std::vector<std::vector<std::vector<std::vector<std::vector<std::optional<double>>>>>> us;
  std::string gpu, driver;
  int sm = 0;
  int64_t work = -1, results = 0;
  bool done = false;
  std::string error;  // the first problem; the rest of the run is ignored
};

void OnDevice(const llvm::json::Object& d, RunState& st, Progress& progress, std::ostream& err) {
  st.gpu = JsonGetString(d, "name");
  st.driver = JsonGetString(d, "driver");
  st.sm = static_cast<int>(d.getInteger("sm").value_or(0));
  st.work = d.getInteger("work").value_or(-1);
  err << "kpack: tune: " << st.gpu << " (sm_" << st.sm << ", driver " << st.driver << "): " << st.work
      << " measurements of " << st.layouts.size() << " kernel" << (st.layouts.size() == 1 ? "" : "s") << "\n";
  progress.Start(st.work);
}

// Checks and stores one result; "" or the problem.
std::string OnResult(const llvm::json::Object& r, RunState& st, Progress& progress) {
  auto it = st.index.find(JsonGetString(r, "kernel"));
  if (it == st.index.end())
    return "a result of kernel '" + JsonGetString(r, "kernel") + "', which it was not asked to tune";
  const TuneLayout& l = *st.layouts[it->second];
  const int64_t m = r.getInteger("combo").value_or(-1), s = r.getInteger("shape").value_or(-1),
                c = r.getInteger("candidate").value_or(-1);
  // Without "variant": the aligned (or only) variant.
  const int64_t v = r.get("variant") ? r.getInteger("variant").value_or(-1) : 0;
  const std::optional<double> us = r.getNumber("us");
  if (m < 0 || m >= static_cast<int64_t>(l.combos.size()) || s < 0 || s >= static_cast<int64_t>(l.AllShapes()) ||
      c < 0 || c >= static_cast<int64_t>(l.candidates.size()) || !l.built[m][c])
    return "a result of " + l.kernel->name + " for a combination, shape or candidate it does not have";
  if (v == 1 && !l.unaligned_twin)
    return "a result of " + l.kernel->name + " for the unaligned variant (variant 1), which it does not have";
  if (v != 0 && v != 1) return "a result of " + l.kernel->name + " for a variant other than 0 (as is) and 1 (unaligned)";
  if (!us || !std::isfinite(*us) || *us < 0) return "a result of " + l.kernel->name + " without a time";
  std::optional<double>& slot = st.us[it->second][v][m][s][c];
  if (slot)
    return "a second result of " + l.kernel->name + " " + l.CandidateLabel(c) + " at one shape" +
           (v == 1 ? " (unaligned)" : "");
  slot = *us;
  ++st.results;
  progress.Result();
  return "";
}

void OnLine(const std::string& line, const TuneOptions& o, RunState& st, Progress& progress, std::ostream& err) {
  if (!st.error.empty()) return;
  std::optional<std::pair<std::string, llvm::json::Value>> m = Message(line);
  const llvm::json::Object* body = m ? m->second.getAsObject() : nullptr;
  if (m && m->first == "error" && m->second.getAsString()) {
    st.error = m->second.getAsString()->str();
    return;
  }
  if (!body) {
    st.error = "the tuner " + o.tuner + " printed a line kpack tune does not understand: " + Shorten(line);
  } else if (m->first == "device") {
    OnDevice(*body, st, progress, err);
  } else if (m->first == "progress") {
    auto it = st.index.find(JsonGetString(*body, "kernel"));
    const int64_t combo = body->getInteger("combo").value_or(-1), shape = body->getInteger("shape").value_or(-1),
                  variant = body->getInteger("variant").value_or(0);
    if (it == st.index.end() || combo < 0 || shape < 0) return;
    const TuneLayout& l = *st.layouts[it->second];
    if (combo >= static_cast<int64_t>(l.combos.size()) || shape >= static_cast<int64_t>(l.AllShapes())) return;
    std::string label = l.ComboLabel(combo);
    progress.Shape(l.kernel->name + (label.empty() ? "" : " " + label) + " at " + l.ShapeLabel(shape) +
                   (variant == 1 ? " (unaligned)" : ""));
  } else if (m->first == "result") {
    std::string problem = OnResult(*body, st, progress);
    if (!problem.empty()) st.error = "the tuner " + o.tuner + " reported " + problem;
  } else if (m->first == "done") {
    st.done = true;
  } else {
    st.error = "the tuner " + o.tuner + " printed a line kpack tune does not understand: " + Shorten(line);
  }
}

// Runs --run for `layouts`; the measurements, or an error in st.error.
RunState RunTuner(const std::vector<const TuneLayout*>& layouts, bool all, const TuneOptions& o, TunerRunner& runner,
                  std::ostream& err, const TuneClock& clock) {
  RunState st;
  st.layouts = layouts;
  std::vector<std::string> argv = {o.tuner, "--run", "--repeats", std::to_string(o.repeats), "--device",
                                   std::to_string(o.device)};
  for (size_t i = 0; i < layouts.size(); ++i) {
    const TuneLayout& l = *layouts[i];
    st.index[l.kernel->name] = i;
    const std::vector<std::vector<std::optional<double>>> table(
        l.AllShapes(), std::vector<std::optional<double>>(l.candidates.size()));
    st.us.emplace_back(l.unaligned_twin ? 2 : 1,
                       std::vector<std::vector<std::vector<std::optional<double>>>>(l.combos.size(), table));
    if (!all) argv.insert(argv.end(), {"--kernel", l.kernel->name});
  }
  if (!o.driver.empty()) argv.insert(argv.end(), {"--driver", o.driver});
  Progress progress(err, o.tty, clock);
  ToolResult r = runner.RunLines(argv, [&](const std::string& line) { OnLine(line, o, st, progress, err); });
  const bool ok = r.spawn_error.empty() && r.exit_code == 0 && st.error.empty() && st.done && st.results == st.work;
  progress.Finish(ok);
  if (!r.spawn_error.empty()) st.error = "cannot run the tuner " + o.tuner + ": " + r.spawn_error;
  else if (!st.error.empty()) return st;
  else if (r.exit_code > 128)
    st.error = "the tuner " + o.tuner + " was killed by signal " + std::to_string(r.exit_code - 128);
  else if (r.exit_code != 0 || !st.done)
    st.error = "the tuner " + o.tuner + " stopped before it finished (exit code " + std::to_string(r.exit_code) + ")";
  else if (st.results != st.work)
    st.error = "the tuner " + o.tuner + " reported " + std::to_string(st.results) + " measurements of the " +
               std::to_string(st.work) + " it announced";
  return st;
}

std::string Label(const TuneOptions& o) {
  std::error_code ec;
  fs::path relative = fs::relative(fs::absolute(o.package_path, ec), fs::absolute(o.root, ec), ec);
  if (ec || relative.empty()) return fs::path(o.package_path).filename().generic_string();
  return relative.generic_string();
}

TuneResults Results(const Package& pkg, const RunState& st, const TuneOptions& o) {
  TuneResults r{pkg.name, Label(o), st.gpu, st.sm, st.driver, kKpackVersion, o.repeats, {}};
  for (size_t i = 0; i < st.layouts.size(); ++i) {
    const TuneLayout& l = *st.layouts[i];
    const Kernel& k = *l.kernel;
    TunedResultKernel rk{k.name, l.hash, {}, {}, {}, {}, {}};
    for (const TuneAxis& axis : k.tune->key) rk.key.emplace_back(axis.param, axis.values);
    for (size_t t : l.tuned) rk.tuned.push_back(k.constexprs[t].name);
    for (size_t c = 0; c < l.candidates.size(); ++c) rk.candidates.push_back(l.CandidateLabel(c));
    for (size_t p = l.shapes; p < l.AllShapes(); ++p) rk.probes.push_back(l.ShapeKey(p));
    // Per combination the aligned (or only) variant's table, then the
    // unaligned one's.
    for (size_t m = 0; m < l.combos.size(); ++m)
      for (size_t v = 0; v < st.us[i].size(); ++v) {
        TunedResultTable t;
        for (size_t j = 0; j < l.combo_axes.size(); ++j) {
          const Constexpr& c = k.constexprs[l.combo_axes[j]];
          t.combo.emplace_back(c.name, ValueText(c, l.combos[m][j]));
        }
        t.label = l.ComboLabel(m);
        t.unaligned = v == 1;
        t.us = st.us[i][v][m];
        rk.tables.push_back(std::move(t));
      }
    r.kernels.push_back(std::move(rk));
  }
  return r;
}

// The layouts --kernel picks (all without it), in package order; "" or the problem.
std::string Select(const Package& pkg, const std::vector<TuneLayout>& layouts, const TuneOptions& o,
                   std::vector<const TuneLayout*>& out) {
  std::string tuned;
  for (const TuneLayout& l : layouts) tuned += (tuned.empty() ? "" : ", ") + l.kernel->name;
  for (const std::string& name : o.kernels) {
    const Kernel* k = nullptr;
    for (const Kernel& candidate : pkg.kernels)
      if (candidate.name == name) k = &candidate;
    if (!k) return "--kernel " + name + ": " + pkg.manifest_path + " has no kernel " + name;
    if (!k->tune) return "--kernel " + name + ": " + name + " has no tune: section (tuned kernels: " + tuned + ")";
  }
  for (const TuneLayout& l : layouts)
    if (o.kernels.empty() || std::count(o.kernels.begin(), o.kernels.end(), l.kernel->name)) out.push_back(&l);
  return "";
}

}  // namespace

int TunePackage(const Package& pkg, const std::vector<Specialization>& specs, const TuneOptions& o,
                TunerRunner& runner, std::ostream& err, const TuneClock& clock) {
  std::vector<TuneLayout> layouts = TuneLayouts(pkg, specs);
  if (layouts.empty()) {
    err << "kpack: error: " << pkg.manifest_path << " has no kernel with a tune: section: nothing to tune\n";
    return 1;
  }
  std::vector<const TuneLayout*> selected;
  if (std::string e = Select(pkg, layouts, o, selected); !e.empty()) {
    err << "kpack: error: " << e << "\n";
    return 1;
  }
  {
    PassTimer t("list", o.perf, err);
    if (std::string e = CheckList(pkg, layouts, o, runner); !e.empty()) {
      err << "kpack: error: " << e << "\n";
      return 1;
    }
  }
  RunState st;
  {
    PassTimer t("run", o.perf, err);
    st = RunTuner(selected, o.kernels.empty(), o, runner, err, clock);
  }
  if (!st.error.empty()) {
    err << "kpack: error: " << st.error << "\n";
    return 1;
  }
  PassTimer t("write", o.perf, err);
  const TuneResults results = Results(pkg, st, o);
  const std::string slug = GpuSlug(results.gpu);
  const std::string yaml = (fs::path(o.out_dir) / (slug + ".yaml")).generic_string();
  const std::string report = o.report_path.empty() ? (fs::path(o.out_dir) / (slug + ".html")).generic_string()
                                                   : o.report_path;
  std::string tuning = FormatTuningFile(results), kept;
  // --kernel: into the file of this GPU, if there is one, keeping its
  // other kernels (tuning_merge.h).
  std::error_code ec;
  if (!o.kernels.empty() && fs::exists(yaml, ec)) {
    std::optional<std::string> existing = ReadFile(yaml);
    if (!existing) {
      err << "kpack: error: " << yaml << ": cannot read the tuning file that --kernel would merge into\n";
      return 1;
    }
    TuningMerge merged = MergeTuningText(yaml, *existing, tuning);
    if (!merged.error.empty()) {
      err << merged.error << "\n";
      return 1;
    }
    tuning = std::move(merged.text);
    for (const std::string& name : merged.kept) kept += (kept.empty() ? "" : ", ") + name;
  }
  // The report first: a failure there leaves no tuning file behind, and
  // the tuning file is what builds read.
  const std::vector<std::pair<std::string, std::string>> files = {{report, FormatTuneReport(results)},
                                                                     {yaml, tuning}};
  for (const auto& [path, text] : files)
    if (std::string e = WriteFileAtomic(path, text); !e.empty()) {
      err << "kpack: error: " << e << "\n";
      return 1;
    }
  err << "kpack: tune: wrote " << yaml << (kept.empty() ? "" : " (its other kernels kept: " + kept + ")") << " and "
      << report << "\n";
  return 0;
}

int RunTune(const TuneOptions& o, TunerRunner& runner, std::ostream& err, const TuneClock& clock) {
  Diagnostics diag;
  std::optional<Package> pkg;
  {
    PassTimer t("load", o.perf, err);
    LoadOptions load = CommandLineLoadOptions(o.root, o.allow_outside_root, o.python_path, o.include_dirs);
    // Triton kernels' sources are read as kpack build reads them: their
    // autotune configs are part of what was built, so of the hashes.
    HelperDescriber describer(runner, TritonTools{o.python, o.triton_helper, ""});
    load.describer = &describer;
    pkg = LoadPackage(o.package_path, load, diag);
  }
  err << diag.Text();
  if (!pkg || diag.HasErrors()) return 1;
  std::vector<Specialization> specs;
  Diagnostics expand_diag;
  {
    PassTimer t("expand", o.perf, err);
    specs = Expand(*pkg, expand_diag);
  }
  err << expand_diag.Text();
  if (expand_diag.HasErrors()) return 1;
  return TunePackage(*pkg, specs, o, runner, err, clock);
}

}  // namespace kpack
