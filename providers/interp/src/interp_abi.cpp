// The C functions of martini/interp.h: argument checks, phase checks, error messages,
// and no exception ever crossing into the interpreter's C code.
#include "interp_provider.h"
#include "martini/core/signals.h"
#include "martini/interp.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

using martini::interp::InterpProvider;
using martini::interp::ThreadRecord;

struct martini_interp {
    explicit martini_interp(const martini_config &c)
        : provider(c.runtime_name ? c.runtime_name : "interpreter", c.runtime_version ? c.runtime_version : "") {}
    InterpProvider provider;
    bool endsOnSignals = false;  // martini_interp_end_on_signals
};

namespace {

// A plain buffer (no constructor, no destructor): an access needs no TLS init guard,
// and initial-exec makes it the thread pointer plus an offset.
constexpr std::size_t kErrorSize = 1024;
thread_local char tLastError[kErrorSize] __attribute__((tls_model("initial-exec")));
// At most one instance at a time: clients are process-wide (their global state, their
// output files), as with one JVM per process.
std::atomic<martini_interp *> gInstance{nullptr};

martini_status Fail(const char *function, martini_status status, const std::string &why) {
    std::snprintf(tLastError, kErrorSize, "%s: %s", function, why.c_str());
    return status;
}

martini_status Ok() {
    tLastError[0] = '\0';
    return MARTINI_OK;
}

// Runs `body` (returning a status and filling `why` on failure) with exceptions turned
// into MARTINI_E_INTERNAL.
template <class Body>
martini_status Guarded(const char *function, Body &&body) noexcept {
    try {
        std::string why;
        const martini_status s = body(why);
        return s == MARTINI_OK ? Ok() : Fail(function, s, why);
    } catch (const std::bad_alloc &) {
        return Fail(function, MARTINI_E_INTERNAL, "out of memory; nothing was changed");
    } catch (const std::exception &e) {
        return Fail(function, MARTINI_E_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return Fail(function, MARTINI_E_INTERNAL, "internal error of an unknown kind");
    }
}

martini_status CheckLive(martini_interp *interp, std::string &why) {
    if (interp == nullptr) {
        why = "the interpreter handle is NULL";
        return MARTINI_E_NULL;
    }
    if (!interp->provider.Live()) {
        why = "the run has ended (martini_interp_shutdown was called); the event was dropped";
        return MARTINI_E_PHASE;
    }
    return MARTINI_OK;
}

// A line table from the caller: present when counted, offsets strictly increasing and,
// for generated code, inside it (codeSize 0: no bound).
martini_status ReadLineTable(const martini_line *lines, size_t count, std::uint64_t codeSize,
                             std::vector<Martini::MPI::SLineNumberTableEntry> &out, std::string &why) {
    if (count != 0 && lines == nullptr) {
        why = "line_count is " + std::to_string(count) + " but lines is NULL";
        return MARTINI_E_NULL;
    }
    out.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        if (i > 0 && lines[i].offset <= lines[i - 1].offset) {
            why = "line table row " + std::to_string(i) + " (offset " + std::to_string(lines[i].offset) +
                  ") is not after row " + std::to_string(i - 1) + " (offset " + std::to_string(lines[i - 1].offset) +
                  "): rows must be sorted by offset";
            return MARTINI_E_ARGUMENT;
        }
        if (codeSize != 0 && lines[i].offset >= codeSize) {
            why = "line table row " + std::to_string(i) + " has offset " + std::to_string(lines[i].offset) +
                  ", past the code's size " + std::to_string(codeSize);
            return MARTINI_E_ARGUMENT;
        }
        out.push_back({lines[i].offset, lines[i].line});
    }
    return MARTINI_OK;
}

ThreadRecord *VirtualThread(martini_interp *interp, martini_vthread handle, std::string &why,
                            martini_status &status) {
    if (handle == 0) {
        why = "virtual thread handle 0 is not allowed";
        status = MARTINI_E_ARGUMENT;
        return nullptr;
    }
    ThreadRecord *t = interp->provider.FindVirtualThread(handle);
    if (t == nullptr) {
        why = "virtual thread " + std::to_string(handle) + " was not started (martini_thread_start_vt)";
        status = MARTINI_E_UNKNOWN_ID;
    }
    return t;
}

// The checks every _vt function shares (live, handle not 0, started), then body(thread).
template <class Body>
martini_status OnVirtualThread(const char *function, martini_interp *interp, martini_vthread handle, Body &&body) {
    return Guarded(function, [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        martini_status s = MARTINI_OK;
        ThreadRecord *t = VirtualThread(interp, handle, why, s);
        return t == nullptr ? s : body(*t, why);
    });
}

}  // namespace

extern "C" {

const char *martini_last_error(void) { return tLastError; }

const char *martini_status_name(martini_status status) {
    switch (status) {
        case MARTINI_OK: return "MARTINI_OK";
        case MARTINI_E_NULL: return "MARTINI_E_NULL";
        case MARTINI_E_ARGUMENT: return "MARTINI_E_ARGUMENT";
        case MARTINI_E_UNKNOWN_ID: return "MARTINI_E_UNKNOWN_ID";
        case MARTINI_E_DUPLICATE_ID: return "MARTINI_E_DUPLICATE_ID";
        case MARTINI_E_PHASE: return "MARTINI_E_PHASE";
        case MARTINI_E_STACK: return "MARTINI_E_STACK";
        case MARTINI_E_VERSION: return "MARTINI_E_VERSION";
        case MARTINI_E_CLIENTS: return "MARTINI_E_CLIENTS";
        case MARTINI_E_INTERNAL: return "MARTINI_E_INTERNAL";
    }
    return "(not a martini_status)";
}

martini_status martini_interp_create(const martini_config *config, martini_interp **out) {
    return Guarded("martini_interp_create", [&](std::string &why) {
        if (config == nullptr || out == nullptr) {
            why = config == nullptr ? "config is NULL" : "out is NULL";
            return MARTINI_E_NULL;
        }
        *out = nullptr;
        if (config->abi_version != MARTINI_INTERP_ABI_VERSION) {
            why = "the caller was built against interpreter ABI version " + std::to_string(config->abi_version) +
                  ", this library is version " + std::to_string(MARTINI_INTERP_ABI_VERSION);
            return MARTINI_E_VERSION;
        }
        auto interp = std::make_unique<martini_interp>(*config);
        martini_interp *expected = nullptr;
        if (!gInstance.compare_exchange_strong(expected, interp.get())) {
            why = "another interpreter instance is live in this process; destroy it first";
            return MARTINI_E_PHASE;
        }
        if (std::string err = interp->provider.Start(*config); !err.empty()) {
            gInstance.store(nullptr);
            why = err;
            return MARTINI_E_CLIENTS;
        }
        *out = interp.release();
        return MARTINI_OK;
    });
}

martini_status martini_interp_shutdown(martini_interp *interp) {
    return Guarded("martini_interp_shutdown", [&](std::string &why) {
        if (interp == nullptr) {
            why = "the interpreter handle is NULL";
            return MARTINI_E_NULL;
        }
        interp->provider.Shutdown();
        return MARTINI_OK;
    });
}

martini_status martini_control(martini_interp *interp, const char *command) {
    return Guarded("martini_control", [&](std::string &why) {
        if (interp == nullptr || command == nullptr) {
            why = interp == nullptr ? "the interpreter handle is NULL" : "command is NULL";
            return MARTINI_E_NULL;
        }
        // Words separated by single spaces; "custom ID DATA" keeps the rest as DATA.
        const std::string text = command;
        std::vector<std::string> words;
        std::size_t start = 0;
        while (start <= text.size()) {
            if (words.size() == 2 && words[0] == "custom") {
                words.push_back(text.substr(start));
                break;
            }
            const std::size_t space = text.find(' ', start);
            words.push_back(text.substr(start, space == std::string::npos ? std::string::npos : space - start));
            if (space == std::string::npos) break;
            start = space + 1;
        }
        if (!interp->provider.Live()) {
            why = "the run has ended (martini_interp_shutdown was called)";
            return MARTINI_E_PHASE;
        }
        const martini::core::ControlReply r = interp->provider.Control(words);
        if (r.ok) return MARTINI_OK;
        why = r.message;
        return MARTINI_E_ARGUMENT;
    });
}

martini_status martini_interp_end_on_signals(martini_interp *interp) {
    return Guarded("martini_interp_end_on_signals", [&](std::string &why) {
        if (interp == nullptr) {
            why = "the interpreter handle is NULL";
            return MARTINI_E_NULL;
        }
        why = martini::core::EndRunOnSignals([interp] { interp->provider.Shutdown(); });
        if (!why.empty()) return MARTINI_E_INTERNAL;
        interp->endsOnSignals = true;
        return MARTINI_OK;
    });
}

void martini_interp_destroy(martini_interp *interp) {
    if (interp == nullptr) return;
    // A run ending on a signal right now finishes before the interpreter goes.
    if (interp->endsOnSignals) martini::core::EndRunOnSignals({});
    try {
        interp->provider.Shutdown();
    } catch (...) {
    }
    martini_interp *expected = interp;
    gInstance.compare_exchange_strong(expected, nullptr);
    delete interp;
}

martini_status martini_method_register(martini_interp *interp, martini_method_id method,
                                       const martini_method_info *info) {
    return Guarded("martini_method_register", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        if (info == nullptr || info->name == nullptr) {
            why = info == nullptr ? "info is NULL" : "info->name is NULL";
            return MARTINI_E_NULL;
        }
        if (method == 0) {
            why = "method id 0 is not allowed (method '" + std::string(info->name) + "')";
            return MARTINI_E_ARGUMENT;
        }
        if (info->name[0] == '\0') {
            why = "method " + std::to_string(method) + " has an empty name";
            return MARTINI_E_ARGUMENT;
        }
        std::vector<Martini::MPI::SLineNumberTableEntry> lines;
        if (martini_status s = ReadLineTable(info->lines, info->line_count, 0, lines, why); s != MARTINI_OK) return s;
        return interp->provider.RegisterMethod(method, *info, std::move(lines), why);
    });
}

int martini_method_wanted(martini_interp *interp, martini_method_id method) {
    if (interp == nullptr) return 0;
    const auto *m = interp->provider.FindMethod(method);
    return m != nullptr && m->interest != 0 ? 1 : 0;
}

int martini_wants(martini_interp *interp, unsigned what) {
    if (interp == nullptr) return 0;
    switch (what) {
        case MARTINI_WANTS_CALLS: return interp->provider.CallsWanted() ? 1 : 0;
        case MARTINI_WANTS_COVERAGE: return interp->provider.CoverageWanted() ? 1 : 0;
        default: return 0;
    }
}

int martini_method_covered(martini_interp *interp, martini_method_id method) {
    if (interp == nullptr) return 0;
    const auto *m = interp->provider.FindMethod(method);
    return m != nullptr && m->coverage != 0 ? 1 : 0;
}

martini_status martini_coverage_counters(martini_interp *interp, martini_method_id method, uint64_t **counters,
                                         size_t *count) {
    return Guarded("martini_coverage_counters", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        if (counters == nullptr || count == nullptr) {
            why = counters == nullptr ? "counters is NULL" : "count is NULL";
            return MARTINI_E_NULL;
        }
        const auto *m = interp->provider.FindMethod(method);
        if (m == nullptr) {
            why = "method id " + std::to_string(method) + " was not registered (martini_method_register)";
            return MARTINI_E_UNKNOWN_ID;
        }
        if (m->coverage == 0) {
            why = "no client covers method " + std::to_string(method) + " (" + m->name +
                  "): ask martini_method_covered first";
            return MARTINI_E_ARGUMENT;
        }
        *counters = m->counts.get();
        *count = m->blocks;
        return MARTINI_OK;
    });
}

martini_status martini_bb_count(martini_interp *interp, martini_method_id method, uint32_t offset,
                                uint64_t count) {
    return Guarded("martini_bb_count", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        return interp->provider.BlockCount(method, offset, count, why);
    });
}

martini_status martini_bb_time(martini_interp *interp, uint32_t offset) {
    return Guarded("martini_bb_time", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        return interp->provider.BlockTime(*interp->provider.OsThread(nullptr), offset, why);
    });
}

martini_status martini_bb_time_vt(martini_interp *interp, martini_vthread thread, uint32_t offset) {
    return OnVirtualThread("martini_bb_time_vt", interp, thread, [&](ThreadRecord &t, std::string &why) {
        return interp->provider.BlockTime(t, offset, why);
    });
}

martini_status martini_enter(martini_interp *interp, martini_method_id method, martini_stack_id stack) {
    return Guarded("martini_enter", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        return interp->provider.Enter(*interp->provider.OsThread(nullptr), method, stack, why);
    });
}

martini_status martini_exit(martini_interp *interp, martini_stack_id returned_to) {
    return Guarded("martini_exit", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        return interp->provider.Exit(*interp->provider.OsThread(nullptr), returned_to, why);
    });
}

martini_status martini_enter_vt(martini_interp *interp, martini_vthread thread, martini_method_id method,
                                martini_stack_id stack) {
    return OnVirtualThread("martini_enter_vt", interp, thread, [&](ThreadRecord &t, std::string &why) {
        return interp->provider.Enter(t, method, stack, why);
    });
}

martini_status martini_exit_vt(martini_interp *interp, martini_vthread thread, martini_stack_id returned_to) {
    return OnVirtualThread("martini_exit_vt", interp, thread, [&](ThreadRecord &t, std::string &why) {
        return interp->provider.Exit(t, returned_to, why);
    });
}

martini_status martini_thread_start(martini_interp *interp, const char *name) {
    return Guarded("martini_thread_start", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        ThreadRecord *t = interp->provider.OsThread(name);
        if (name != nullptr && t->name != name) interp->provider.Rename(*t, name);  // announced before
        return MARTINI_OK;
    });
}

martini_status martini_thread_end(martini_interp *interp) {
    return Guarded("martini_thread_end", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        return interp->provider.EndThread(*interp->provider.OsThread(nullptr));
    });
}

martini_status martini_thread_start_vt(martini_interp *interp, martini_vthread thread, const char *name,
                                       martini_vthread parent) {
    return Guarded("martini_thread_start_vt", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        if (thread == 0) {
            why = "virtual thread handle 0 is not allowed";
            return MARTINI_E_ARGUMENT;
        }
        return interp->provider.StartVirtualThread(thread, name, parent, why);
    });
}

martini_status martini_thread_end_vt(martini_interp *interp, martini_vthread thread) {
    return OnVirtualThread("martini_thread_end_vt", interp, thread, [&](ThreadRecord &t, std::string &) {
        return interp->provider.EndThread(t);
    });
}

martini_status martini_thread_set_name_vt(martini_interp *interp, martini_vthread thread, const char *name) {
    return Guarded("martini_thread_set_name_vt", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        if (name == nullptr) {
            why = "name is NULL";
            return MARTINI_E_NULL;
        }
        if (thread == 0) {
            interp->provider.Rename(*interp->provider.OsThread(nullptr), name);
            return MARTINI_OK;
        }
        martini_status s = MARTINI_OK;
        ThreadRecord *t = VirtualThread(interp, thread, why, s);
        if (t != nullptr) interp->provider.Rename(*t, name);
        return s;
    });
}

martini_status martini_code_load(martini_interp *interp, martini_method_id method, const void *address,
                                 size_t size, const martini_line *lines, size_t line_count) {
    return Guarded("martini_code_load", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        if (address == nullptr) {
            why = "address is NULL";
            return MARTINI_E_NULL;
        }
        if (size == 0) {
            why = "code of method " + std::to_string(method) + " has size 0";
            return MARTINI_E_ARGUMENT;
        }
        std::vector<Martini::MPI::SLineNumberTableEntry> table;
        if (martini_status s = ReadLineTable(lines, line_count, size, table, why); s != MARTINI_OK) return s;
        return interp->provider.LoadCode(method, reinterpret_cast<std::uintptr_t>(address), size,
                                         std::move(table), why);
    });
}

martini_status martini_code_unload(martini_interp *interp, const void *address) {
    return Guarded("martini_code_unload", [&](std::string &why) {
        if (martini_status s = CheckLive(interp, why); s != MARTINI_OK) return s;
        if (address == nullptr) {
            why = "address is NULL";
            return MARTINI_E_NULL;
        }
        return interp->provider.UnloadCode(reinterpret_cast<std::uintptr_t>(address), why);
    });
}

}  // extern "C"
