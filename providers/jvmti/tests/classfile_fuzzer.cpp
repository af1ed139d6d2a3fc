// libFuzzer target for the class-file reader/rewriter: any input must come back as a
// rejected class with a reason, or as a parsed one; rewritten output must parse again,
// declare the same methods, and survive being instrumented again. Built and run by
// scripts/fuzz-classfile.sh (clang, -fsanitize=fuzzer,address,undefined), which seeds
// the corpus with javac-compiled classes.
#include "instrumenter.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace {

using namespace martini::jvm;

[[noreturn]] void Fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "classfile_fuzzer: %s: %s\n", what, detail.c_str());
    std::abort();
}

bool SameMethods(const ClassDecl &a, const ClassDecl &b) {
    if (a.methods.size() != b.methods.size()) return false;
    for (std::size_t i = 0; i < a.methods.size(); ++i) {
        if (a.methods[i].name != b.methods[i].name || a.methods[i].descriptor != b.methods[i].descriptor) return false;
    }
    return true;
}

// Instruments every method, gives every class allocation probes and every method
// coverage counters; ids start at `firstId` (past 32767 the probes use ldc_w).
InstrumentResult InstrumentAll(std::span<const std::uint8_t> bytes, std::int64_t firstId) {
    std::int64_t next = firstId;
    return InstrumentClass(bytes, {.calls = [&](const ClassDecl &, const MethodDecl &) { return next++; },
                                   .allocs = [&](const ClassDecl &) { return next++; },
                                   .coverage = [&](const ClassDecl &, const MethodDecl &, CoverageLayout &) {
                                       return next++;
                                   }});
}

void Check(const InstrumentResult &r, const char *pass) {
    if (!r.parsed) {
        if (r.error.empty()) Fail(pass, "rejected without a reason");
        if (r.changed || !r.bytes.empty()) Fail(pass, "rejected but returned bytes");
        return;
    }
    if (!r.changed) {
        if (!r.bytes.empty()) Fail(pass, "unchanged but returned bytes");
        return;
    }
    const InstrumentResult again = ParseClass(r.bytes);
    if (!again.parsed) Fail(pass, "output does not parse: " + again.error);
    if (!SameMethods(again.decl, r.decl)) Fail(pass, "output declares other methods");
    if (!r.delegationOffsets.empty() && r.delegationOffsets.size() != r.decl.methods.size()) {
        Fail(pass, "delegationOffsets does not have one entry per method");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::span<const std::uint8_t> input(data, size);
    const std::int64_t firstId = size % 2 == 0 ? 1 : 40000;
    const InstrumentResult parsed = ParseClass(input);
    const InstrumentResult r = InstrumentAll(input, firstId);
    if (!parsed.parsed && r.parsed) Fail("first pass", "ParseClass rejects what InstrumentClass took: " + parsed.error);
    Check(r, "first pass");
    if (r.changed) Check(InstrumentAll(r.bytes, firstId), "second pass");
    return 0;
}
