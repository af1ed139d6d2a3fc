// Writing a client's output file so that it is either complete or absent: the content
// goes to a temporary file in the same directory, every write and the close are checked
// (and the data synced), then it is renamed to PATH. On failure the temporary is
// removed. Either way the outcome is appended to the run status file ("wrote PATH" or
// "failed PATH: CAUSE", martini/clients/status.h) for `martini run`.
//
// Output directories may be writable by other users (`martini run --output /tmp/shared`
// as root), who can plant symbolic links there. So no name is ever opened in a way that
// follows a link planted by someone else:
//   - The temporary, PATH.<random>.tmp, has an unpredictable name and is created with
//     O_CREAT|O_EXCL|O_NOFOLLOW (a name that exists, a link included, is never
//     opened: another random name is tried). Writers that want a path get
//     /proc/self/fd/N, the file already open, not a name that could be swapped.
//   - rename(2) replaces a link at PATH and never follows it. A link at PATH is
//     therefore replaced by the output, whatever it points to, unless it is the
//     writing user's own or root's and points to something that is not a regular file
//     (below). Replacing rather than refusing: a link to a regular file was always
//     replaced by the rename, and someone who can plant a link should not be able to
//     stop the output from being written.
//   - A PATH that exists and is not a regular file (/dev/null, a terminal, a FIFO) is
//     written into directly: a rename would replace it with a file. It is opened with
//     O_NOFOLLOW, without O_CREAT or O_TRUNC, and must still not be a regular file once
//     open. Through a link only when the link is the user's own or root's
//     (`out=/dev/stdout`, a link of one's own to a FIFO): the rule Linux's
//     fs.protected_symlinks applies in shared directories; the link and what it points
//     to are checked again once open.
// Header-only; no dependencies beyond the C++ and POSIX libraries (Linux).
#pragma once

#include "martini/clients/status.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>

namespace martini::clients {

// Creates the temporary file PATH is written under before it is renamed into place:
// PATH.<12 random letters and digits>.tmp, new (O_EXCL), never through a link
// (O_NOFOLLOW), mode 0666 less the umask. Returns its descriptor and sets `name`, or
// -1 with errno set.
inline int CreateTemporaryOutput(const std::string &path, std::string &name) {
    static constexpr char kDigits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static std::atomic<std::uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
        unsigned char bytes[12];
        if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
            // No entropy at hand (very early boot): the clock, the pid and a counter,
            // mixed. O_EXCL keeps this safe; only the name is easier to guess.
            timespec now {};
            ::clock_gettime(CLOCK_REALTIME, &now);
            std::uint64_t x = static_cast<std::uint64_t>(now.tv_nsec) ^ (static_cast<std::uint64_t>(now.tv_sec) << 30)
                              ^ (static_cast<std::uint64_t>(::getpid()) << 17) ^ (counter++ * 0x9e3779b97f4a7c15ULL);
            for (unsigned char &b : bytes) {
                x ^= x >> 33;
                x *= 0xff51afd7ed558ccdULL;
                b = static_cast<unsigned char>(x >> 56);
            }
        }
        name = path;
        name.append(".");
        for (unsigned char b : bytes) name.push_back(kDigits[b % (sizeof kDigits - 1)]);
        name.append(".tmp");
        const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

namespace detail {

inline std::string AbsolutePath(const std::string &path) {
    if (!path.empty() && path[0] == '/') return path;
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
    std::string absolute(cwd);
    absolute.append("/").append(path);
    return absolute;
}

inline std::string Finish(const std::string &path, const std::string &error) {
    if (error.empty()) {
        AppendStatusLine("wrote " + AbsolutePath(path));
    } else {
        AppendStatusLine("failed " + AbsolutePath(path) + ": " + error);
    }
    return error.empty() ? "" : "cannot write '" + path + "': " + error;
}

// Writes all of `data` to `fd`; "" or the cause (strerror).
inline std::string WriteAll(int fd, const std::string &data) {
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::strerror(n < 0 ? errno : ENOSPC);
        done += static_cast<std::size_t>(n);
    }
    return "";
}

inline bool SameFile(const struct stat &a, const struct stat &b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// When PATH is to be written in place (it exists and is not a regular file): a
// descriptor open for writing. Else -1: with `error` empty when PATH is to be replaced
// by the rename, with the cause when it cannot be opened.
inline int OpenInPlace(const std::string &path, std::string &error) {
    struct stat entry {};
    if (::lstat(path.c_str(), &entry) != 0 || S_ISREG(entry.st_mode)) return -1;
    const bool link = S_ISLNK(entry.st_mode);
    struct stat target {};
    if (link) {
        const bool trusted = entry.st_uid == ::geteuid() || entry.st_uid == 0;
        if (!trusted || ::stat(path.c_str(), &target) != 0 || S_ISREG(target.st_mode)) return -1;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | (link ? 0 : O_NOFOLLOW));
    if (fd < 0) {
        error = std::strerror(errno);
        return -1;
    }
    struct stat opened {};
    struct stat again {};
    bool same = ::fstat(fd, &opened) == 0 && !S_ISREG(opened.st_mode);
    if (same && link) {  // the link and its target as they were checked
        same = ::lstat(path.c_str(), &again) == 0 && SameFile(again, entry) && again.st_uid == entry.st_uid
               && SameFile(opened, target);
    }
    if (same) return fd;
    ::close(fd);  // changed while being opened (nothing was written): replace it
    return -1;
}

// "/proc/self/fd/N": a name of the open file `fd` that no one can swap; `fallback`
// without /proc.
inline std::string DescriptorPath(int fd, const std::string &fallback) {
    std::string name = "/proc/self/fd/";
    name.append(std::to_string(fd));
    return ::access(name.c_str(), F_OK) == 0 ? name : fallback;
}

// Calls `write(fd, shown)`: "" or the problem (an exception's message included).
inline std::string CallWriter(const std::function<std::string(int fd, const std::string &shown)> &write, int fd,
                              const std::string &shown) {
    try {
        return write(fd, shown);
    } catch (const std::exception &e) {
        return e.what();
    } catch (...) {
        return "the writer failed";
    }
}

// Syncs and closes `fd`: "" or the cause. Devices, FIFOs and terminals cannot be synced
// (EINVAL), nor files on read-only file systems (EROFS, after the writes succeeded).
inline std::string SyncAndClose(int fd, bool sync) {
    if (sync && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        const int e = errno;
        ::close(fd);
        return std::strerror(e);
    }
    if (::close(fd) != 0) return std::strerror(errno);
    return "";
}

// The common part: `write(fd, shown)` fills the open file `fd` (`shown` is its name for
// messages). Returns "" when PATH is complete, else "cannot write 'PATH': CAUSE".
inline std::string WriteOutput(const std::string &path,
                               const std::function<std::string(int fd, const std::string &shown)> &write) {
    std::string error;
    if (const int fd = OpenInPlace(path, error); fd >= 0) {
        error = CallWriter(write, fd, path);
        const std::string closing = SyncAndClose(fd, error.empty());
        return Finish(path, error.empty() ? closing : error);
    }
    if (!error.empty()) return Finish(path, error);
    std::string tmp;
    const int fd = CreateTemporaryOutput(path, tmp);
    if (fd < 0) return Finish(path, std::strerror(errno));
    error = CallWriter(write, fd, tmp);
    const std::string closing = SyncAndClose(fd, error.empty());
    if (error.empty()) error = closing;
    if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) error = std::strerror(errno);
    if (!error.empty()) ::unlink(tmp.c_str());
    return Finish(path, error);
}

}  // namespace detail

// The general form: `write(tmp)` opens the file `tmp` for writing (it exists, empty:
// create and truncate as you like), fills it and returns "" or the problem (for writers
// that take a path, such as report::WritePprof). `tmp` names the file already open
// (/proc/self/fd/N), so a link planted under the temporary's name is never followed;
// the problem's text says the temporary's name instead. Returns "" when PATH is
// complete, else "cannot write 'PATH': CAUSE" (and PATH is as it was before).
inline std::string WriteFileAtomicallyTo(const std::string &path,
                                         const std::function<std::string(const std::string &tmp)> &write) {
    return detail::WriteOutput(path, [&](int fd, const std::string &shown) {
        const std::string name = detail::DescriptorPath(fd, shown);
        std::string error = write(name);
        if (name == shown) return error;
        for (std::size_t at = error.find(name); at != std::string::npos; at = error.find(name, at + shown.size())) {
            error.replace(at, name.size(), shown);
        }
        return error;
    });
}

// `fill` writes the content to a stream.
inline std::string WriteFileAtomically(const std::string &path, const std::function<void(std::ostream &)> &fill) {
    return detail::WriteOutput(path, [&](int fd, const std::string &) -> std::string {
        std::ostringstream content;
        fill(content);
        if (!content) return "the content could not be formatted";
        return detail::WriteAll(fd, content.str());
    });
}

// `fill` writes the content with stdio (fprintf...).
inline std::string WriteFileAtomically(const std::string &path, const std::function<void(FILE *)> &fill) {
    return detail::WriteOutput(path, [&](int fd, const std::string &) -> std::string {
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
        return detail::WriteAll(fd, content);
    });
}

}  // namespace martini::clients
