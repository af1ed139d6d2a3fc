// Shared helpers for the core's tests: a scriptable provider and in-process clients
// whose MPICL_Instantiate runs a lambda.
#pragma once

#include "martini/core/core.h"

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace martini::test {

using namespace Martini::MPI;
using core::ClientMask;
using core::Core;

class FakeProvider : public core::Provider {
public:
    std::set<TEventType> unsupported;
    std::vector<std::pair<TEventType, bool>> demandChanges;

    core::RuntimeDescription Describe() const override { return {RT_UNKNOWN, "fake", "1.0"}; }
    bool CanRaise(TEventType event) const noexcept override { return unsupported.count(event) == 0; }
    void OnEventDemandChanged(TEventType event, bool wanted) noexcept override {
        demandChanges.emplace_back(event, wanted);
    }
    TResult CurrentThread(TId &id) noexcept override {
        id = 7;
        return MRTE_RESULT_OK;
    }
    std::vector<std::pair<unsigned, bool>> samplingRates;  // (hz, wall) as the core passed them
    TResult SetSamplingRate(unsigned hz, bool wall) noexcept override {
        samplingRates.emplace_back(hz, wall);
        return MRTE_RESULT_OK;
    }
};

using InstantiateBody = std::function<TResult(IMpi &, TId)>;

// Adds an in-process client whose MPICL_Instantiate runs `body`.
inline Core::LoadResult AddClient(Core &core, const std::string &name, InstantiateBody body) {
    static thread_local InstantiateBody *current = nullptr;
    current = &body;
    auto result = core.AddClient(
        name, [](IMpi *mpi, TId id, const char *) { return (*current)(*mpi, id); }, "");
    current = nullptr;
    return result;
}

// Adds a client that registers `observers` (and nothing else).
inline TId AddObserving(Core &core, const std::string &name, std::vector<IEventObserver *> observers) {
    return AddClient(core, name, [observers](IMpi &mpi, TId id) {
               for (IEventObserver *o : observers) {
                   if (TResult r = mpi.RegisterEvent(id, *o); r != MRTE_RESULT_OK) return r;
               }
               return MRTE_RESULT_OK;
           }).clientId;
}

// A MethodEnter observer that records what it saw.
class EnterRecorder : public IMethodEnterEventObserver {
public:
    explicit EnterRecorder(BitSet wanted = DR_METHOD_ID | DR_THREAD_ID) : wanted_(wanted) {}
    BitSet EventDataTypes() override { return wanted_; }
    void HandleEvent(SMethodEnterEventData &data) override {
        seen.push_back(data);
        if (onEvent) onEvent(data);
    }
    std::vector<SMethodEnterEventData> seen;
    std::function<void(SMethodEnterEventData &)> onEvent;

private:
    BitSet wanted_;
};

class LeaveRecorder : public IMethodLeaveEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID; }
    void HandleEvent(SMethodLeaveEventData &data) override { seen.push_back(data); }
    std::vector<SMethodLeaveEventData> seen;
};

inline SMethodEnterEventData Enter(TId method, TId thread = 1) {
    SMethodEnterEventData d;
    d.methodId = method;
    d.threadId = thread;
    d.uiCpuTimestamp = 1000;
    d.validData = DR_METHOD_ID | DR_THREAD_ID | DR_CPU_TIMESTAMP;
    return d;
}

}  // namespace martini::test
