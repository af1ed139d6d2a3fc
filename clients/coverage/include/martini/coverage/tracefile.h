// Coverage of source files, as the coverage client collects it and as lcov tracefiles
// hold it: per file, each line's count, each function's calls and first line, each
// branch outcome's count. Read and written in lcov's tracefile format (man geninfo),
// written as Cobertura XML (what CI servers read) and as one self-contained HTML page.
// `martini coverage merge` reads tracefiles of many processes and adds them up.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace martini::coverage {

struct Function {
    unsigned line = 0;       // first line
    std::uint64_t count = 0; // calls
};

// A branch outcome: BRDA:<line>,<block>,<branch>,<taken>. `block` tells the branching
// instructions of one line apart (their code offset), `branch` the outcome.
struct BranchKey {
    unsigned line = 0;
    unsigned block = 0;
    unsigned branch = 0;
    auto operator<=>(const BranchKey &) const = default;
};

struct File {
    std::map<unsigned, std::uint64_t> lines;         // DA: line -> times entered
    std::map<std::string, Function> functions;       // FN/FNDA, by name
    std::map<BranchKey, std::optional<std::uint64_t>> branches;  // BRDA ("-": never evaluated)
    // Why some of it could not be counted by line ("3 methods have no line table:
    // counted by block only"); shown in the HTML and the summary.
    std::vector<std::string> notes;
};

struct Tracefile {
    std::string testName;               // TN
    std::map<std::string, File> files;  // by SF path
};

// Totals of one file or of all.
struct Totals {
    std::size_t lines = 0, linesHit = 0;
    std::size_t functions = 0, functionsHit = 0;
    std::size_t branches = 0, branchesHit = 0;
    void Add(const Totals &o);
    static double Rate(std::size_t hit, std::size_t all) { return all == 0 ? 1.0 : double(hit) / double(all); }
};
Totals Count(const File &f);
Totals Count(const Tracefile &t);

// lcov tracefile.
void WriteLcov(const Tracefile &t, std::ostream &out);
// Reads a tracefile; "" or what is wrong, naming `name` and the line number.
std::string ReadLcov(std::istream &in, const std::string &name, Tracefile &t);
// Adds `from` (read from `fromName`) into `into`. Refuses, naming the file, what cannot
// be added: a function that starts on another line in the two (the files were made
// from different sources); nothing is changed then.
std::string Merge(Tracefile &into, const Tracefile &from, const std::string &fromName);

// A source file's lines, or nullopt when it cannot be read.
using SourceReader = std::function<std::optional<std::vector<std::string>>(const std::string &path)>;
// Reads `path` from the file system.
std::optional<std::vector<std::string>> ReadSourceFile(const std::string &path);

// Cobertura XML: one package per directory, one class per source file.
void WriteCobertura(const Tracefile &t, std::ostream &out, std::int64_t timestampMs);
// One HTML page: the files sorted by line coverage (least covered first), each file's
// source with its lines coloured by count; a file whose source cannot be read is
// listed with that said.
void WriteHtml(const Tracefile &t, std::ostream &out, const SourceReader &read);
// The per-file summary table printed at the end of a run and by merge.
void WriteSummary(const Tracefile &t, std::ostream &out, std::size_t maxFiles);

}  // namespace martini::coverage
