// Names through MPI data requests, with the buffer growing Martini asks for
// (MRTE_ERROR_BUFFER_TOO_SHORT writes back the sizes needed). For clients; written
// against mpi/ only. Not for event paths: call it when writing results.
#pragma once

#include <MpiAPI.h>

#include <algorithm>
#include <string>
#include <vector>

namespace martini::clients {

struct MethodNames {
    bool ok = false;  // false when the runtime could not name the method at all
    std::string className, method, signature, sourceFile;
};

inline MethodNames GetMethodNames(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId, Martini::MPI::TId methodId) {
    using namespace Martini::MPI;
    std::vector<char> name(64), sig(128), cls(128), file(64);
    MethodNames out;
    for (int attempt = 0; attempt < 4; ++attempt) {
        SMethodInfo info;
        info.szMethodName = name.data();
        info.uiMethodNameSize = static_cast<unsigned>(name.size());
        info.szMethodSig = sig.data();
        info.uiMethodSigSize = static_cast<unsigned>(sig.size());
        info.szClassName = cls.data();
        info.uiClassNameSize = static_cast<unsigned>(cls.size());
        info.szSourceFileName = file.data();
        info.uiSourceFileNameSize = static_cast<unsigned>(file.size());
        const TResult r = mpi.GetMethodInfo(clientId, methodId,
                                            DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_CLASS_NAME | DR_SOURCE_FILE_NAME,
                                            &info);
        if (r == MRTE_ERROR_BUFFER_TOO_SHORT) {
            name.resize(std::max<std::size_t>(name.size(), info.uiMethodNameSize));
            sig.resize(std::max<std::size_t>(sig.size(), info.uiMethodSigSize));
            cls.resize(std::max<std::size_t>(cls.size(), info.uiClassNameSize));
            file.resize(std::max<std::size_t>(file.size(), info.uiSourceFileNameSize));
            continue;
        }
        if (r != MRTE_RESULT_OK && r != MRTE_ERROR_PARTIAL_INFO) break;
        if (info.validData & DR_CLASS_NAME) out.className = cls.data();
        if (info.validData & DR_METHOD_NAME) out.method = name.data();
        if (info.validData & DR_METHOD_SIGNATURE) out.signature = sig.data();
        if (info.validData & DR_SOURCE_FILE_NAME) out.sourceFile = file.data();
        out.ok = (info.validData & DR_METHOD_NAME) != 0;
        break;
    }
    return out;
}

// The method's first source line: the lowest line of its line table
// (DR_METHOD_LINE_NUMBERS), 0 when the runtime gives none.
inline int GetMethodFirstLine(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId, Martini::MPI::TId methodId) {
    using namespace Martini::MPI;
    std::vector<SLineNumberTableEntry> table(64);
    for (int attempt = 0; attempt < 3; ++attempt) {
        SMethodInfo info;
        info.lineNumbers.entries = table.data();
        info.lineNumbers.uiSize = static_cast<unsigned>(table.size());
        const TResult r = mpi.GetMethodInfo(clientId, methodId, DR_METHOD_LINE_NUMBERS, &info);
        if (r == MRTE_ERROR_BUFFER_TOO_SHORT && info.lineNumbers.uiActualSize > table.size()) {
            table.resize(info.lineNumbers.uiActualSize);
            continue;
        }
        if ((r != MRTE_RESULT_OK && r != MRTE_ERROR_PARTIAL_INFO) || !(info.validData & DR_METHOD_LINE_NUMBERS)) break;
        unsigned first = 0;
        const unsigned n = std::min<unsigned>(info.lineNumbers.uiActualSize, static_cast<unsigned>(table.size()));
        for (unsigned i = 0; i < n; ++i) {
            if (table[i].uiLineNumber != 0 && (first == 0 || table[i].uiLineNumber < first)) first = table[i].uiLineNumber;
        }
        return static_cast<int>(first);
    }
    return 0;
}

inline std::string GetClassName(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId, Martini::MPI::TId classId) {
    using namespace Martini::MPI;
    std::vector<char> name(128);
    for (int attempt = 0; attempt < 3; ++attempt) {
        SClassInfo info;
        info.szClassName = name.data();
        info.uiClassNameSize = static_cast<unsigned>(name.size());
        const TResult r = mpi.GetClassInfo(clientId, classId, DR_CLASS_NAME, &info);
        if (r == MRTE_ERROR_BUFFER_TOO_SHORT) {
            name.resize(std::max<std::size_t>(name.size() * 2, info.uiClassNameSize));
            continue;
        }
        if ((r == MRTE_RESULT_OK || r == MRTE_ERROR_PARTIAL_INFO) && (info.validData & DR_CLASS_NAME)) return name.data();
        break;
    }
    return "";
}

// `initialSize` is the first buffer's size; a short one is grown as Martini reports.
inline std::string GetThreadName(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId, Martini::MPI::TId threadId,
                                 std::size_t initialSize = 64) {
    using namespace Martini::MPI;
    std::vector<char> name(initialSize);
    for (int attempt = 0; attempt < 3; ++attempt) {
        SThreadInfo info;
        info.szName = name.data();
        info.uiNameSize = static_cast<unsigned>(name.size());
        const TResult r = mpi.GetThreadInfo(clientId, threadId, DR_THREAD_NAME, &info);
        if (r == MRTE_ERROR_BUFFER_TOO_SHORT) {
            name.resize(std::max<std::size_t>(name.size() * 2, info.uiNameSize));
            continue;
        }
        if ((r == MRTE_RESULT_OK || r == MRTE_ERROR_PARTIAL_INFO) && (info.validData & DR_THREAD_NAME)) return name.data();
        break;
    }
    return "";
}

// Splits "key=value,key,key=value" options. Returns "" or the first problem.
struct Option {
    std::string key, value;
    bool hasValue = false;
};

inline std::string SplitOptions(const char *text, std::vector<Option> &out) {
    const std::string s = text ? text : "";
    std::size_t start = 0;
    while (start < s.size()) {
        std::size_t end = s.find(',', start);
        if (end == std::string::npos) end = s.size();
        const std::string item = s.substr(start, end - start);
        start = end + 1;
        if (item.empty()) continue;
        Option o;
        const std::size_t eq = item.find('=');
        o.key = item.substr(0, eq);
        if (eq != std::string::npos) {
            o.value = item.substr(eq + 1);
            o.hasValue = true;
        }
        if (o.key.empty()) return "option '" + item + "' has no name before '='";
        out.push_back(std::move(o));
    }
    return "";
}

}  // namespace martini::clients
