// Test client for the interpreter C ABI: records every event it sees, one line each, and
// writes them at VmShutdown to the file named by its options ("out=FILE"), with
// "skip=NAME" leaving the method NAME out through a call-graph filter. Lines:
//   init T | method M NAME CLASS LINE | class C NAME | enter M T | leave M T
//   ecstart | ecstop | custom ID DATA | detach
//   tstart T NAME PARENT | tend T | jit M SIZE | unjit M SIZE | outdir DIR
//   codeinfo M LOCATION LINE CODESIZE (at each jit: GetCompiledMethodInfo of the
//     code's address + 16, and GetMethodInfo's code size of M)
//   tname T NAME (at each tend, with the option "names": GetThreadInfo's name)
//   stack T M1,M2,... (at each enter: GetThreadInfo's stack of the current thread)
//   shutdown
// Coverage, with the option "cover" (IMpi::RequestCoverage of DR_COVERAGE_BLOCKS) or
// "cover=time" (and DR_COVERAGE_TIME); "cover-skip=NAME" leaves the method NAME out
// through an EG_COVERAGE filter; "nocalls" registers no MethodEnter or MethodLeave:
//   reqcov-bad RESULT (at instantiate: RequestCoverage without DR_COVERAGE_BLOCKS)
//   reqcov-calls-mixed RESULT (DR_COVERAGE_CALLS with another item)
//   reqcov-calls RESULT (DR_COVERAGE_CALLS alone: the interpreter counts no calls apart)
//   reqcov-late RESULT (at VmInit: RequestCoverage after INSTANTIATE)
//   and at VmShutdown, before "shutdown":
//   covered M1,M2,... (GetCoveredMethods)
//   cov M RESULT OFFSET:LINE:COUNT:TIME ... (GetCoverageInfo of each method seen, the
//     items the option asked for)
//   covshort M RESULT ACTUALSIZE (an empty buffer)
//   covbranches M RESULT VALIDDATA (DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES)
// Written against mpi/ only.
#include <MpiAPI.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

using namespace Martini::MPI;

namespace {

IMpi *gMpi;
TId gId;
std::string gOut, gSkip, gCoverSkip;
bool gNames = false;
BitSet gCover = 0;  // the coverage items asked for (0: no coverage)
bool gCalls = true;
std::vector<TId> gMethods;  // NewMethod's, in order
std::vector<std::string> gLines;
std::mutex gLinesMutex;  // handlers run on every thread that raises events

void Line(std::string s) {
    std::lock_guard lock(gLinesMutex);
    gLines.push_back(std::move(s));
}
std::string N(TId id) { return std::to_string(id); }

struct Skip : ICallGraphFilter {
    bool ShouldNotify(SCallGraphFilterData &d) override { return gSkip.empty() || gSkip != d.szMethodName; }
};

struct CoverSkip : ICoverageFilter {
    bool ShouldNotify(SCoverageFilterData &d) override { return gCoverSkip != d.szMethodName; }
};

struct Init : IVmInitEventObserver {
    void HandleEvent(SVmInitEventData &d) override {
        Line("init " + N(d.threadId));
        if (gCover != 0) Line(std::string("reqcov-late ") + ResultName(gMpi->RequestCoverage(gId, gCover)));
    }
};

// What GetCoveredMethods and GetCoverageInfo answer at the end of the run.
void CoverageLines() {
    TId ids[64];
    SIdArray covered;
    covered.entries = ids;
    covered.uiSize = 64;
    std::string s = "covered ";
    if (TResult r = gMpi->GetCoveredMethods(gId, &covered); r != MRTE_RESULT_OK) {
        s += ResultName(r);
    } else {
        for (unsigned i = 0; i < covered.uiActualSize; ++i) {
            if (i != 0) s += ',';
            s += N(ids[i]);
        }
    }
    Line(s);
    std::vector<TId> methods;
    {
        std::lock_guard lock(gLinesMutex);
        methods = gMethods;
    }
    for (TId m : methods) {
        SCoverageEntry entries[64];
        SCoverageInfo info;
        info.entries.entries = entries;
        info.entries.uiSize = 64;
        const TResult r = gMpi->GetCoverageInfo(gId, m, gCover, &info);
        std::string c = "cov " + N(m) + " " + ResultName(r);
        for (unsigned i = 0; r == MRTE_RESULT_OK && i < info.entries.uiActualSize; ++i) {
            const SCoverageEntry &e = entries[i];
            // Appended piece by piece: g++ 12 -O3 warns falsely (-Wrestrict) on `" " + ...`.
            c.append(" ").append(std::to_string(e.uiOffset)).append(":").append(std::to_string(e.uiLineNumber));
            c.append(":").append(std::to_string(e.uiCount)).append(":").append(std::to_string(e.uiTimeNs));
        }
        Line(c);
        SCoverageInfo empty;  // no buffer at all
        const TResult shortResult = gMpi->GetCoverageInfo(gId, m, DR_COVERAGE_BLOCKS, &empty);
        Line("covshort " + N(m) + " " + ResultName(shortResult) + " " + std::to_string(empty.entries.uiActualSize));
        SCoverageInfo branches;
        branches.entries.entries = entries;
        branches.entries.uiSize = 64;
        const TResult branchResult =
            gMpi->GetCoverageInfo(gId, m, DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES, &branches);
        Line("covbranches " + N(m) + " " + ResultName(branchResult) + " " + std::to_string(branches.validData));
    }
}

struct Shutdown : IVmShutdownEventObserver {
    void HandleEvent() override {
        if (gCover != 0) CoverageLines();
        Line("shutdown");
        std::lock_guard lock(gLinesMutex);
        if (FILE *f = std::fopen(gOut.c_str(), "w")) {
            for (const auto &l : gLines) std::fprintf(f, "%s\n", l.c_str());
            std::fclose(f);
        }
    }
};
struct ClassLoad : IClassLoadEventObserver {
    void HandleEvent(SClassLoadEventData &d) override { Line("class " + N(d.classId) + " " + d.szClassName); }
};
struct NewMethod : INewMethodEventObserver {
    void HandleEvent(SNewMethodEventData &d) override {
        const unsigned line = d.lineNumbers.uiActualSize ? d.lineNumbers.entries[0].uiLineNumber : 0;
        Line("method " + N(d.methodId) + " " + d.szMethodName + " " + d.szClassName + " " + std::to_string(line));
        std::lock_guard lock(gLinesMutex);
        gMethods.push_back(d.methodId);
    }
};
struct Enter : IMethodEnterEventObserver {
    void HandleEvent(SMethodEnterEventData &d) override {
        Line("enter " + N(d.methodId) + " " + N(d.threadId));
        TId current = 0;
        if (gMpi->GetCurrentThreadId(gId, &current) != MRTE_RESULT_OK || current != d.threadId) {
            Line("bad current thread " + N(current));
        }
        SStackEntry frames[64];
        SThreadInfo info;
        info.stackTrace.entries = frames;
        info.stackTrace.uiSize = 64;
        if (gMpi->GetThreadInfo(gId, d.threadId, DR_VM_CALL_STACK, &info) == MRTE_RESULT_OK) {
            std::string s = "stack " + N(d.threadId) + " ";
            // Appended piece by piece: `(i ? "," : "") + N(...)` makes g++ 12 at -O3 report a
            // false -Wrestrict overlap (GCC bug 105651), which breaks -Dwerror=true release builds.
            for (unsigned i = 0; i < info.stackTrace.uiActualSize && i < 64; ++i) {
                if (i != 0) s += ',';
                s += N(frames[i].methodId);
            }
            Line(s);
        }
    }
};
struct Leave : IMethodLeaveEventObserver {
    void HandleEvent(SMethodLeaveEventData &d) override { Line("leave " + N(d.methodId) + " " + N(d.threadId)); }
};
struct ThreadStart : IThreadStartEventObserver {
    void HandleEvent(SThreadStartEventData &d) override {
        Line("tstart " + N(d.threadId) + " " + d.szThreadName + " " + N(d.parentThreadId));
    }
};
struct ThreadEnd : IThreadEndEventObserver {
    void HandleEvent(SThreadEndEventData &d) override {
        Line("tend " + N(d.threadId));
        if (!gNames) return;
        char name[64];
        SThreadInfo info;
        info.szName = name;
        info.uiNameSize = sizeof name;
        if (gMpi->GetThreadInfo(gId, d.threadId, DR_THREAD_NAME, &info) == MRTE_RESULT_OK) {
            Line("tname " + N(d.threadId) + " " + name);
        }
    }
};
struct Jit : IJittedMethodLoadedEventObserver {
    void HandleEvent(SJittedMethodLoadedEventData &d) override {
        Line("jit " + N(d.methodId) + " " + std::to_string(d.uiCodeSize));
        SCompiledMethodInfo code;
        SMethodInfo method;
        if (gMpi->GetCompiledMethodInfo(gId, d.uiCodeAddress + 16, DR_METHOD_ID | DR_METHOD_CODE | DR_LINE_NUMBER,
                                        &code) == MRTE_RESULT_OK &&
            gMpi->GetMethodInfo(gId, d.methodId, DR_METHOD_CODE, &method) == MRTE_RESULT_OK) {
            Line("codeinfo " + N(code.methodId) + " " + std::to_string(code.uiLocation) + " " +
                 std::to_string(code.uiLineNumber) + " " + std::to_string(method.uiCodeSize));
        }
    }
};
struct Unjit : IJittedMethodUnloadedEventObserver {
    void HandleEvent(SJittedMethodUnloadedEventData &d) override {
        Line("unjit " + N(d.methodId) + " " + std::to_string(d.uiCodeSize));
    }
};
struct OutDir : IEcSetOutputDirectoryEventObserver {
    void HandleEvent(SEcSetOutputDirectoryEventData &d) override { Line(std::string("outdir ") + d.szDirectoryName); }
};

struct EcStart : IEcStartEventObserver {
    void HandleEvent() override { Line("ecstart"); }
};
struct EcStop : IEcStopEventObserver {
    void HandleEvent() override { Line("ecstop"); }
};
struct EcCustom : IEcCustomCommandEventObserver {
    void HandleEvent(SEcCustomCommandEventData &d) override {
        Line("custom " + std::to_string(d.uiCommandId) + " " + d.szCommandData);
    }
};
struct EcDetach : IEcDetachEventObserver {
    void HandleEvent() override { Line("detach"); }
};

Skip gSkipFilter;
CoverSkip gCoverSkipFilter;
EcStart gEcStart;
EcStop gEcStop;
EcCustom gEcCustom;
EcDetach gEcDetach;
Init gInit;
Shutdown gShutdown;
ClassLoad gClassLoad;
NewMethod gNewMethod;
Enter gEnter;
Leave gLeave;
ThreadStart gThreadStart;
ThreadEnd gThreadEnd;
Jit gJit;
Unjit gUnjit;
OutDir gOutDir;

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId id, const char *options) {
    gMpi = mpi;
    gId = id;
    gLines.clear();
    gOut.clear();
    gSkip.clear();
    gCoverSkip.clear();
    gMethods.clear();
    gNames = false;
    gCover = 0;
    gCalls = true;
    std::string o = options ? options : "";
    for (std::size_t start = 0; start < o.size();) {
        std::size_t end = o.find(',', start);
        if (end == std::string::npos) end = o.size();
        const std::string kv = o.substr(start, end - start);
        if (kv.rfind("out=", 0) == 0) gOut = kv.substr(4);
        else if (kv.rfind("skip=", 0) == 0) gSkip = kv.substr(5);
        else if (kv == "names") gNames = true;
        else if (kv == "cover") gCover = DR_COVERAGE_BLOCKS;
        else if (kv == "cover=time") gCover = DR_COVERAGE_BLOCKS | DR_COVERAGE_TIME;
        else if (kv.rfind("cover-skip=", 0) == 0) gCoverSkip = kv.substr(11);
        else if (kv == "nocalls") gCalls = false;
        else return MRTE_ERROR_ILLEGAL_ARGUMENT;
        start = end + 1;
    }
    if (gOut.empty()) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    if (gCover != 0) {
        Line(std::string("reqcov-bad ") + ResultName(mpi->RequestCoverage(id, DR_COVERAGE_BRANCHES)));
        Line(std::string("reqcov-calls-mixed ") +
             ResultName(mpi->RequestCoverage(id, DR_COVERAGE_CALLS | DR_COVERAGE_BRANCHES)));
        Line(std::string("reqcov-calls ") + ResultName(mpi->RequestCoverage(id, DR_COVERAGE_CALLS)));
        if (TResult r = mpi->RequestCoverage(id, gCover); r != MRTE_RESULT_OK) return r;
        if (!gCoverSkip.empty()) {
            if (TResult r = mpi->SetEventGroupFilter(id, EG_COVERAGE, gCoverSkipFilter); r != MRTE_RESULT_OK) return r;
        }
    }
    IEventObserver *observers[] = {&gInit, &gShutdown, &gClassLoad, &gNewMethod, &gEnter, &gLeave,
                                   &gThreadStart, &gThreadEnd, &gJit, &gUnjit, &gOutDir,
                                   &gEcStart, &gEcStop, &gEcCustom, &gEcDetach};
    for (IEventObserver *o : observers) {
        if (!gCalls && (o == &gEnter || o == &gLeave)) continue;
        if (TResult r = mpi->RegisterEvent(id, *o); r != MRTE_RESULT_OK) return r;
    }
    return mpi->SetEventGroupFilter(id, EG_CALL_GRAPH, gSkipFilter);
}
