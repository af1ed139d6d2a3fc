// A buffered text writer for the report library's streaming writers (JSON, Chrome
// trace, collapsed stacks): appends into a 256 kB buffer written to the stream in
// one call when full, numbers through std::to_chars, JSON strings escaped as they are
// copied (invalid UTF-8 bytes become U+FFFD, as nlohmann's "replace" handler does).
// No DOM is built: a profile of millions of nodes costs its bytes, not allocations
// per value.
#pragma once

#include <charconv>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace martini::report::detail {

class TextOut {
public:
    explicit TextOut(std::ostream &out) : out_(out) { buf_.reserve(kChunk + 4096); }
    ~TextOut() { Flush(); }
    TextOut(const TextOut &) = delete;
    TextOut &operator=(const TextOut &) = delete;

    TextOut &operator<<(std::string_view s) {
        buf_.append(s);
        MaybeFlush();
        return *this;
    }
    TextOut &operator<<(char c) {
        buf_.push_back(c);
        return *this;
    }
    TextOut &operator<<(std::uint64_t v) { return Number(v); }
    TextOut &operator<<(std::int64_t v) { return Number(v); }
    TextOut &operator<<(std::uint32_t v) { return Number(std::uint64_t(v)); }
    TextOut &operator<<(int v) { return Number(std::int64_t(v)); }
    TextOut &operator<<(double v) { return Number(v); }

    // A JSON string literal, quotes included.
    TextOut &Json(std::string_view s) {
        buf_.push_back('"');
        for (std::size_t i = 0; i < s.size();) {
            const auto c = static_cast<unsigned char>(s[i]);
            if (c >= 0x80) {
                const std::size_t n = Utf8Length(s, i);
                if (n == 0) {
                    buf_.append("\xEF\xBF\xBD");  // U+FFFD
                    ++i;
                } else {
                    buf_.append(s.substr(i, n));
                    i += n;
                }
                continue;
            }
            if (c == '"') buf_.append("\\\"");
            else if (c == '\\') buf_.append("\\\\");
            else if (c == '\n') buf_.append("\\n");
            else if (c == '\t') buf_.append("\\t");
            else if (c == '\r') buf_.append("\\r");
            else if (c < 0x20) {
                static const char hex[] = "0123456789abcdef";
                buf_.append("\\u00");
                buf_.push_back(hex[c >> 4]);
                buf_.push_back(hex[c & 15]);
            } else {
                buf_.push_back(static_cast<char>(c));
            }
            ++i;
        }
        buf_.push_back('"');
        MaybeFlush();
        return *this;
    }

    void Flush() {
        if (!buf_.empty()) out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
        buf_.clear();
    }
    void MaybeFlush() {
        if (buf_.size() >= kChunk) Flush();
    }

private:
    static constexpr std::size_t kChunk = 256 * 1024;

    // Formatted in place at the end of the buffer: appending from a local array made
    // g++ 12 at -O3 report a false -Wrestrict overlap in the copy (GCC bug 105651).
    template <typename T>
    TextOut &Number(T v) {
        constexpr std::size_t kRoom = 32;  // any int64, uint64 or shortest double
        const std::size_t at = buf_.size();
        buf_.resize(at + kRoom);
        const auto r = std::to_chars(buf_.data() + at, buf_.data() + at + kRoom, v);
        buf_.resize(static_cast<std::size_t>(r.ptr - buf_.data()));
        return *this;
    }

    // The length of the well-formed UTF-8 sequence at s[i], or 0.
    static std::size_t Utf8Length(std::string_view s, std::size_t i) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        unsigned min = 0;
        if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
        else return 0;
        if (i + n > s.size()) return 0;
        unsigned cp = c & (0xFF >> (n + 1));
        for (std::size_t k = 1; k < n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (d & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        return n;
    }

    std::ostream &out_;
    std::string buf_;
};

}  // namespace martini::report::detail
