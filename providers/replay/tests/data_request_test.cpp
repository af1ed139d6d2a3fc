// Data requests answered with the exact MPI result codes. The requests run inside a
// handler of the trace's last record (EcCustomCommand), as a client would make them.
#include "martini/replay/replay_provider.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <sstream>

namespace martini::test {
namespace {

using namespace Martini::MPI;
using core::Core;

const char kTrace[] = R"(
{"event":"ThreadStart","thread":1,"name":"main","group":"system"}
{"event":"ModuleLoad","module":1,"name":"app.jar"}
{"event":"ClassLoad","thread":1,"class":10,"name":"com.acme.Order","source":"Order.java","module":1}
{"event":"ClassLoad","thread":1,"class":11,"name":"com.acme.Generated"}
{"event":"NewMethod","method":100,"class":10,"name":"placeOrder","sig":"(I)Z","access":"package_api","lines":[[0,20],[5,21],[9,24]]}
{"event":"NewMethod","method":101,"class":10,"name":"validate","sig":"()V","access":"class_internal"}
{"event":"NewMethod","method":110,"class":11,"name":"call","sig":"()V"}
{"event":"VmInit","thread":1}
{"event":"JittedMethodLoaded","method":100,"address":4096,"size":64}
{"event":"ThreadStart","thread":2,"name":"worker-7","group":"pool","parent":1,"object":77}
{"event":"ObjectAlloc","thread":1,"object":500,"class":10,"size":48,"refs":[501,502]}
{"event":"ObjectAlloc","thread":1,"object":501,"class":10,"size":16,"array":"int","length":3}
{"event":"MethodEnter","thread":1,"method":100}
{"event":"MethodEnter","thread":1,"method":101,"location":5}
{"event":"MethodEnter","thread":2,"method":110}
{"event":"EcCustomCommand","thread":1,"id":1}
)";

// Runs `check` inside the EcCustomCommand handler, after the trace built its tables.
class RequestsInHandler : public IEcCustomCommandEventObserver {
public:
    void HandleEvent(SEcCustomCommandEventData &) override {
        ran = true;
        check(*mpi, id);
    }
    bool ran = false;
    std::function<void(IMpi &, TId)> check;
    IMpi *mpi = nullptr;
    TId id = 0;
};

RequestsInHandler *g_requests = nullptr;

void RunInHandler(std::function<void(IMpi &, TId)> check, const char *trace = kTrace) {
    replay::ReplayProvider provider;
    Core core(provider);
    RequestsInHandler observer;
    observer.check = std::move(check);
    g_requests = &observer;
    auto r = core.AddClient(
        "requests",
        [](IMpi *mpi, TId id, const char *) {
            g_requests->mpi = mpi;
            g_requests->id = id;
            return mpi->RegisterEvent(id, *g_requests);
        },
        "");
    ASSERT_TRUE(r.ok()) << r.error;
    core.FinishInit();
    std::istringstream in(trace);
    EXPECT_EQ(provider.Play(core, in, "trace"), "");
    EXPECT_TRUE(observer.ran) << "the requests never ran";
}

TEST(DataRequests, GetMethodInfoFillsEveryRequestedItem) {
    RunInHandler([](IMpi &mpi, TId id) {
        char name[64], sig[64], cls[64], src[64];
        SLineNumberTableEntry lines[8];
        SMethodInfo info;
        info.szMethodName = name;
        info.uiMethodNameSize = sizeof name;
        info.szMethodSig = sig;
        info.uiMethodSigSize = sizeof sig;
        info.szClassName = cls;
        info.uiClassNameSize = sizeof cls;
        info.szSourceFileName = src;
        info.uiSourceFileNameSize = sizeof src;
        info.lineNumbers.entries = lines;
        info.lineNumbers.uiSize = 8;
        const BitSet items = DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_CLASS_NAME | DR_SOURCE_FILE_NAME |
                             DR_CLASS_ID | DR_MODULE_ID | DR_METHOD_ACCESS_TYPE | DR_METHOD_LINE_NUMBERS |
                             DR_METHOD_CODE;
        ASSERT_EQ(mpi.GetMethodInfo(id, 100, items, &info), MRTE_RESULT_OK);
        EXPECT_EQ(info.validData, items);
        EXPECT_STREQ(name, "placeOrder");
        EXPECT_STREQ(sig, "(I)Z");
        EXPECT_STREQ(cls, "com.acme.Order");
        EXPECT_STREQ(src, "Order.java");
        EXPECT_EQ(info.classId, 10u);
        EXPECT_EQ(info.moduleId, 1u);
        EXPECT_EQ(info.methodAccessType, MAT_PACKAGE_API);
        ASSERT_EQ(info.lineNumbers.uiActualSize, 3u);
        EXPECT_EQ(lines[2].uiOffset, 9u);
        EXPECT_EQ(lines[2].uiLineNumber, 24u);
        EXPECT_EQ(info.uiCodeAddress, 4096u);
        EXPECT_EQ(info.uiCodeSize, 64u);
    });
}

TEST(DataRequests, MpiDocumentStyleBuffersWithoutSizesWork) {
    RunInHandler([](IMpi &mpi, TId id) {
        char szName[1000];
        char szSig[1000];
        SMethodInfo methodInfo;
        methodInfo.szMethodName = szName;
        methodInfo.szMethodSig = szSig;
        EXPECT_EQ(mpi.GetMethodInfo(id, 101, DR_METHOD_NAME | DR_METHOD_SIGNATURE, &methodInfo), MRTE_RESULT_OK);
        EXPECT_STREQ(szName, "validate");
        EXPECT_STREQ(szSig, "()V");
    });
}

TEST(DataRequests, ItemTheRuntimeCannotGiveIsPartialInfo) {
    RunInHandler([](IMpi &mpi, TId id) {
        char src[64];
        SClassInfo info;
        info.szSourceFileName = src;
        info.uiSourceFileNameSize = sizeof src;
        // com.acme.Generated has no source file and no module.
        EXPECT_EQ(mpi.GetClassInfo(id, 11, DR_SOURCE_FILE_NAME | DR_MODULE_ID, &info), MRTE_ERROR_PARTIAL_INFO);
        EXPECT_EQ(info.validData, DR_NONE);
        char name[64];
        info.szClassName = name;
        info.uiClassNameSize = sizeof name;
        EXPECT_EQ(mpi.GetClassInfo(id, 11, DR_CLASS_NAME | DR_SOURCE_FILE_NAME, &info), MRTE_ERROR_PARTIAL_INFO);
        EXPECT_EQ(info.validData, DR_CLASS_NAME);
        EXPECT_STREQ(name, "com.acme.Generated");
    });
}

TEST(DataRequests, ShortStringBufferIsBufferTooShortWithTheSizeNeeded) {
    RunInHandler([](IMpi &mpi, TId id) {
        char name[4], sig[64];
        SMethodInfo info;
        info.szMethodName = name;
        info.uiMethodNameSize = sizeof name;
        info.szMethodSig = sig;
        info.uiMethodSigSize = sizeof sig;
        EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_METHOD_NAME | DR_METHOD_SIGNATURE, &info),
                  MRTE_ERROR_BUFFER_TOO_SHORT);
        EXPECT_EQ(info.uiMethodNameSize, std::strlen("placeOrder") + 1);
        EXPECT_STREQ(name, "pla") << "truncated and terminated";
        EXPECT_EQ(info.validData, DR_METHOD_SIGNATURE) << "the item that fit is valid";
        EXPECT_STREQ(sig, "(I)Z");
    });
}

TEST(DataRequests, ShortArrayIsBufferTooShortWithTheActualSize) {
    RunInHandler([](IMpi &mpi, TId id) {
        SLineNumberTableEntry lines[2];
        SMethodInfo info;
        info.lineNumbers.entries = lines;
        info.lineNumbers.uiSize = 2;
        EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_METHOD_LINE_NUMBERS, &info), MRTE_ERROR_BUFFER_TOO_SHORT);
        EXPECT_EQ(info.lineNumbers.uiActualSize, 3u);
        EXPECT_EQ(lines[1].uiLineNumber, 21u) << "the entries that fit are written";
        EXPECT_EQ(info.validData, DR_NONE);
    });
}

TEST(DataRequests, ArrayWithNoRoomAsksHowMany) {
    RunInHandler([](IMpi &mpi, TId id) {
        SMethodInfo info;  // entries == nullptr, uiSize == 0
        EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_METHOD_LINE_NUMBERS, &info), MRTE_ERROR_BUFFER_TOO_SHORT);
        EXPECT_EQ(info.lineNumbers.uiActualSize, 3u);
    });
}

TEST(DataRequests, NullPointersAreNullPtr) {
    RunInHandler([](IMpi &mpi, TId id) {
        EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_METHOD_NAME, nullptr), MRTE_ERROR_NULL_PTR);
        SMethodInfo noBuffer;
        EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_METHOD_NAME, &noBuffer), MRTE_ERROR_NULL_PTR);
        SMethodInfo badArray;
        badArray.lineNumbers.uiSize = 4;  // room claimed, no entries
        EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_METHOD_LINE_NUMBERS, &badArray), MRTE_ERROR_NULL_PTR);
        TId* none = nullptr;
        EXPECT_EQ(mpi.GetCurrentThreadId(id, none), MRTE_ERROR_NULL_PTR);
    });
}

TEST(DataRequests, UnknownClientOrElementIsIllegalId) {
    RunInHandler([](IMpi &mpi, TId id) {
        SObjectInfo info;
        EXPECT_EQ(mpi.GetObjectInfo(id + 5, 500, DR_OBJECT_SIZE, &info), MRTE_ERROR_ILLEGAL_ID);
        EXPECT_EQ(mpi.GetObjectInfo(id, 999999, DR_OBJECT_SIZE, &info), MRTE_ERROR_ILLEGAL_ID);
        char name[32];
        SMethodInfo m;
        m.szMethodName = name;
        EXPECT_EQ(mpi.GetMethodInfo(id, 4242, DR_METHOD_NAME, &m), MRTE_ERROR_ILLEGAL_ID);
    });
}

TEST(DataRequests, ItemTheRequestDoesNotAnswerIsNotSupported) {
    RunInHandler([](IMpi &mpi, TId id) {
        SMethodInfo info;
        EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_THREAD_STATE, &info), MRTE_ERROR_NOT_SUPPORTED);
        SObjectInfo obj;
        EXPECT_EQ(mpi.GetObjectInfo(id, 500, DR_OBJECT_SIZE | DR_METHOD_NAME, &obj), MRTE_ERROR_NOT_SUPPORTED);
    });
}

TEST(DataRequests, RequestBeforeVmInitIsPhaseFailure) {
    const char trace[] = R"(
{"event":"ThreadStart","thread":1,"name":"main"}
{"event":"ClassLoad","thread":1,"class":10,"name":"A"}
{"event":"NewMethod","method":100,"class":10,"name":"m"}
{"event":"EcCustomCommand","thread":1,"id":1}
{"event":"VmInit","thread":1}
)";
    bool ran = false;
    RunInHandler(
        [&](IMpi &mpi, TId id) {
            ran = true;
            char name[16];
            SMethodInfo info;
            info.szMethodName = name;
            EXPECT_EQ(mpi.GetMethodInfo(id, 100, DR_METHOD_NAME, &info), MRTE_ERROR_PHASE_FAILURE);
            EXPECT_EQ(mpi.RunGC(id), MRTE_ERROR_PHASE_FAILURE);
        },
        trace);
    EXPECT_TRUE(ran);
}

TEST(DataRequests, GetThreadInfoGivesNameGroupParentStateAndStackInnermostFirst) {
    RunInHandler([](IMpi &mpi, TId id) {
        char name[32], group[32];
        SStackEntry frames[4];
        SThreadInfo info;
        info.szName = name;
        info.uiNameSize = sizeof name;
        info.szGroupName = group;
        info.uiGroupNameSize = sizeof group;
        info.stackTrace.entries = frames;
        info.stackTrace.uiSize = 4;
        const BitSet items = DR_THREAD_NAME | DR_THREAD_GROUP | DR_THREAD_PARENT_ID | DR_THREAD_STATE |
                             DR_VM_CALL_STACK | DR_OBJECT_ID;
        ASSERT_EQ(mpi.GetThreadInfo(id, 2, items, &info), MRTE_RESULT_OK);
        EXPECT_STREQ(name, "worker-7");
        EXPECT_STREQ(group, "pool");
        EXPECT_EQ(info.parentThreadId, 1u);
        EXPECT_EQ(info.threadObjectId, 77u);
        EXPECT_EQ(info.state, TS_RUNNING);
        ASSERT_EQ(info.stackTrace.uiActualSize, 1u);
        EXPECT_EQ(frames[0].methodId, 110u);

        SThreadInfo mainInfo;
        mainInfo.stackTrace.entries = frames;
        mainInfo.stackTrace.uiSize = 4;
        ASSERT_EQ(mpi.GetThreadInfo(id, 1, DR_VM_CALL_STACK, &mainInfo), MRTE_RESULT_OK);
        ASSERT_EQ(mainInfo.stackTrace.uiActualSize, 2u);
        EXPECT_EQ(frames[0].methodId, 101u) << "innermost first";
        EXPECT_EQ(frames[0].uiLocation, ~0u) << "innermost frame: location unknown";
        EXPECT_EQ(frames[0].uiLineNumber, 0u);
        EXPECT_EQ(frames[1].methodId, 100u);
        EXPECT_EQ(frames[1].uiLocation, 5u) << "the call site the trace recorded";
        EXPECT_EQ(frames[1].uiLineNumber, 21u);
        // A buffer of one frame: the innermost frame, the whole depth, BUFFER_TOO_SHORT
        // (the provider collects only what the buffer holds and says the depth).
        SStackEntry one[1] = {};
        SThreadInfo shortInfo;
        shortInfo.stackTrace.entries = one;
        shortInfo.stackTrace.uiSize = 1;
        EXPECT_EQ(mpi.GetThreadInfo(id, 1, DR_VM_CALL_STACK, &shortInfo), MRTE_ERROR_BUFFER_TOO_SHORT);
        EXPECT_EQ(shortInfo.stackTrace.uiActualSize, 2u);
        EXPECT_EQ(one[0].methodId, 101u);
        // Main has no parent: PARTIAL_INFO, the rest valid.
        EXPECT_EQ(mpi.GetThreadInfo(id, 1, DR_VM_CALL_STACK | DR_THREAD_PARENT_ID, &mainInfo),
                  MRTE_ERROR_PARTIAL_INFO);
        EXPECT_EQ(mainInfo.validData, DR_VM_CALL_STACK);
    });
}

TEST(DataRequests, GetAllThreadsInfoListsLiveThreadsAndSaysHowManyWhenShort) {
    RunInHandler([](IMpi &mpi, TId id) {
        SThreadInfoArray none;
        EXPECT_EQ(mpi.GetAllThreadsInfo(id, 0, DR_THREAD_NAME, &none), MRTE_ERROR_BUFFER_TOO_SHORT);
        EXPECT_EQ(none.uiActualSize, 2u);

        char names[2][32];
        SStackEntry frames[2][8];
        SThreadInfoArrayEntry entries[2];
        for (int i = 0; i < 2; ++i) {
            entries[i].threadInfo.szName = names[i];
            entries[i].threadInfo.uiNameSize = 32;
            entries[i].threadInfo.stackTrace.entries = frames[i];
            entries[i].threadInfo.stackTrace.uiSize = 8;
        }
        SThreadInfoArray all;
        all.entries = entries;
        all.uiSize = 2;
        ASSERT_EQ(mpi.GetAllThreadsInfo(id, 1, DR_THREAD_NAME | DR_VM_CALL_STACK, &all), MRTE_RESULT_OK);
        EXPECT_EQ(all.uiActualSize, 2u);
        EXPECT_EQ(entries[0].threadId, 1u);
        EXPECT_STREQ(names[0], "main");
        EXPECT_EQ(entries[0].threadInfo.stackTrace.uiActualSize, 1u) << "bounded by uiMaxStackDepth";
        EXPECT_EQ(frames[0][0].methodId, 101u);
        EXPECT_STREQ(names[1], "worker-7");

        // Depth 0: each stack bounded by its own buffer, not an error.
        entries[0].threadInfo.stackTrace.uiSize = 1;
        ASSERT_EQ(mpi.GetAllThreadsInfo(id, 0, DR_VM_CALL_STACK, &all), MRTE_RESULT_OK);
        EXPECT_EQ(entries[0].threadInfo.stackTrace.uiActualSize, 1u);
        EXPECT_EQ(frames[0][0].methodId, 101u);
    });
}

TEST(DataRequests, ObjectInfoClassInfoReferencesAndCompiledCode) {
    RunInHandler([](IMpi &mpi, TId id) {
        SObjectInfo obj;
        ASSERT_EQ(mpi.GetObjectInfo(id, 501, DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO, &obj), MRTE_RESULT_OK);
        EXPECT_EQ(obj.classId, 10u);
        EXPECT_EQ(obj.uiObjectSize, 16u);
        EXPECT_EQ(obj.arrayInfo.arrayType, OAT_INT);
        EXPECT_EQ(obj.arrayInfo.uiNumElements, 3u);

        TId methods[4];
        SClassInfo cls;
        cls.methods.entries = methods;
        cls.methods.uiSize = 4;
        ASSERT_EQ(mpi.GetClassInfo(id, 10, DR_CLASS_METHODS | DR_MODULE_ID, &cls), MRTE_RESULT_OK);
        ASSERT_EQ(cls.methods.uiActualSize, 2u);
        EXPECT_EQ(methods[0], 100u);
        EXPECT_EQ(cls.moduleId, 1u);

        TId refs[1];
        SObjectReferenceInfo r;
        r.references.entries = refs;
        r.references.uiSize = 1;
        EXPECT_EQ(mpi.GetObjectReferences(id, 500, DR_OBJECT_REFERENCES, &r), MRTE_ERROR_BUFFER_TOO_SHORT);
        EXPECT_EQ(r.references.uiActualSize, 2u);
        EXPECT_EQ(refs[0], 501u);

        SCompiledMethodInfo code;
        ASSERT_EQ(mpi.GetCompiledMethodInfo(id, 4096 + 6, DR_METHOD_ID | DR_METHOD_CODE | DR_LINE_NUMBER, &code),
                  MRTE_RESULT_OK);
        EXPECT_EQ(code.methodId, 100u);
        EXPECT_EQ(code.uiCodeAddress, 4096u);
        EXPECT_EQ(code.uiLocation, 6u);
        EXPECT_EQ(code.uiLineNumber, 21u);
        EXPECT_EQ(mpi.GetCompiledMethodInfo(id, 4096 + 64, DR_METHOD_ID, &code), MRTE_ERROR_ILLEGAL_ID);

        char moduleName[16];
        SModuleInfo mod;
        mod.szModuleName = moduleName;
        mod.uiModuleNameSize = sizeof moduleName;
        ASSERT_EQ(mpi.GetModuleInfo(id, 1, DR_MODULE_NAME, &mod), MRTE_RESULT_OK);
        EXPECT_STREQ(moduleName, "app.jar");
    });
}

TEST(DataRequests, CurrentThreadIsTheThreadOfTheEventBeingHandled) {
    RunInHandler([](IMpi &mpi, TId id) {
        TId thread = 0;
        ASSERT_EQ(mpi.GetCurrentThreadId(id, &thread), MRTE_RESULT_OK);
        EXPECT_EQ(thread, 1u);
        SRuntimeInfo rt;
        ASSERT_EQ(mpi.GetRuntimeInfo(id, &rt), MRTE_RESULT_OK);
        EXPECT_EQ(rt.runtimeType, RT_REPLAY);
        EXPECT_EQ(mpi.SuspendVM(id), MRTE_RESULT_OK);
        EXPECT_EQ(mpi.ResumeVM(id), MRTE_RESULT_OK);
        EXPECT_EQ(mpi.RunGC(id), MRTE_RESULT_OK);
    });
}

}  // namespace
}  // namespace martini::test
