// Runs the benches as subprocesses of the soac executable (see reproduce.hpp for why), with a
// progress line and an estimate of the time left, and draws the plots with python3.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "core/error.hpp"
#include "reproduce/reproduce.hpp"

namespace soac::reproduce {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

struct child_result {
  int exit_code = -1;  // -1: killed by a signal
  std::string last_error;
};

// Runs argv with stdin from /dev/null, stdout appended to `log`, stderr read line by line by
// on_line (and appended to `log` too); on_idle is called about once a second.
child_result spawn(const std::vector<std::string>& argv, const fs::path& log, const std::function<void(const std::string&)>& on_line,
                   const std::function<void()>& on_idle) {
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw input_error(log.string() + ": cannot open for writing: " + std::strerror(errno));
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(log_fd);
    throw resource_error(std::string("reproduce: pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd), ::close(err_pipe[0]), ::close(err_pipe[1]);
    throw resource_error(std::string("reproduce: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(err_pipe[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    const std::string msg = "soac: error: cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  child_result out;
  std::string pending;
  char buf[4096];
  for (;;) {
    pollfd p{err_pipe[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, 1000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      on_idle();
      continue;
    }
    const ssize_t got = ::read(err_pipe[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    (void)!::write(log_fd, buf, std::size_t(got));
    pending.append(buf, std::size_t(got));
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.starts_with("soac: error: ") || line.starts_with("soac: internal error: ")) out.last_error = line.substr(line.find(": ") + 2);
      on_line(line);
    }
  }
  ::close(err_pipe[0]);
  ::close(log_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (WIFSIGNALED(status)) out.last_error = "killed by signal " + std::to_string(WTERMSIG(status));
  return out;
}

std::string duration(double s) {
  const long t = std::lround(std::max(0.0, s));
  std::ostringstream o;
  if (t >= 3600) o << t / 3600 << "h" << (t / 60) % 60 << "m";
  else if (t >= 60) o << t / 60 << "m" << (t % 60 < 10 ? "0" : "") << t % 60 << "s";
  else o << t << "s";
  return o.str();
}

// The progress line: runs done, the current bench's own progress ("[hist 12/72] ..."), the time
// so far and an estimate of the time left. The estimate starts from each run's rough estimate,
// scales the runs to come by how the finished ones compared with theirs, and within a run uses
// its case count once a few cases are done.
class progress_line {
 public:
  // estimates[i]: run i's rough seconds (0 for a run that will be skipped).
  progress_line(const std::vector<run_spec>& specs, std::vector<double> estimates, bool enabled)
      : specs_(specs), estimates_(std::move(estimates)), enabled_(enabled), tty_(::isatty(2)) {
    start_ = clock_type::now();
  }
  void begin(std::size_t index) {
    index_ = index;
    run_start_ = clock_type::now();
    done_cases_ = total_cases_ = 0;
    show(true);
  }
  void line(const std::string& text) {
    static const std::regex re(R"(^\[[^\] ]+ (\d+)/(\d+)\])");
    std::smatch m;
    if (std::regex_search(text, m, re)) {
      done_cases_ = std::stoi(m[1]) - 1;  // the case named is being measured
      total_cases_ = std::stoi(m[2]);
    }
    show(false);
  }
  void idle() { show(false); }
  void end(double seconds) {
    actual_done_ += seconds;
    estimate_done_ += estimates_[index_];
  }
  void finish() {
    if (enabled_ && tty_) std::cerr << "\n";
  }

 private:
  double seconds_since(clock_type::time_point t) const { return std::chrono::duration<double>(clock_type::now() - t).count(); }

  double left() const {
    const double scale = estimate_done_ > 0 ? std::clamp(actual_done_ / estimate_done_, 0.2, 5.0) : 1.0;
    double later = 0;
    for (std::size_t i = index_ + 1; i < specs_.size(); ++i) later += estimates_[i];
    const double in_run = seconds_since(run_start_);
    double current = std::max(estimates_[index_] * scale - in_run, 0.1 * estimates_[index_] * scale);
    if (done_cases_ >= 2 && total_cases_ > done_cases_) current = in_run * (total_cases_ - done_cases_) / done_cases_;
    return current + later * scale;
  }

  void show(bool force) {
    if (!enabled_) return;
    const double since_shown = seconds_since(shown_);
    if (!force && since_shown < (tty_ ? 1.0 : 30.0)) return;
    shown_ = clock_type::now();
    std::ostringstream s;
    s << "[reproduce " << index_ + 1 << "/" << specs_.size() << "] " << specs_[index_].id;
    if (total_cases_ > 0) s << ": case " << done_cases_ + 1 << "/" << total_cases_;
    s << " | " << duration(seconds_since(start_)) << " elapsed, about " << duration(left()) << " left";
    if (tty_) std::cerr << "\r\033[K" << s.str() << std::flush;
    else std::cerr << s.str() << "\n";
  }

  const std::vector<run_spec>& specs_;
  std::vector<double> estimates_;
  bool enabled_, tty_;
  clock_type::time_point start_, run_start_, shown_{};
  std::size_t index_ = 0;
  int done_cases_ = 0, total_cases_ = 0;
  double actual_done_ = 0, estimate_done_ = 0;
};

std::string exit_reason(int code) {
  switch (code) {
    case 1: return "a result did not validate";
    case 2: return "usage error";
    case 3: return "bad input file";
    case 4: return "CUDA error";
    case 5: return "out of memory";
    case 6: return "internal error";
    case 127: return "could not start soac";
    default: return "exit code " + std::to_string(code);
  }
}

}  // namespace

std::vector<json> run_all(const std::vector<run_spec>& specs, mode m, const runner_options& o,
                          const std::function<void(const json&)>& after_each) {
  fs::create_directories(o.dir / "runs");
  const auto skipped = [&](const run_spec& s) { return m == mode::host && !s.gpu_only.empty(); };
  std::vector<double> estimates;
  for (const auto& s : specs) estimates.push_back(skipped(s) ? 0.0 : s.estimate_s);
  progress_line progress(specs, estimates, o.progress);
  std::vector<json> out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    run_spec spec = specs[i];
    if (o.runs > 0) spec.runs = o.runs;
    json r = {{"id", spec.id}, {"app", spec.app}, {"command", spec.command()}, {"seconds", 0.0}, {"estimate_s", spec.estimate_s}};
    if (skipped(spec)) {
      r["status"] = "skipped";
      r["reason"] = "needs a CUDA GPU: " + spec.gpu_only;
    } else {
      progress.begin(i);
      const fs::path json_file = o.dir / "runs" / (spec.id + ".json"), log = o.dir / "runs" / (spec.id + ".log");
      fs::remove(json_file);
      std::vector<std::string> argv = {o.exe.string()};
      for (const auto& a : spec.command()) argv.push_back(a);
      argv.insert(argv.end(), {"--backend", o.backend, "--device", std::to_string(o.device), "--json", json_file.string()});
      const auto t0 = clock_type::now();
      const child_result c = spawn(argv, log, [&](const std::string& line) { progress.line(line); }, [&] { progress.idle(); });
      const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
      progress.end(seconds);
      r["seconds"] = seconds;
      r["exit_code"] = c.exit_code;
      r["log"] = fs::relative(log, o.dir).string();
      if (c.exit_code == 0) {
        try {
          std::ifstream in(json_file);
          r["bench"] = json::parse(in);
          r["status"] = "ok";
        } catch (const std::exception& e) {
          r["status"] = "failed";
          r["reason"] = json_file.string() + ": unreadable bench JSON: " + e.what();
        }
      } else {
        r["status"] = "failed";
        r["reason"] = exit_reason(c.exit_code) + (c.last_error.empty() ? "" : ": " + c.last_error);
      }
    }
    out.push_back(r);
    after_each(r);
  }
  progress.finish();
  return out;
}

json draw_plots(const fs::path& dir, const fs::path& reproduction_json) {
  const fs::path script = dir / "plot.py";
  {
    std::ofstream s(script);
    s << plot_script();
    if (!s.flush()) throw input_error(script.string() + ": cannot write");
  }
  // SOAC_PYTHON when set, else the first python3 that has matplotlib: PATH's, then the system's
  // (Debian's python3-matplotlib serves /usr/bin/python3, which PATH may shadow, e.g. pyenv's).
  std::vector<std::string> candidates = {"python3", "/usr/bin/python3"};
  if (const char* p = std::getenv("SOAC_PYTHON"); p && *p) candidates = {p};
  const fs::path log = dir / "plots.log";
  bool any_python = false;
  for (const auto& py : candidates) {
    std::string exe = py;
    if (py.find('/') == std::string::npos) {
      exe.clear();
      const char* path = std::getenv("PATH");
      std::stringstream dirs(path ? path : "");
      for (std::string d; std::getline(dirs, d, ':');)
        if (!d.empty() && ::access((fs::path(d) / py).c_str(), X_OK) == 0) {
          exe = (fs::path(d) / py).string();
          break;
        }
    }
    if (exe.empty() || ::access(exe.c_str(), X_OK) != 0) continue;
    any_python = true;
    const auto nothing = [](const std::string&) {};
    if (spawn({exe, "-c", "import matplotlib"}, log, nothing, [] {}).exit_code != 0) continue;
    std::vector<std::string> written;
    const child_result c = spawn({exe, script.string(), reproduction_json.string(), (dir / "plots").string()}, log,
                                 [&](const std::string& line) {
                                   if (line.starts_with("wrote ")) written.push_back(line.substr(6));
                                 },
                                 [] {});
    if (c.exit_code != 0)
      return {{"drawn", false}, {"python", exe}, {"note", exe + " " + script.filename().string() + " failed (see plots.log)"}};
    return {{"drawn", true}, {"python", exe}, {"files", written}};
  }
  return {{"drawn", false},
          {"note", any_python ? "python3 has no matplotlib (Debian: apt-get install python3-matplotlib; scripts/setup-deps.sh installs it; "
                                "or set SOAC_PYTHON to a python that has it)"
                              : "python3 was not found (install it with matplotlib, e.g. Debian's python3-matplotlib)"}};
}

}  // namespace soac::reproduce
