// Class-file rewriting for call-graph events: inserts enter/leave probes into the
// methods a caller selects, and keeps the class verifiable. No JVM types: the input is
// the bytes ClassFileLoadHook hands over, the output the bytes to give back.
//
// For a selected method with id N (a method with code, not native or abstract):
//   - at offset 0:                 push N; invokestatic <probes>.enter(I)V
//   - before every *return:        push N; invokestatic <probes>.leave(I)V
//   - a catch-all handler appended after the code, covering all original code:
//                                  push N; invokestatic <probes>.leaveExceptional(I)V; athrow
//     so a method left by an exception reports it from its own bytecode (no JVMTI
//     exception or frame-pop events). Constructors get two handlers: one for the code
//     before the super()/this() call (where `this` is uninitialized, which needs its
//     own stack map frame) and one after it.
// Branch offsets, switch padding, the exception table, StackMapTable (including
// Uninitialized(offset) types), LineNumberTable, LocalVariableTable and
// LocalVariableTypeTable are remapped; `goto` is widened to `goto_w` when a jump no
// longer fits. A method that cannot be rewritten safely (code would exceed 64 KiB, a
// conditional branch would overflow, type annotations on code, an unknown attribute
// inside Code) is left byte-for-byte alone and reported in `skipped`. A class that does
// not parse is returned unchanged with the reason; the caller counts it. Unselected
// methods and every other part of the class are copied unchanged; a class with no
// selected method comes back identical (`changed` false).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace martini::jvm {

inline constexpr std::uint16_t kAccPublic = 0x0001;
inline constexpr std::uint16_t kAccPrivate = 0x0002;
inline constexpr std::uint16_t kAccProtected = 0x0004;
inline constexpr std::uint16_t kAccStatic = 0x0008;
inline constexpr std::uint16_t kAccSynchronized = 0x0020;
inline constexpr std::uint16_t kAccBridge = 0x0040;
inline constexpr std::uint16_t kAccNative = 0x0100;
inline constexpr std::uint16_t kAccInterface = 0x0200;
inline constexpr std::uint16_t kAccAbstract = 0x0400;
inline constexpr std::uint16_t kAccSynthetic = 0x1000;

struct LineEntry {
    std::uint32_t offset;  // bytecode index in the original code
    std::uint32_t line;
};

// What a class declares, as the filters and the data requests need it.
struct MethodDecl {
    std::string name;        // "<init>", "<clinit>", "run"
    std::string descriptor;  // "(ILjava/lang/String;)V"
    std::uint16_t accessFlags = 0;
    bool hasCode = false;    // false for native and abstract methods
    std::vector<LineEntry> lines;
};

struct ClassDecl {
    std::string internalName;  // "java/util/HashMap$Node"
    std::string superName;     // "" for java/lang/Object
    std::uint16_t accessFlags = 0;
    std::uint16_t majorVersion = 0;
    std::string sourceFile;    // SourceFile attribute, "" when absent
    std::vector<MethodDecl> methods;
};

// Where the probes live: a class with three static methods taking the method id.
struct ProbeNames {
    std::string owner = "martini/runtime/Probes";
    std::string enter = "enter";
    std::string leave = "leave";
    std::string leaveExceptional = "leaveExceptional";
};

inline constexpr std::int64_t kNoProbe = -1;

// Called once per method with code; returns the probe id (0 .. 2^31-1) or kNoProbe.
using ProbeSelector = std::function<std::int64_t(const ClassDecl &, const MethodDecl &)>;

struct InstrumentResult {
    bool parsed = false;       // false: `error` says why; `bytes` is empty
    bool changed = false;      // true: `bytes` holds the rewritten class
    std::vector<std::uint8_t> bytes;
    std::string error;
    ClassDecl decl;
    std::vector<std::string> skipped;  // "name descriptor: reason" per method left alone
    unsigned instrumented = 0;         // methods that got probes
};

// Parses the class and declares what it has (no rewriting).
InstrumentResult ParseClass(std::span<const std::uint8_t> classBytes);

// Parses, asks `select` about each method with code, and rewrites the chosen ones.
InstrumentResult InstrumentClass(std::span<const std::uint8_t> classBytes, const ProbeSelector &select,
                                 const ProbeNames &probes = {});

}  // namespace martini::jvm
