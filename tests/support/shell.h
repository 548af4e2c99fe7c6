// Running a shell command from a test (the hfx CLI, node oracles) and reading what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace hfx::testsupport {

/// Exit status (-1 when the command did not exit normally) and stdout+stderr together.
struct Proc {
  int rc = -1;
  std::string out;
};

/// Runs `cmd` through /bin/sh with stderr merged into stdout (`stderr_too`) or dropped (its stdout alone:
/// what a test parses as JSON, with the CLI's stderr summary line left out).
inline Proc sh(const std::string& cmd, bool stderr_too = true) {
  Proc r;
  FILE* p = ::popen(("{ " + cmd + "\n}" + (stderr_too ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// `cmd`'s stdout alone (stderr dropped).
inline Proc sh_stdout(const std::string& cmd) { return sh(cmd, false); }

}  // namespace hfx::testsupport
