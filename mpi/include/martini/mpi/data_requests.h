// Martini Profiling Interface: data-request structures.
//
// The client allocates every structure and every buffer in it. For each requested
// string item set the char pointer to a buffer and, preferably, its size member to the
// buffer's size in bytes. Size members are in/out: when a string (with its NUL) does
// not fit, Martini writes the truncated, NUL-terminated prefix, sets the size member
// to the size needed, leaves the item out of validData and the call returns
// MRTE_ERROR_BUFFER_TOO_SHORT. A size member left at 0 means the buffer holds
// MPI_LEGACY_STRING_BUFFER_SIZE bytes (MPI 2.0 clients had no size members).
// Arrays follow SArray's rule (base.h): uiSize in, uiActualSize out.
#pragma once

#include "martini/mpi/base.h"

namespace Martini {
namespace MPI {

// GetModuleInfo: DR_MODULE_NAME
struct SModuleInfo {
    BitSet validData = DR_NONE;
    char *szModuleName = nullptr;
    unsigned int uiModuleNameSize = 0;
};

// GetClassInfo: DR_CLASS_NAME, DR_SOURCE_FILE_NAME, DR_MODULE_ID, DR_CLASS_METHODS
struct SClassInfo {
    BitSet validData = DR_NONE;
    char *szClassName = nullptr;
    unsigned int uiClassNameSize = 0;
    char *szSourceFileName = nullptr;
    unsigned int uiSourceFileNameSize = 0;
    TId moduleId = 0;
    SIdArray methods;  // DR_CLASS_METHODS: ids of the methods Martini knows for the class
};

// GetMethodInfo: DR_METHOD_NAME, DR_METHOD_SIGNATURE, DR_CLASS_NAME,
// DR_SOURCE_FILE_NAME, DR_CLASS_ID, DR_MODULE_ID, DR_METHOD_ACCESS_TYPE,
// DR_METHOD_LINE_NUMBERS, DR_METHOD_CODE
struct SMethodInfo {
    BitSet validData = DR_NONE;
    char *szMethodName = nullptr;
    unsigned int uiMethodNameSize = 0;
    char *szMethodSig = nullptr;
    unsigned int uiMethodSigSize = 0;
    char *szClassName = nullptr;
    unsigned int uiClassNameSize = 0;
    char *szSourceFileName = nullptr;
    unsigned int uiSourceFileNameSize = 0;
    TId classId = 0;
    TId moduleId = 0;
    EMethodAccessType methodAccessType = MAT_NONE;
    SLineNumberTable lineNumbers;
    UIOP uiCodeAddress = 0;  // DR_METHOD_CODE: compiled code, when there is one
    unsigned int uiCodeSize = 0;
};

// GetObjectInfo: DR_CLASS_ID, DR_OBJECT_SIZE, DR_ARRAY_INFO
struct SObjectInfo {
    BitSet validData = DR_NONE;
    TId classId = 0;
    std::uint64_t uiObjectSize = 0;
    SArrayInfo arrayInfo;
};

// GetThreadInfo / GetAllThreadsInfo: DR_THREAD_NAME, DR_THREAD_GROUP,
// DR_THREAD_PARENT_ID, DR_THREAD_STATE, DR_VM_CALL_STACK, DR_THREAD_CPU_TIME,
// DR_OBJECT_ID
struct SThreadInfo {
    BitSet validData = DR_NONE;
    char *szName = nullptr;
    unsigned int uiNameSize = 0;
    char *szGroupName = nullptr;
    unsigned int uiGroupNameSize = 0;
    TId parentThreadId = 0;
    EThreadState state = TS_UNKNOWN;
    SStackTrace stackTrace;  // innermost frame first
    std::uint64_t uiCpuTime = 0;  // ns
    TId threadObjectId = 0;
};

struct SThreadInfoArrayEntry {
    TId threadId = 0;
    SThreadInfo threadInfo;  // the client prepares each entry's buffers
};
typedef SArray<SThreadInfoArrayEntry> SThreadInfoArray;

// GetObjectReferences: DR_OBJECT_REFERENCES
struct SObjectReferenceInfo {
    BitSet validData = DR_NONE;
    SIdArray references;
};

// GetCompiledMethodInfo: DR_METHOD_ID, DR_METHOD_CODE, DR_LINE_NUMBER
struct SCompiledMethodInfo {
    BitSet validData = DR_NONE;
    TId methodId = 0;
    UIOP uiCodeAddress = 0;  // start of the compiled method
    unsigned int uiCodeSize = 0;
    unsigned int uiLocation = 0;    // code offset (bytecode index) of the address
    unsigned int uiLineNumber = 0;  // DR_LINE_NUMBER
};

// GetCoverageInfo: DR_COVERAGE_BLOCKS, DR_COVERAGE_BRANCHES, DR_COVERAGE_TIME,
// DR_COVERAGE_CALLS. entries: the blocks in offset order (DR_COVERAGE_BLOCKS), then the
// branch outcomes in offset and outcome order (DR_COVERAGE_BRANCHES), then the
// method's entries (CEK_ENTRY, with DR_COVERAGE_BLOCKS or DR_COVERAGE_CALLS, where the
// runtime counts calls apart). DR_COVERAGE_TIME fills the blocks' uiTimeNs and needs
// DR_COVERAGE_BLOCKS.
struct SCoverageInfo {
    BitSet validData = DR_NONE;
    SCoverageEntryArray entries;
};

enum ERuntimeType {
    RT_UNKNOWN = 0,
    RT_JVM,
    RT_MONO,
    RT_INTERPRETER,  // a runtime driving Martini through the C ABI
    RT_REPLAY,       // martini-replay playing a recorded trace
};

struct SRuntimeInfo {
    ERuntimeType runtimeType = RT_UNKNOWN;
    char szRuntimeName[64] = {};      // "OpenJDK 64-Bit Server VM", "Mono", "replay"
    char szRuntimeVersion[128] = {};  // the runtime's own version string
    unsigned int uiMpiVersion = 0;    // MARTINI_MPI_VERSION of this Martini
};

}  // namespace MPI
}  // namespace Martini
