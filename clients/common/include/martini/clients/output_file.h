// Writing a client's output file so that it is either complete or absent: the content
// goes to PATH.<pid>.tmp in the same directory, every write and the close are checked
// (and the data synced), then it is renamed to PATH. On failure the temporary is
// removed. A PATH that exists and is not a regular file (/dev/null, a terminal, a FIFO)
// is written into directly: a rename would replace it with a file. Either way the
// outcome is appended to the run status file ("wrote PATH" or "failed PATH: CAUSE",
// martini/clients/status.h) for `martini run`.
// Header-only; no dependencies beyond the C++ and POSIX libraries.
#pragma once

#include "martini/clients/status.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>

namespace martini::clients {

// The temporary name an output is written under before it is renamed into place.
inline std::string TemporaryOutputName(const std::string &path) {
    return path + "." + std::to_string(::getpid()) + ".tmp";
}

namespace detail {

inline std::string AbsolutePath(const std::string &path) {
    if (!path.empty() && path[0] == '/') return path;
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
    return std::string(cwd) + "/" + path;
}

inline std::string Finish(const std::string &path, const std::string &error) {
    if (error.empty()) {
        AppendStatusLine("wrote " + AbsolutePath(path));
    } else {
        AppendStatusLine("failed " + AbsolutePath(path) + ": " + error);
    }
    return error.empty() ? "" : "cannot write '" + path + "': " + error;
}

// Writes all of `data` to a new file `tmp`; "" or the cause (strerror).
inline std::string WriteAll(const std::string &tmp, const std::string &data) {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return std::strerror(errno);
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int e = n < 0 ? errno : ENOSPC;
            ::close(fd);
            return std::strerror(e);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        const int e = errno;
        ::close(fd);
        return std::strerror(e);
    }
    if (::close(fd) != 0) return std::strerror(errno);
    return "";
}

}  // namespace detail

// The general form: `write(tmp)` creates and fills the file `tmp` and returns "" or the
// problem (for writers that take a path, such as report::WritePprof). Returns "" when
// PATH is complete, else "cannot write 'PATH': CAUSE" (and PATH is as it was before).
inline std::string WriteFileAtomicallyTo(const std::string &path,
                                         const std::function<std::string(const std::string &tmp)> &write) {
    struct stat target {};
    const bool inPlace = ::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode);
    const std::string tmp = inPlace ? path : TemporaryOutputName(path);
    std::string error;
    try {
        error = write(tmp);
    } catch (const std::exception &e) {
        error = e.what();
    } catch (...) {
        error = "the writer failed";
    }
    if (inPlace) return detail::Finish(path, error);
    if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) error = std::strerror(errno);
    if (!error.empty()) ::unlink(tmp.c_str());
    return detail::Finish(path, error);
}

// `fill` writes the content to a stream.
inline std::string WriteFileAtomically(const std::string &path, const std::function<void(std::ostream &)> &fill) {
    return WriteFileAtomicallyTo(path, [&](const std::string &tmp) -> std::string {
        std::ostringstream content;
        fill(content);
        if (!content) return "the content could not be formatted";
        return detail::WriteAll(tmp, content.str());
    });
}

// `fill` writes the content with stdio (fprintf...).
inline std::string WriteFileAtomically(const std::string &path, const std::function<void(FILE *)> &fill) {
    return WriteFileAtomicallyTo(path, [&](const std::string &tmp) -> std::string {
        char *buffer = nullptr;
        std::size_t size = 0;
        FILE *memory = ::open_memstream(&buffer, &size);
        if (memory == nullptr) return std::strerror(errno);
        fill(memory);
        const bool ok = std::ferror(memory) == 0;
        std::fclose(memory);
        std::string content(buffer != nullptr ? buffer : "", size);
        std::free(buffer);
        if (!ok) return "the content could not be formatted";
        return detail::WriteAll(tmp, content);
    });
}

}  // namespace martini::clients
