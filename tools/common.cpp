// What the `martini` commands share: see common.h.
#include "common.h"

#include "tools.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace fs = std::filesystem;

namespace martini::tools {

int Fail(const std::string &message) {
    std::fprintf(stderr, "martini %s\n", message.c_str());
    return 1;
}

std::string FindProgram(const std::string &name) {
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
    const char *path = std::getenv("PATH");
    std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= p.size()) {
        const std::size_t end = p.find(':', start);
        std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::string candidate = dir.empty() ? "." : dir;  // appended, not dir + "/" + name: g++ 12 -O3
        candidate.append("/").append(name);                // warns (-Wrestrict) about the temporary
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return "";
}

std::string Join(const std::vector<std::string> &items, const char *sep) {
    std::string out;
    for (const auto &s : items) out += (out.empty() ? "" : sep) + s;
    return out;
}

std::string PrepareOutputDirectory(const std::string &dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return "cannot create the output directory '" + dir + "': " + ec.message();
    const std::string probe = dir + "/.martini-write-test-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot write to the output directory '" + dir + "': " + std::strerror(errno);
    ::close(fd);
    if (::unlink(probe.c_str()) != 0) {
        return "cannot remove a file from the output directory '" + dir + "': " + std::strerror(errno);
    }
    return "";
}

std::vector<fs::path> MissingDirectories(const std::string &dir) {
    std::vector<fs::path> missing;
    std::error_code ec;
    for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !p.empty() && p != p.root_path();
         p = p.parent_path()) {
        if (p.filename().empty()) continue;  // "a/b/": its last part is empty
        if (fs::exists(fs::symlink_status(p, ec))) break;
        missing.push_back(p);
    }
    return missing;
}

std::vector<std::string> NewFilesIn(const std::string &dir, fs::file_time_type since) {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool temporary = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
        if (!temporary && entry.is_regular_file() && entry.last_write_time() >= since) {
            files.push_back(entry.path().string());
        }
    }
    return files;
}

std::vector<std::string> ClientNames(const std::vector<core::ClientSpec> &specs) {
    std::vector<std::string> names;
    for (const auto &s : specs) names.push_back(s.name);
    return names;
}

std::string ParseClients(const std::vector<std::string> &values, std::vector<core::ClientSpec> &specs) {
    for (const auto &value : values) {
        if (std::string e = core::ParseClientList(value, specs); !e.empty()) return e;
    }
    return "";
}

std::string ResolveClients(std::vector<core::ClientSpec> &specs) {
    if (specs.empty()) specs.push_back({"cgprof", "", ""});
    const auto dirs = core::ClientSearchDirs(ExecutableDir());
    for (auto &spec : specs) {
        if (std::string e = core::ResolveClientPath(spec, dirs); !e.empty()) return e;
        spec.path = fs::weakly_canonical(spec.path).string();
    }
    return "";
}

std::string CheckClientOptions(const std::vector<core::ClientSpec> &specs) {
    using CheckOptions = const char *(*)(const char *options);
    for (const auto &spec : specs) {
        if (spec.path.empty()) continue;
        void *library = ::dlopen(spec.path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) continue;  // the runtime's loading names the cause
        std::string problem;
        if (auto check = reinterpret_cast<CheckOptions>(::dlsym(library, "MPICL_CheckOptions")); check != nullptr) {
            if (const char *message = check(spec.options.c_str()); message != nullptr) problem = message;
        }
        ::dlclose(library);
        if (!problem.empty()) {
            std::string line = "client '";
            line.append(spec.name).append("': ").append(problem);
            return line;
        }
    }
    return "";
}

long ParsePid(const std::string &text) {
    char *end = nullptr;
    const long pid = std::strtol(text.c_str(), &end, 10);
    return !text.empty() && *end == '\0' && pid > 0 ? pid : 0;
}

std::string PrintNotes(long pid, const std::string &reply) {
    std::istringstream lines(reply);
    std::string line, last;
    while (std::getline(lines, line)) {
        if (line.rfind("note: ", 0) == 0) std::fprintf(stderr, "martini: process %ld: %s\n", pid, line.substr(6).c_str());
        else if (!line.empty()) last = line;
    }
    return last;
}

}  // namespace martini::tools
