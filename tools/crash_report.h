// After a profiled JVM crashed: which client's code was on the crashing thread, from
// the JVM's fatal error log (hs_err_pid<PID>.log). In-process clients cannot be
// isolated from a crash; naming the one that crashed is what can be done.
#pragma once

#include <string>
#include <vector>

namespace martini::tools {

// The JVM's fatal error log of process `pid`, in `dir` or /tmp (where the JVM writes it
// when `dir` is not writable); "" when there is none.
std::string FindJvmErrorLog(int pid, const std::string &dir);

// The message naming the client, among `clientPaths` (the libraries loaded), whose
// code the crashing thread was running (the log's problematic frame, else the first
// native frame in a client library); "" when no client's code is in the log.
std::string NameCrashingClient(const std::string &errorLog, const std::vector<std::string> &clientNames,
                               const std::vector<std::string> &clientPaths);

}  // namespace martini::tools
