// Native code by name: the library an address of this process lies in (from
// /proc/self/maps) and the function around it, from the library's ELF symbol table
// (.symtab when the file has one, as libjvm.so does, else .dynsym), read once per
// library with Debian's libelf; C++ names demangled. A function without a symbol (a
// stripped library's internal ones) is named by the library and the offset of its
// start, from the unwind table .eh_frame_hdr ("libc.so.6+0x16e040"); an address in
// no known function by its own offset. A kernel address (kernel_stacks.h) is named
// from /proc/kallsyms, read once, as a function of "[kernel]" (a module's function as
// "name [module]"); as one function where kptr_restrict hides the addresses. For a
// provider's sampler, on its own thread (never in a signal handler).
//
// Locks: one mutex guards the mappings and the libraries' tables.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

struct Elf;

namespace martini::core {

struct NativeFrame {
    std::string library;  // the file's base name: "libjvm.so", "libz.so.1"; "" when unknown
    std::string symbol;   // "deflate", "CompileBroker::compiler_thread_loop()"; "" when none
    std::uint64_t offset = 0;  // from the library's load address
};

class NativeSymbols {
public:
    // `kallsyms`: where the kernel's symbols are read from (a test's own file).
    explicit NativeSymbols(std::string kallsyms = "/proc/kallsyms");
    ~NativeSymbols();
    NativeSymbols(const NativeSymbols &) = delete;
    NativeSymbols &operator=(const NativeSymbols &) = delete;

    // False when `address` is in no executable mapping of a file (not code, or code
    // made at run time such as a JIT's).
    bool Lookup(std::uintptr_t address, NativeFrame &frame);

private:
    struct Symbol {
        std::uint64_t start, size;  // file's virtual addresses
        const char *name;           // in the library's mapped string table or `names`; null: no symbol
    };
    struct Library {
        Library() = default;
        Library(const Library &) = delete;
        Library &operator=(const Library &) = delete;
        ~Library();
        std::string path, base;
        bool read = false;
        std::uint64_t bias = 0;  // load address minus the file's first PT_LOAD address
        std::vector<Symbol> symbols;  // sorted by start
        std::string names;  // the kernel's: /proc/kallsyms as read, its lines cut into names in place
        Elf *elf = nullptr;  // kept open: the symbols' names are in its mapping of the file
        int fd = -1;
    };
    struct Mapping {
        std::uintptr_t start, end;
        std::uint64_t fileOffset;
        Library *library;
    };
    bool FindMapping(std::uintptr_t address, Mapping &out);
    void LookupKernel(std::uintptr_t address, NativeFrame &frame);
    void ReadKernelSymbols();
    void ReadMaps();
    void ReadSymbols(Library &lib, const Mapping &m);

    std::mutex mutex_;  // everything below
    std::vector<Mapping> mappings_;  // executable file mappings, by start
    std::unordered_map<std::string, std::unique_ptr<Library>> libraries_;
    std::uint64_t lastRead_ = 0;  // when /proc/self/maps was read (ns), re-read at most every 100 ms on a miss
    std::string kallsymsPath_;
    Library kernel_;  // /proc/kallsyms's functions (no sizes: each ends where the next starts)
};

}  // namespace martini::core
