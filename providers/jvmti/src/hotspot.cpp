#include "hotspot.h"

#include <dlfcn.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace martini::jvm::hotspot {

namespace {

// One exported variable of libjvm's; zero when absent.
template <class T>
T Exported(const char *name) {
    const void *p = dlsym(RTLD_DEFAULT, name);
    return p != nullptr ? *static_cast<const T *>(p) : T{};
}

// Where the two tables are and how their entries are laid out, read once.
struct Tables {
    const char *structs = Exported<const char *>("gHotSpotVMStructs");
    std::uint64_t structStride = Exported<std::uint64_t>("gHotSpotVMStructEntryArrayStride");
    std::uint64_t typeAt = Exported<std::uint64_t>("gHotSpotVMStructEntryTypeNameOffset");
    std::uint64_t fieldAt = Exported<std::uint64_t>("gHotSpotVMStructEntryFieldNameOffset");
    std::uint64_t offsetAt = Exported<std::uint64_t>("gHotSpotVMStructEntryOffsetOffset");
    std::uint64_t addressAt = Exported<std::uint64_t>("gHotSpotVMStructEntryAddressOffset");
    const char *types = Exported<const char *>("gHotSpotVMTypes");
    std::uint64_t typeStride = Exported<std::uint64_t>("gHotSpotVMTypeEntryArrayStride");
    std::uint64_t typeNameAt = Exported<std::uint64_t>("gHotSpotVMTypeEntryTypeNameOffset");
    std::uint64_t sizeAt = Exported<std::uint64_t>("gHotSpotVMTypeEntrySizeOffset");
};

const Tables &TheTables() {
    static const Tables tables;
    return tables;
}

template <class T>
T At(const char *entry, std::uint64_t offset) {
    return *reinterpret_cast<const T *>(entry + offset);
}

// A field of a HotSpot type: its offset in an instance, or a static's address.
struct Field {
    std::uint64_t offset = 0;
    std::uintptr_t address = 0;
    bool found = false;
};

Field FindField(const char *type, const char *field) {
    const Tables &t = TheTables();
    if (t.structs == nullptr || t.structStride == 0) return {};
    for (const char *entry = t.structs;; entry += t.structStride) {
        const auto *name = At<const char *>(entry, t.typeAt);
        if (name == nullptr) return {};  // the table's end
        const auto *f = At<const char *>(entry, t.fieldAt);
        if (f != nullptr && std::strcmp(name, type) == 0 && std::strcmp(f, field) == 0) {
            return {At<std::uint64_t>(entry, t.offsetAt), At<std::uintptr_t>(entry, t.addressAt), true};
        }
    }
}

std::uint64_t TypeSize(const char *type) {
    const Tables &t = TheTables();
    if (t.types == nullptr || t.typeStride == 0) return 0;
    for (const char *entry = t.types;; entry += t.typeStride) {
        const auto *name = At<const char *>(entry, t.typeNameAt);
        if (name == nullptr) return 0;
        if (std::strcmp(name, type) == 0) return At<std::uint64_t>(entry, t.sizeAt);
    }
}

// Reads the JVM's memory without trusting the addresses: EFAULT instead of a fault.
// Several reads in one system call (the sampler thread names a compiled frame with a
// few dozen of them); true only when every one was read whole.
pid_t OwnPid() {
    static const pid_t pid = getpid();
    return pid;
}

struct Read {
    std::uintptr_t address;
    void *to;
    std::size_t size;
};

template <std::size_t N>
bool PeekAll(const Read (&reads)[N]) {
    iovec local[N], remote[N];
    std::size_t total = 0;
    for (std::size_t i = 0; i < N; ++i) {
        if (reads[i].address == 0) return false;
        local[i] = {reads[i].to, reads[i].size};
        remote[i] = {reinterpret_cast<void *>(reads[i].address), reads[i].size};
        total += reads[i].size;
    }
    return process_vm_readv(OwnPid(), local, N, remote, N, 0) == static_cast<ssize_t>(total);
}

template <class T>
bool Peek(std::uintptr_t address, T &out) {
    return PeekAll({Read{address, &out, sizeof(T)}});
}

template <class T>
Read Of(std::uintptr_t address, T &out) {
    return {address, &out, sizeof(T)};
}

// The code heaps' layout and the path from a compiled method to its jmethodID.
struct CodeLayout {
    Field heaps, lowBound, highBound;        // CodeCache's statics
    Field arrayLen, arrayData;               // GrowableArray<CodeHeap*>
    Field memory, segmap, log2Segment;       // CodeHeap
    Field vsLow, vsHigh, vsLowBoundary;      // VirtualSpace
    Field blockUsed;                         // HeapBlock::Header::_used (inside HeapBlock::_header)
    Field header;                            // HeapBlock::_header
    std::uint64_t heapBlockSize = 0;
    Field blobName, codeBegin, codeEnd;      // CodeBlob
    Field method;                            // CompiledMethod::_method
    Field constMethod, constants, idnum;     // Method, ConstMethod
    Field poolHolder, jmethodIds;            // ConstantPool, InstanceKlass
    bool ok = false;

    CodeLayout() {
        heaps = FindField("CodeCache", "_heaps");
        lowBound = FindField("CodeCache", "_low_bound");
        highBound = FindField("CodeCache", "_high_bound");
        arrayLen = FindField("GrowableArrayBase", "_len");
        arrayData = FindField("GrowableArray<int>", "_data");
        memory = FindField("CodeHeap", "_memory");
        segmap = FindField("CodeHeap", "_segmap");
        log2Segment = FindField("CodeHeap", "_log2_segment_size");
        vsLow = FindField("VirtualSpace", "_low");
        vsHigh = FindField("VirtualSpace", "_high");
        vsLowBoundary = FindField("VirtualSpace", "_low_boundary");
        header = FindField("HeapBlock", "_header");
        blockUsed = FindField("HeapBlock::Header", "_used");
        heapBlockSize = TypeSize("HeapBlock");
        blobName = FindField("CodeBlob", "_name");
        codeBegin = FindField("CodeBlob", "_code_begin");
        codeEnd = FindField("CodeBlob", "_code_end");
        method = FindField("CompiledMethod", "_method");
        constMethod = FindField("Method", "_constMethod");
        constants = FindField("ConstMethod", "_constants");
        idnum = FindField("ConstMethod", "_method_idnum");
        poolHolder = FindField("ConstantPool", "_pool_holder");
        jmethodIds = FindField("InstanceKlass", "_methods_jmethod_ids");
        ok = heaps.found && lowBound.found && highBound.found && arrayLen.found && arrayData.found && memory.found &&
             segmap.found && log2Segment.found && vsLow.found && vsHigh.found && vsLowBoundary.found &&
             header.found && blockUsed.found && heapBlockSize != 0 && blobName.found && codeBegin.found &&
             codeEnd.found && method.found && constMethod.found && constants.found && idnum.found &&
             poolHolder.found && jmethodIds.found;
    }
};

const CodeLayout &Layout() {
    static const CodeLayout layout;
    return layout;
}

std::atomic<std::uintptr_t> gCodeLow{0}, gCodeHigh{0};

// The start of the block of `heap` that `pc` lies in (its HeapBlock), 0 when `pc` is
// not inside `heap` or lies in free space: CodeHeap::find_block_for, read through Peek.
std::uintptr_t BlockOf(const CodeLayout &l, std::uintptr_t heap, std::uintptr_t pc) {
    std::uintptr_t low = 0, high = 0, lowBoundary = 0, map = 0;
    int log2 = 0;
    if (!PeekAll({Of(heap + l.memory.offset + l.vsLow.offset, low), Of(heap + l.memory.offset + l.vsHigh.offset, high),
                  Of(heap + l.memory.offset + l.vsLowBoundary.offset, lowBoundary),
                  Of(heap + l.segmap.offset + l.vsLow.offset, map), Of(heap + l.log2Segment.offset, log2)})) {
        return 0;
    }
    if (pc < lowBoundary || pc >= high || pc < low || log2 <= 0 || log2 > 20 || map == 0) return 0;
    std::uintptr_t segment = (pc - low) >> log2;
    // Each segment's byte says how many segments back its block starts (0: here;
    // 0xFF: free); large blocks take several hops.
    for (int hops = 0; hops < 1 << 16; ++hops) {
        std::uint8_t back = 0;
        if (!Peek(map + segment, back) || back == 0xFF) return 0;
        if (back == 0) return low + (segment << log2);
        if (back > segment) return 0;
        segment -= back;
    }
    return 0;
}

}  // namespace

bool *BoolFlag(const char *name) {
    const Field flags = FindField("JVMFlag", "flags");
    const Field count = FindField("JVMFlag", "numFlags");
    const Field flagName = FindField("JVMFlag", "_name");
    const Field flagAddress = FindField("JVMFlag", "_addr");
    const std::uint64_t stride = TypeSize("JVMFlag");
    if (!flags.found || !count.found || !flagName.found || !flagAddress.found || stride == 0) return nullptr;
    const auto *table = *reinterpret_cast<const char *const *>(flags.address);
    const auto n = *reinterpret_cast<const std::size_t *>(count.address);
    for (std::size_t i = 0; table != nullptr && i < n; ++i) {
        const char *flag = table + i * stride;
        const auto *fname = At<const char *>(flag, flagName.offset);
        if (fname != nullptr && std::strcmp(fname, name) == 0) return At<bool *>(flag, flagAddress.offset);
    }
    return nullptr;
}

bool FindCodeCache() {
    const CodeLayout &l = Layout();
    if (!l.lowBound.found || !l.highBound.found) return false;
    std::uintptr_t low = 0, high = 0;
    if (!Peek(l.lowBound.address, low) || !Peek(l.highBound.address, high) || low == 0 || high <= low) return false;
    gCodeLow.store(low, std::memory_order_relaxed);
    gCodeHigh.store(high, std::memory_order_release);
    return true;
}

bool InCodeCache(std::uintptr_t pc) {
    const std::uintptr_t high = gCodeHigh.load(std::memory_order_acquire);
    return pc < high && pc >= gCodeLow.load(std::memory_order_relaxed);
}

namespace {

// The code blob (CodeBlob*) in use that `pc` lies in; 0 when none or not readable.
std::uintptr_t BlobAt(const CodeLayout &l, std::uintptr_t pc) {
    if (!l.ok || !InCodeCache(pc)) return 0;
    std::uintptr_t array = 0, data = 0;
    int heaps = 0;
    if (!Peek(l.heaps.address, array) ||
        !PeekAll({Of(array + l.arrayLen.offset, heaps), Of(array + l.arrayData.offset, data)}) || heaps <= 0 ||
        heaps > 16) {
        return 0;
    }
    std::uintptr_t heap[16] = {};
    if (!PeekAll({Read{data, heap, static_cast<std::size_t>(heaps) * sizeof(void *)}})) return 0;
    for (int h = 0; h < heaps; ++h) {
        const std::uintptr_t block = BlockOf(l, heap[h], pc);
        if (block == 0) continue;
        bool used = false;
        if (!Peek(block + l.header.offset + l.blockUsed.offset, used) || !used) return 0;
        return block + l.heapBlockSize;
    }
    return 0;
}

}  // namespace

std::string CodeBlobNameAt(std::uintptr_t pc) {
    const CodeLayout &l = Layout();
    const std::uintptr_t blob = BlobAt(l, pc);
    std::uintptr_t name = 0;
    if (blob == 0 || !Peek(blob + l.blobName.offset, name)) return "";
    char text[48] = {}, shorter[16] = {};  // a name near the end of a mapping: the shorter read
    if (Peek(name, text)) {
        text[sizeof text - 1] = '\0';
        return text;
    }
    if (!Peek(name, shorter)) return "";
    shorter[sizeof shorter - 1] = '\0';
    return shorter;
}

jmethodID CompiledMethodAt(std::uintptr_t pc) {
    const CodeLayout &l = Layout();
    {
        const std::uintptr_t blob = BlobAt(l, pc);
        if (blob == 0) return nullptr;
        // An nmethod (not a stub, the interpreter or an adapter): its name is the
        // literal every nmethod shares, and `pc` is inside its instructions.
        std::uintptr_t name = 0, begin = 0, end = 0, method = 0;
        char text[8] = {};
        if (!PeekAll({Of(blob + l.blobName.offset, name), Of(blob + l.codeBegin.offset, begin),
                      Of(blob + l.codeEnd.offset, end), Of(blob + l.method.offset, method)}) ||
            !Peek(name, text) || std::memcmp(text, "nmethod", 8) != 0 || pc < begin || pc >= end) {
            return nullptr;
        }
        // Method* -> ConstMethod* -> (ConstantPool* -> InstanceKlass*, idnum) -> the
        // class's jmethodID cache, whose slot idnum + 1 points at the Method*.
        std::uintptr_t constMethod = 0, pool = 0, klass = 0, ids = 0, id = 0, target = 0;
        std::uint16_t idnum = 0;
        if (!Peek(method + l.constMethod.offset, constMethod) ||
            !PeekAll({Of(constMethod + l.constants.offset, pool), Of(constMethod + l.idnum.offset, idnum)}) ||
            !Peek(pool + l.poolHolder.offset, klass) || !Peek(klass + l.jmethodIds.offset, ids) || ids == 0) {
            return nullptr;
        }
        std::uintptr_t length = 0;  // slot 0: how many slots follow; read with the slot, checked after
        if (!PeekAll({Of(ids, length), Of(ids + (idnum + 1u) * sizeof(void *), id)}) || idnum >= length ||
            !Peek(id, target) || target != method) {
            return nullptr;
        }
        return reinterpret_cast<jmethodID>(id);
    }
    return nullptr;
}

}  // namespace martini::jvm::hotspot
