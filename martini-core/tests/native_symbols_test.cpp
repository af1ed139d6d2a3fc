// NativeSymbols: functions of this process's libraries by their ELF symbols, and the
// kernel's from a kallsyms file (a test's own, so that every case is fixed here).
#include "martini/core/native_symbols.h"

#include <dlfcn.h>
#include <link.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstring>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using martini::core::NativeFrame;
using martini::core::NativeSymbols;

[[gnu::noinline]] int NativeSymbolsTarget(int x) {
    asm volatile("" : "+r"(x));
    return x * 3 + 1;
}

class Kallsyms {
public:
    Kallsyms() {
        char name[] = "/tmp/martini-kallsyms-XXXXXX";
        const int fd = mkstemp(name);
        if (fd >= 0) ::close(fd);
        path_ = name;
    }
    ~Kallsyms() { std::remove(path_.c_str()); }
    const std::string &path() const { return path_; }
    std::ofstream Writer() const { return std::ofstream(path_); }

private:
    std::string path_;
};

std::string Hex(std::uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "%016" PRIx64, v);
    return text;
}

TEST(NativeSymbols, NamesAFunctionOfThisProgramAndOfLibc) {
    NativeSymbols symbols;
    NativeFrame f;
    ASSERT_TRUE(symbols.Lookup(reinterpret_cast<std::uintptr_t>(&NativeSymbolsTarget) + 2, f));
    EXPECT_NE(f.symbol.find("NativeSymbolsTarget(int)"), std::string::npos) << f.symbol;
    EXPECT_EQ(f.library, "core-tests");
    void *getpidAddress = dlsym(RTLD_DEFAULT, "getpid");
    ASSERT_NE(getpidAddress, nullptr);
    ASSERT_TRUE(symbols.Lookup(reinterpret_cast<std::uintptr_t>(getpidAddress), f));
    EXPECT_EQ(f.library.rfind("libc.so", 0), 0u) << f.library;
    EXPECT_NE(f.symbol.find("getpid"), std::string::npos) << f.symbol;
    EXPECT_FALSE(symbols.Lookup(0x10, f));  // in no mapping of a file
}

// Text symbols only (t, T, w, W), a module's as "name [module]", the lines out of
// address order as a module's are, and more than one read's worth (64 KiB) of lines so
// that lines are cut between reads.
TEST(NativeSymbols, ReadsTheKernelsTextSymbols) {
    Kallsyms file;
    {
        std::ofstream out = file.Writer();
        out << "0000000000000000 A fixed_percpu_data\n";
        out << "ffffffffc0001000 t nf_hook_slow\t[nf_tables]\n";
        out << "ffffffff81000000 T _text\n";
        out << "ffffffff81001000 T vfs_read\n";
        out << "ffffffff81001800 d vfs_read_data\n";
        out << "ffffffff81002000 W weak_function\n";
        for (int i = 0; i < 4000; ++i) {
            out << Hex(0xffffffff82000000ull + std::uint64_t(i) * 0x100) << " t filler_function_number_" << i << "\n";
        }
        out << "ffffffff90000000 T last_function";  // no newline at the end
    }
    NativeSymbols symbols(file.path());
    NativeFrame f;
    ASSERT_TRUE(symbols.Lookup(0xffffffff81001010ull, f));
    EXPECT_EQ(f.library, "[kernel]");
    EXPECT_EQ(f.symbol, "vfs_read");
    ASSERT_TRUE(symbols.Lookup(0xffffffff81001900ull, f));
    EXPECT_EQ(f.symbol, "vfs_read");  // a data symbol starts no function
    ASSERT_TRUE(symbols.Lookup(0xffffffff81002004ull, f));
    EXPECT_EQ(f.symbol, "weak_function");
    ASSERT_TRUE(symbols.Lookup(0xffffffffc0001004ull, f));
    EXPECT_EQ(f.symbol, "nf_hook_slow [nf_tables]");
    for (int i = 0; i < 4000; ++i) {
        ASSERT_TRUE(symbols.Lookup(0xffffffff82000000ull + std::uint64_t(i) * 0x100 + 8, f));
        ASSERT_EQ(f.symbol, "filler_function_number_" + std::to_string(i));
    }
    ASSERT_TRUE(symbols.Lookup(0xffffffff90000040ull, f));
    EXPECT_EQ(f.symbol, "last_function");
}

// kptr_restrict: every address reads as zero, so no function is known.
TEST(NativeSymbols, SaysWhenTheKernelHidesItsAddresses) {
    Kallsyms file;
    {
        std::ofstream out = file.Writer();
        out << "0000000000000000 T _text\n0000000000000000 T vfs_read\n";
    }
    NativeSymbols symbols(file.path());
    NativeFrame f;
    ASSERT_TRUE(symbols.Lookup(0xffffffff81001010ull, f));
    EXPECT_EQ(f.library, "[kernel]");
    EXPECT_NE(f.symbol.find("kptr_restrict"), std::string::npos) << f.symbol;
}

// libc's function starts from its unwind table (.eh_frame_hdr, through PT_GNU_EH_FRAME):
// their addresses in this process.
std::vector<std::uintptr_t> LibcFunctionStarts() {
    std::vector<std::uintptr_t> starts;
    dl_iterate_phdr(
        [](dl_phdr_info *info, std::size_t, void *out) {
            if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "/libc.so") == nullptr) return 0;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                if (info->dlpi_phdr[i].p_type != PT_GNU_EH_FRAME) continue;
                const auto *hdr = reinterpret_cast<const unsigned char *>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
                if (hdr[0] != 1 || hdr[3] != 0x3b) return 1;  // table: datarel | sdata4
                std::uint32_t count = 0;
                std::memcpy(&count, hdr + 8, 4);
                for (std::uint32_t k = 0; k < count; ++k) {
                    std::int32_t relative = 0;
                    std::memcpy(&relative, hdr + 12 + std::size_t(k) * 8, 4);
                    static_cast<std::vector<std::uintptr_t> *>(out)->push_back(
                        reinterpret_cast<std::uintptr_t>(hdr) + static_cast<std::intptr_t>(relative));
                }
                return 1;
            }
            return 1;
        },
        &starts);
    return starts;
}

// A function no symbol names (libc's internal ones: Debian strips .symtab) is named by
// its library and its start, from any address inside it: one function, one frame.
TEST(NativeSymbols, NamesAFunctionWithoutASymbolByItsStart) {
    const std::vector<std::uintptr_t> starts = LibcFunctionStarts();
    ASSERT_FALSE(starts.empty());
    NativeSymbols symbols;
    NativeFrame first, inside;
    int unnamed = 0;
    for (std::size_t i = 0; i + 1 < starts.size() && unnamed < 20; ++i) {
        if (starts[i + 1] - starts[i] < 8) continue;
        ASSERT_TRUE(symbols.Lookup(starts[i], first));
        if (first.symbol.rfind("libc.so", 0) != 0) continue;  // a named function
        ++unnamed;
        ASSERT_TRUE(symbols.Lookup(starts[i] + (starts[i + 1] - starts[i]) / 2, inside));
        EXPECT_EQ(inside.symbol, first.symbol);
        char hex[24];
        std::snprintf(hex, sizeof hex, "+0x%" PRIx64, first.offset);
        EXPECT_EQ(first.symbol, first.library + hex);
    }
    EXPECT_GT(unnamed, 0);
}

}  // namespace
