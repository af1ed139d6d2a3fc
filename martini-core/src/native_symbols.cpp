#include "martini/core/native_symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <utility>

namespace martini::core {

namespace {

std::string Demangled(const char *name) {
    int status = 0;
    char *d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status != 0 || d == nullptr) return name;
    std::string out(d);
    std::free(d);
    return out;
}

std::uint64_t MonotonicNs() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return std::uint64_t(t.tv_sec) * 1'000'000'000ull + std::uint64_t(t.tv_nsec);
}

std::string Hex(std::uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%" PRIx64, v);
    return text;
}

// The functions' start addresses from .eh_frame_hdr's binary-search table (every
// function with unwind information has an entry), in the encoding GCC and the
// linkers write (table entries DW_EH_PE_datarel | sdata4); none for another.
std::vector<std::uint64_t> FunctionStarts(Elf *elf) {
    std::vector<std::uint64_t> starts;
    std::size_t names = 0;
    if (elf_getshdrstrndx(elf, &names) != 0) return starts;
    for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr) continue;
        const char *name = elf_strptr(elf, names, sh.sh_name);
        if (name == nullptr || std::strcmp(name, ".eh_frame_hdr") != 0) continue;
        Elf_Data *data = elf_getdata(scn, nullptr);
        if (data == nullptr || data->d_buf == nullptr || data->d_size < 12) break;
        const auto *p = static_cast<const unsigned char *>(data->d_buf);
        // version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4
        if (p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 || p[3] != 0x3b) break;
        std::uint32_t count = 0;
        std::memcpy(&count, p + 8, 4);
        if (12 + std::uint64_t(count) * 8 > data->d_size) break;
        starts.reserve(count);
        for (std::uint32_t i = 0; i < count; ++i) {
            std::int32_t relative = 0;
            std::memcpy(&relative, p + 12 + std::size_t(i) * 8, 4);
            starts.push_back(sh.sh_addr + static_cast<std::uint64_t>(static_cast<std::int64_t>(relative)));
        }
        break;
    }
    return starts;
}

}  // namespace

NativeSymbols::NativeSymbols(std::string kallsyms) : kallsymsPath_(std::move(kallsyms)) { elf_version(EV_CURRENT); }
NativeSymbols::~NativeSymbols() = default;

void NativeSymbols::ReadMaps() {
    std::FILE *f = std::fopen("/proc/self/maps", "re");
    if (f == nullptr) return;
    std::vector<Mapping> maps;
    char line[4096];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        unsigned long long start = 0, end = 0, offset = 0;
        char perms[8] = {};
        int pathAt = 0;
        if (std::sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &pathAt) < 4) continue;
        if (perms[2] != 'x' || pathAt <= 0 || line[pathAt] != '/') continue;
        std::string path(line + pathAt);
        while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
        auto &lib = libraries_[path];
        if (!lib) {
            lib = std::make_unique<Library>();
            lib->path = path;
            lib->base = path.substr(path.rfind('/') + 1);
        }
        maps.push_back({static_cast<std::uintptr_t>(start), static_cast<std::uintptr_t>(end), offset, lib.get()});
    }
    std::fclose(f);
    std::sort(maps.begin(), maps.end(), [](const Mapping &a, const Mapping &b) { return a.start < b.start; });
    mappings_ = std::move(maps);
    lastRead_ = MonotonicNs();
}

bool NativeSymbols::FindMapping(std::uintptr_t address, Mapping &out) {
    auto find = [&] {
        auto it = std::upper_bound(mappings_.begin(), mappings_.end(), address,
                                   [](std::uintptr_t a, const Mapping &m) { return a < m.start; });
        if (it == mappings_.begin()) return false;
        --it;
        if (address >= it->end) return false;
        out = *it;
        return true;
    };
    if (find()) return true;
    if (MonotonicNs() - lastRead_ < 100'000'000) return false;
    ReadMaps();
    return find();
}

NativeSymbols::Library::~Library() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
}

namespace {

// The file's virtual address of the PT_LOAD segment holding `fileOffset`, minus its
// offset: what `bias` adds to (0 when no segment holds it).
std::uint64_t SegmentDelta(Elf *elf, std::uint64_t fileOffset, bool &found) {
    std::size_t phnum = 0;
    found = false;
    if (elf_getphdrnum(elf, &phnum) != 0) return 0;
    for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
        if (fileOffset >= ph.p_offset && fileOffset < ph.p_offset + std::max(ph.p_filesz, GElf_Xword{1})) {
            found = true;
            return ph.p_vaddr - ph.p_offset;
        }
    }
    return 0;
}

}  // namespace

// The function symbols of .symtab (a superset of .dynsym's), or of .dynsym in a
// stripped file, and `bias`: what turns an address of the mapping `m` into the file's
// virtual address (from the PT_LOAD segment holding its offset). The names stay in
// libelf's mapping of the file, which the library keeps open.
void NativeSymbols::ReadSymbols(Library &lib, const Mapping &m) {
    lib.read = true;
    lib.fd = ::open(lib.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (lib.fd < 0) return;
    lib.elf = elf_begin(lib.fd, ELF_C_READ_MMAP, nullptr);
    Elf *elf = lib.elf;
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return;
    bool found = false;
    const std::uint64_t delta = SegmentDelta(elf, m.fileOffset, found);
    if (found) lib.bias = m.start - m.fileOffset - delta;
    Elf_Scn *table = nullptr;
    for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr) continue;
        if (sh.sh_type == SHT_SYMTAB) {
            table = scn;
            break;
        }
        if (sh.sh_type == SHT_DYNSYM) table = scn;
    }
    GElf_Shdr sh;
    Elf_Data *data = table != nullptr && gelf_getshdr(table, &sh) != nullptr ? elf_getdata(table, nullptr) : nullptr;
    if (data != nullptr && sh.sh_entsize != 0) {
        const std::size_t count = sh.sh_size / sh.sh_entsize;
        lib.symbols.reserve(count / 2);
        for (std::size_t i = 0; i < count; ++i) {
            GElf_Sym sym;
            if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
            if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF) continue;
            const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name == nullptr || *name == '\0') continue;
            lib.symbols.push_back({sym.st_value, sym.st_size, name});
        }
    }
    const std::vector<std::uint64_t> starts = FunctionStarts(elf);
    auto byStart = [](const Symbol &a, const Symbol &b) { return a.start != b.start ? a.start < b.start : a.size > b.size; };
    std::sort(lib.symbols.begin(), lib.symbols.end(), byStart);
    // Aliases name a function more than once: one entry per start.
    lib.symbols.erase(std::unique(lib.symbols.begin(), lib.symbols.end(),
                                  [](const Symbol &a, const Symbol &b) { return a.start == b.start; }),
                      lib.symbols.end());
    // Functions no symbol names (a stripped library's internal ones) still have their
    // unwind entries: each becomes "library+0xSTART", so one function is one frame
    // whatever the address inside it. Both lists are sorted: one merge pass.
    std::vector<Symbol> unnamed;
    auto named = lib.symbols.begin();
    for (std::size_t i = 0; i < starts.size(); ++i) {
        const std::uint64_t start = starts[i];
        while (named != lib.symbols.end() && named->start <= start) ++named;
        if (named != lib.symbols.begin()) {
            const Symbol &s = *std::prev(named);
            if (start == s.start || (s.size != 0 && start < s.start + s.size)) continue;
        }
        const std::uint64_t end = i + 1 < starts.size() ? starts[i + 1] : start;
        unnamed.push_back({start, end > start ? end - start : 0, nullptr});
    }
    if (unnamed.empty()) return;
    const auto middle = lib.symbols.insert(lib.symbols.end(), unnamed.begin(), unnamed.end());
    std::inplace_merge(lib.symbols.begin(), middle, lib.symbols.end(), byStart);
}

// The kernel's text: the upper half of the address space on x86-64 and AArch64.
constexpr std::uint64_t kKernelSpace = 0xffff800000000000ull;

// /proc/kallsyms's text symbols, read in 64 KiB pieces (the kernel makes the text as
// it is read; there is no size to ask first): "ffffffff81d7f390 T vfs_read", or
// "... t nf_hook_slow\t[nf_tables]" for a module's, kept as "nf_hook_slow [nf_tables]".
void NativeSymbols::ReadKernelSymbols() {
    kernel_.read = true;
    kernel_.base = "[kernel]";
    const int fd = ::open(kallsymsPath_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    std::string &names = kernel_.names;
    names.reserve(4u << 20);
    std::vector<std::pair<std::uint64_t, std::size_t>> found;  // start, name's offset in `names`
    found.reserve(1u << 17);
    static constexpr std::size_t kChunk = 64 * 1024;
    std::vector<char> buffer(kChunk + 512);
    std::size_t kept = 0;  // an unfinished line's bytes at the buffer's start
    for (bool end = false; !end;) {
        ssize_t n = ::read(fd, buffer.data() + kept, buffer.size() - kept);
        if (n <= 0) {  // the end: a last line without its newline is given one
            if (kept == 0) break;
            end = true;
            buffer[kept] = '\n';
            n = 1;
        }
        char *p = buffer.data();
        char *const filled = p + kept + static_cast<std::size_t>(n);
        for (char *eol; (eol = static_cast<char *>(std::memchr(p, '\n', static_cast<std::size_t>(filled - p))));
             p = eol + 1) {
            char *after = nullptr;
            const std::uint64_t start = std::strtoull(p, &after, 16);
            if (start == 0 || after + 3 >= eol || after[0] != ' ' || after[2] != ' ') continue;
            if (after[1] != 't' && after[1] != 'T' && after[1] != 'w' && after[1] != 'W') continue;
            const char *name = after + 3;
            found.emplace_back(start, names.size());
            names.append(name, static_cast<std::size_t>(eol - name));
            if (const auto tab = names.find('\t', found.back().second); tab != std::string::npos) names[tab] = ' ';
            names.push_back('\0');
        }
        kept = static_cast<std::size_t>(filled - p);
        if (kept >= kChunk) kept = 0;  // a line longer than any symbol's: dropped
        std::memmove(buffer.data(), p, kept);
    }
    ::close(fd);
    kernel_.symbols.reserve(found.size());
    for (const auto &[start, name] : found) kernel_.symbols.push_back({start, 0, names.c_str() + name});
    std::sort(kernel_.symbols.begin(), kernel_.symbols.end(),
              [](const Symbol &a, const Symbol &b) { return a.start < b.start; });
}

void NativeSymbols::LookupKernel(std::uintptr_t address, NativeFrame &frame) {
    if (!kernel_.read) ReadKernelSymbols();
    frame.library = kernel_.base;
    frame.offset = address;
    auto it = std::upper_bound(kernel_.symbols.begin(), kernel_.symbols.end(), std::uint64_t{address},
                               [](std::uint64_t a, const Symbol &s) { return a < s.start; });
    frame.symbol = it != kernel_.symbols.begin()
                       ? std::string(std::prev(it)->name)
                       : std::string("(a function: kptr_restrict hides the kernel's addresses)");
}

bool NativeSymbols::Lookup(std::uintptr_t address, NativeFrame &frame) {
    std::lock_guard lock(mutex_);
    if (address >= kKernelSpace) {
        LookupKernel(address, frame);
        return true;
    }
    Mapping m{};
    if (!FindMapping(address, m)) return false;
    Library &lib = *m.library;
    if (!lib.read) ReadSymbols(lib, m);
    frame.library = lib.base;
    frame.symbol.clear();
    const std::uint64_t vaddr = address - lib.bias;
    frame.offset = vaddr;
    auto it = std::upper_bound(lib.symbols.begin(), lib.symbols.end(), vaddr,
                               [](std::uint64_t a, const Symbol &s) { return a < s.start; });
    if (it != lib.symbols.begin()) {
        const Symbol &s = *std::prev(it);
        const bool inside = s.size != 0 ? vaddr < s.start + s.size : (it == lib.symbols.end() || vaddr < it->start);
        if (inside) frame.symbol = s.name == nullptr ? lib.base + "+" + Hex(s.start) : Demangled(s.name);
    }
    if (frame.symbol.empty()) frame.symbol = lib.base + "+" + Hex(vaddr);
    return true;
}

}  // namespace martini::core
