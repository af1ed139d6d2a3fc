// A client written from the MPI document alone: it observes the external-control
// events and writes one line per event to the file named in its options, as a tool
// vendor's client would see them (tests/control_java_test.py checks the lines).
#include <MpiAPI.h>

#include <cstdio>
#include <mutex>
#include <string>

using namespace Martini::MPI;

namespace {

IMpi *gMpi = nullptr;
TId gId = 0;
std::FILE *gOut = nullptr;
std::mutex gMutex;

void Line(const std::string &text) {
    std::lock_guard lock(gMutex);
    std::fprintf(gOut, "%s\n", text.c_str());
    std::fflush(gOut);
}

class Start : public IEcStartEventObserver {
    void HandleEvent() override { Line("EcStart"); }
} gStart;
class Stop : public IEcStopEventObserver {
    void HandleEvent() override { Line("EcStop"); }
} gStop;
class Attach : public IEcAttachEventObserver {
    void HandleEvent() override { Line("EcAttach"); }
} gAttach;
class Detach : public IEcDetachEventObserver {
    void HandleEvent() override { Line("EcDetach"); }
} gDetach;
class Shutdown : public IVmShutdownEventObserver {
    void HandleEvent() override { Line("VmShutdown"); }
} gShutdown;
class OutputDir : public IEcSetOutputDirectoryEventObserver {
    BitSet EventDataTypes() override { return DR_COMMAND; }
    void HandleEvent(SEcSetOutputDirectoryEventData &d) override {
        Line(std::string("EcSetOutputDirectory ") + ((d.validData & DR_COMMAND) ? d.szDirectoryName : "?"));
    }
} gOutputDir;
class Custom : public IEcCustomCommandEventObserver {
    BitSet EventDataTypes() override { return DR_COMMAND; }
    void HandleEvent(SEcCustomCommandEventData &d) override {
        std::string line = "EcCustomCommand " + std::to_string(d.uiCommandId) + " [" +
                           ((d.validData & DR_COMMAND) ? d.szCommandData : "?") + "]";
        if (d.uiCommandId == CC_THREAD_PAUSE || d.uiCommandId == CC_THREAD_RESUME) {
            // The data is a thread id: its name, asked from the handler.
            SThreadInfo info;
            char name[128] = "";
            info.szName = name;
            info.uiNameSize = sizeof name;
            const TResult r = gMpi->GetThreadInfo(gId, std::stoull(d.szCommandData), DR_THREAD_NAME, &info);
            line += " thread " + std::string(r == MRTE_RESULT_OK ? name : "?");
        }
        Line(line);
    }
} gCustom;

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *options) {
    gMpi = mpi;
    gId = clientId;
    gOut = std::fopen(options, "a");
    if (gOut == nullptr) return MRTE_ERROR_FAIL;
    IEventObserver *observers[] = {&gStart, &gStop, &gAttach, &gDetach, &gShutdown, &gOutputDir, &gCustom};
    for (IEventObserver *o : observers) {
        if (mpi->RegisterEvent(clientId, *o) != MRTE_RESULT_OK) return MRTE_ERROR_FAIL;
    }
    Line("Instantiate");
    return MRTE_RESULT_OK;
}
