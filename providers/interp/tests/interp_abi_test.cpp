// The interpreter C ABI: what a C interpreter's calls become for the clients, and the
// error code (and message) for each kind of bad input.
#include "martini/interp.h"

#include <MpiAPI.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// "m7": built by appending. `"m" + std::to_string(n)` (a one-character literal before a
// temporary string) makes g++ 12 at -O3 report a false -Wrestrict overlap inside
// basic_string::insert (GCC bug 105651), which breaks a release build with -Dwerror=true.
std::string MethodName(martini_method_id n) {
    std::string name = "m";
    name += std::to_string(n);
    return name;
}

// One run of the recorder client: create, the test's calls, destroy, and the lines the
// client wrote at VmShutdown.
class InterpRun {
public:
    // `secondOptions`: a second client (the recorder under another name) with these
    // options after its out=, its lines read with SecondLines().
    explicit InterpRun(const std::string &extraOptions = "", const char *secondOptions = nullptr) {
        out_ = TempFile();
        clients_ = std::string(RECORDER_CLIENT) + "=out=" + out_ + extraOptions;
        if (secondOptions != nullptr) {
            out2_ = TempFile();
            clients_ += std::string(";") + RECORDER_CLIENT_B + "=out=" + out2_ + secondOptions;
        }
        martini_config c{};
        c.abi_version = MARTINI_INTERP_ABI_VERSION;
        c.runtime_name = "test";
        c.clients = clients_.c_str();
        c.output_dir = "/tmp/interp-out";
        status = martini_interp_create(&c, &interp);
    }
    ~InterpRun() {
        martini_interp_destroy(interp);
        std::remove(out_.c_str());
        if (!out2_.empty()) std::remove(out2_.c_str());
    }
    std::vector<std::string> Lines() { return LinesOf(out_); }
    std::vector<std::string> SecondLines() { return LinesOf(out2_); }
    // The lines starting with one of `prefixes`, in order.
    std::vector<std::string> Only(std::initializer_list<const char *> prefixes) {
        std::vector<std::string> kept;
        for (const std::string &l : Lines()) {
            for (const char *p : prefixes) {
                if (l.rfind(p, 0) == 0) {
                    kept.push_back(l);
                    break;
                }
            }
        }
        return kept;
    }
    // A method whose line table has these rows ({offset, line}; none: no line table).
    martini_status MethodWithRows(martini_method_id id, const char *name, std::vector<martini_line> rows) {
        martini_method_info info{};
        info.name = name;
        info.class_name = "tree";
        info.source_file = "tree.lua";
        info.lines = rows.empty() ? nullptr : rows.data();
        info.line_count = rows.size();
        return martini_method_register(interp, id, &info);
    }
    martini_status Method(martini_method_id id, const char *name, const char *cls = "tree") {
        martini_method_info info{};
        info.name = name;
        info.class_name = cls;
        info.source_file = "tree.lua";
        martini_line line{0, static_cast<uint32_t>(id * 10)};
        info.lines = &line;
        info.line_count = 1;
        return martini_method_register(interp, id, &info);
    }

    martini_interp *interp = nullptr;
    martini_status status = MARTINI_E_INTERNAL;

private:
    static std::string TempFile() {
        char name[] = "/tmp/interp-test-XXXXXX";
        const int fd = mkstemp(name);
        if (fd >= 0) close(fd);
        return name;
    }
    // The run ended (VmShutdown: the clients wrote their files), then the file's lines.
    std::vector<std::string> LinesOf(const std::string &path) {
        martini_interp_destroy(interp);
        interp = nullptr;
        std::vector<std::string> lines;
        std::ifstream in(path);
        for (std::string l; std::getline(in, l);) lines.push_back(l);
        return lines;
    }

    std::string out_, out2_;
    std::string clients_;
};

using Lines = std::vector<std::string>;

TEST(InterpAbi, CallsThreadsAndClassesReachTheClients) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.Method(1, "insert"), MARTINI_OK);
    ASSERT_EQ(r.Method(2, "balance"), MARTINI_OK);
    EXPECT_EQ(martini_method_wanted(r.interp, 1), 1);
    ASSERT_EQ(martini_enter(r.interp, 1, 100), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 2, 101), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, 100), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    // The output directory before VmInit, as on every provider (core::Run::GoLive).
    EXPECT_EQ(r.Lines(), (Lines{"outdir /tmp/interp-out", "init 1", "tstart 1 main 0", "class 1 tree",
                                "method 1 insert tree 10", "method 2 balance tree 20", "enter 1 1", "stack 1 1",
                                "enter 2 1", "stack 1 2,1", "leave 2 1", "leave 1 1", "shutdown"}));
}

TEST(InterpAbi, ControlCommandsReachTheClientsAsExternalControlEvents) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.Method(1, "insert"), MARTINI_OK);
    for (const char *command : {"pause", "resume", "sample phase-1", "pause-thread main", "resume-thread 1",
                                "custom 300 hello world", "output /tmp/interp-out2"}) {
        EXPECT_EQ(martini_control(r.interp, command), MARTINI_OK) << command << ": " << martini_last_error();
    }
    EXPECT_EQ(martini_control(r.interp, "fly"), MARTINI_E_ARGUMENT);
    EXPECT_NE(std::string(martini_last_error()).find("martini_control: unknown command 'fly'"), std::string::npos)
        << martini_last_error();
    EXPECT_EQ(martini_control(r.interp, "pause-thread nosuch"), MARTINI_E_ARGUMENT);
    EXPECT_NE(std::string(martini_last_error()).find("no live thread has the id or name 'nosuch' (threads: main (1))"),
              std::string::npos)
        << martini_last_error();
    EXPECT_EQ(martini_control(r.interp, "custom 7 x"), MARTINI_E_ARGUMENT);
    EXPECT_EQ(martini_control(r.interp, "sample a/b"), MARTINI_E_ARGUMENT);
    EXPECT_EQ(martini_control(r.interp, nullptr), MARTINI_E_NULL);
    // Terminate: the clients are done; the interpreter's calls go on and reach no one.
    ASSERT_EQ(martini_control(r.interp, "terminate"), MARTINI_OK) << martini_last_error();
    EXPECT_EQ(martini_enter(r.interp, 1, 100), MARTINI_OK) << martini_last_error();
    EXPECT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    EXPECT_EQ(r.Only({"ec", "custom", "outdir", "detach", "shutdown", "enter"}),
              (Lines{"outdir /tmp/interp-out", "ecstop", "ecstart", "custom 1 phase-1", "custom 2 1", "custom 3 1",
                     "custom 300 hello world", "outdir /tmp/interp-out2", "detach", "shutdown"}));
}

// What `martini control PID ...` does: a line into the process's FIFO, the answer read
// from a reply FIFO of its own.
std::string SendThroughFifo(const std::string &fields) {
    char dir[] = "/tmp/interp-control-XXXXXX";
    if (mkdtemp(dir) == nullptr) return "mkdtemp failed";
    const std::string reply = std::string(dir) + "/reply";
    std::string answer;
    if (mkfifo(reply.c_str(), 0600) == 0) {
        const int in = open(reply.c_str(), O_RDWR | O_NONBLOCK);
        std::string path = "/tmp/martini-";
        path += std::to_string(getpid());
        path += ".ctl";
        const int out = open(path.c_str(), O_WRONLY | O_NONBLOCK);
        std::string line = reply;
        line += '\t';
        line += fields;
        line += '\n';
        if (out >= 0 && write(out, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
            for (int i = 0; i < 500 && answer.find('\n') == std::string::npos; ++i) {
                pollfd p{in, POLLIN, 0};
                if (poll(&p, 1, 10) <= 0) continue;
                char buf[256];
                const ssize_t n = read(in, buf, sizeof buf);
                if (n > 0) answer.append(buf, static_cast<std::size_t>(n));
            }
        } else {
            answer = "cannot write to " + path;
        }
        if (out >= 0) close(out);
        if (in >= 0) close(in);
    }
    unlink(reply.c_str());
    rmdir(dir);
    return answer;
}

TEST(InterpAbi, TheControlFifoTakesCommandsFromOutside) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    EXPECT_EQ(SendThroughFifo("sample\tfrom-outside"), "ok sample from-outside\n");
    EXPECT_EQ(SendThroughFifo("pause-thread\tnosuch"),
              "error: no live thread has the id or name 'nosuch' (threads: main (1))\n");
    EXPECT_EQ(SendThroughFifo("terminate"), "ok terminate\n");
    // Terminate ended the channel: nobody reads the FIFO any more.
    EXPECT_EQ(SendThroughFifo("pause").rfind("cannot write to /tmp/martini-", 0), 0u);
    EXPECT_EQ(r.Only({"custom", "detach", "shutdown"}), (Lines{"custom 1 from-outside", "detach", "shutdown"}));
}

TEST(InterpAbi, ExitUnwindsEveryFrameAboveTheFrameReturnedTo) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    for (martini_method_id m = 1; m <= 4; ++m) ASSERT_EQ(r.Method(m, MethodName(m).c_str()), MARTINI_OK);
    // m1 > m2 > m3 > m4, then an exception unwinds m4 and m3 without exits: the return
    // from m2 to m1 names m1's frame.
    for (martini_method_id m = 1; m <= 4; ++m) ASSERT_EQ(martini_enter(r.interp, m, 10 * m), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, 10), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    EXPECT_EQ(r.Only({"enter", "leave"}), (Lines{"enter 1 1", "enter 2 1", "enter 3 1", "enter 4 1", "leave 4 1",
                                                  "leave 3 1", "leave 2 1", "leave 1 1"}));
}

TEST(InterpAbi, EnterWithTheInnermostFramesIdIsATailCall) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    for (martini_method_id m = 1; m <= 3; ++m) ASSERT_EQ(r.Method(m, MethodName(m).c_str()), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 1, 7), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 2, 8), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 3, 8), MARTINI_OK);  // m2 tail-calls m3 in its frame
    ASSERT_EQ(martini_exit(r.interp, 7), MARTINI_OK);
    EXPECT_EQ(r.Only({"enter", "leave", "stack"}),
              (Lines{"enter 1 1", "stack 1 1", "enter 2 1", "stack 1 2,1", "leave 2 1", "enter 3 1", "stack 1 3,1",
                     "leave 3 1"}));
}

TEST(InterpAbi, AFilteredOutMethodRaisesNothingButIsUnwound) {
    InterpRun r(",skip=helper");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.Method(1, "main"), MARTINI_OK);
    ASSERT_EQ(r.Method(2, "helper"), MARTINI_OK);
    ASSERT_EQ(r.Method(3, "work"), MARTINI_OK);
    EXPECT_EQ(martini_method_wanted(r.interp, 2), 0);
    EXPECT_EQ(martini_method_wanted(r.interp, 3), 1);
    ASSERT_EQ(martini_enter(r.interp, 1, 1), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 2, 2), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 3, 3), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, 2), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, 1), MARTINI_OK);  // helper's frame is known though silent
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    EXPECT_EQ(r.Only({"enter", "leave"}), (Lines{"enter 1 1", "enter 3 1", "leave 3 1", "leave 1 1"}));
}

TEST(InterpAbi, VirtualThreadsHaveTheirOwnStacksAndHandlesCanBeReused) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.Method(1, "producer"), MARTINI_OK);
    ASSERT_EQ(r.Method(2, "consumer"), MARTINI_OK);
    ASSERT_EQ(martini_thread_start_vt(r.interp, 0xA, "co-a", 0), MARTINI_OK);
    ASSERT_EQ(martini_thread_start_vt(r.interp, 0xB, nullptr, 0xA), MARTINI_OK);
    ASSERT_EQ(martini_enter_vt(r.interp, 0xA, 1, 1), MARTINI_OK);
    ASSERT_EQ(martini_enter_vt(r.interp, 0xB, 2, 1), MARTINI_OK);  // the same stack id, another thread
    ASSERT_EQ(martini_exit_vt(r.interp, 0xA, MARTINI_STACK_BASE), MARTINI_OK);
    ASSERT_EQ(martini_thread_set_name_vt(r.interp, 0xB, "co-b"), MARTINI_OK);
    ASSERT_EQ(martini_thread_end_vt(r.interp, 0xB), MARTINI_OK);  // its open frame exits first
    ASSERT_EQ(martini_thread_end_vt(r.interp, 0xA), MARTINI_OK);
    ASSERT_EQ(martini_thread_start_vt(r.interp, 0xA, "co-a-again", 0), MARTINI_OK);
    // Lookups are cached per OS thread: an ended thread is not found from the cache, and
    // a reused handle finds its new thread.
    ASSERT_EQ(martini_enter_vt(r.interp, 0xA, 1, 1), MARTINI_OK);  // last looked up: the ended 0xA
    EXPECT_EQ(martini_enter_vt(r.interp, 0xB, 2, 1), MARTINI_E_UNKNOWN_ID);
    EXPECT_EQ(r.Only({"tstart", "tend", "enter", "leave"}),
              (Lines{"tstart 1 main 0", "tstart 2 co-a 1", "tstart 3 vthread-3 2", "enter 1 2", "enter 2 3",
                     "leave 1 2", "leave 2 3", "tend 3", "tend 2", "tstart 4 co-a-again 1", "enter 1 4"}));
}

TEST(InterpAbi, OsThreadsAreAnnouncedOnFirstUseOrByName) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.Method(1, "run"), MARTINI_OK);
    std::thread named([&] {
        EXPECT_EQ(martini_thread_start(r.interp, "worker"), MARTINI_OK);
        EXPECT_EQ(martini_enter(r.interp, 1, 1), MARTINI_OK);
        EXPECT_EQ(martini_thread_end(r.interp), MARTINI_OK);
    });
    named.join();
    std::thread anonymous([&] {
        EXPECT_EQ(martini_enter(r.interp, 1, 1), MARTINI_OK);
        EXPECT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    });
    anonymous.join();
    EXPECT_EQ(r.Only({"tstart", "tend", "enter", "leave"}),
              (Lines{"tstart 1 main 0", "tstart 2 worker 0", "enter 1 2", "leave 1 2", "tend 2",
                     "tstart 3 thread-3 0", "enter 1 3", "leave 1 3"}));
}

TEST(InterpAbi, ThreadsRegisterAndCallAtTheSameTime) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    constexpr int kThreads = 4, kMethods = 200;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&r, t] {
            for (int i = 0; i < kMethods; ++i) {
                const martini_method_id id = 1 + t * kMethods + i;
                const std::string name = MethodName(id);
                // Every thread adds methods to one shared class and to a class of its own.
                ASSERT_EQ(r.Method(id, name.c_str(), i % 2 ? "shared" : ("own" + std::to_string(t)).c_str()), MARTINI_OK)
                    << martini_last_error();
                ASSERT_EQ(martini_enter(r.interp, id, 1), MARTINI_OK);
                ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
            }
        });
    }
    for (auto &t : threads) t.join();
    int methods = 0, classes = 0, enters = 0, leaves = 0, starts = 0;
    for (const std::string &l : r.Lines()) {
        methods += l.rfind("method ", 0) == 0;
        classes += l.rfind("class ", 0) == 0;
        enters += l.rfind("enter ", 0) == 0;
        leaves += l.rfind("leave ", 0) == 0;
        starts += l.rfind("tstart ", 0) == 0;
    }
    EXPECT_EQ(methods, kThreads * kMethods);
    EXPECT_EQ(classes, kThreads + 1);
    EXPECT_EQ(enters, kThreads * kMethods);
    EXPECT_EQ(leaves, kThreads * kMethods);
    EXPECT_EQ(starts, kThreads + 1);
}

TEST(InterpAbi, GeneratedCodeIsReportedWithItsSize) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.Method(1, "hot"), MARTINI_OK);
    static unsigned char code[64];
    const martini_line lines[] = {{0, 3}, {16, 4}};
    ASSERT_EQ(martini_code_load(r.interp, 1, code, sizeof code, lines, 2), MARTINI_OK);
    EXPECT_EQ(martini_code_load(r.interp, 1, code + 32, 8, nullptr, 0), MARTINI_E_ARGUMENT) << "overlaps";
    EXPECT_NE(std::string(martini_last_error()).find("overlaps the code of method 1"), std::string::npos)
        << martini_last_error();
    ASSERT_EQ(martini_code_unload(r.interp, code), MARTINI_OK);
    EXPECT_EQ(martini_code_unload(r.interp, code), MARTINI_E_UNKNOWN_ID);
    EXPECT_EQ(r.Only({"jit", "unjit"}), (Lines{"jit 1 64", "unjit 1 64"}));
}

TEST(InterpAbi, AnAddressInGeneratedCodeMapsToItsMethodAndLine) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.Method(1, "hot"), MARTINI_OK);
    static unsigned char code[64];
    const martini_line lines[] = {{0, 3}, {16, 4}, {32, 9}};
    ASSERT_EQ(martini_code_load(r.interp, 1, code, sizeof code, lines, 3), MARTINI_OK);
    // The client asks for code + 16: offset 16, line 4; GetMethodInfo gives the size.
    EXPECT_EQ(r.Only({"codeinfo"}), (Lines{"codeinfo 1 16 4 64"}));
}

// Method ids need not be small: an interpreter may use addresses.
TEST(InterpAbi, LargeMethodIdsWork) {
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    const martini_method_id big = 0x7f12'3456'7000;
    ASSERT_EQ(r.Method(big, "at_an_address"), MARTINI_OK);
    EXPECT_EQ(martini_method_wanted(r.interp, big), 1);
    EXPECT_EQ(martini_method_wanted(r.interp, big + 8), 0);
    EXPECT_EQ(martini_enter(r.interp, big + 8, 1), MARTINI_E_UNKNOWN_ID);
    ASSERT_EQ(martini_enter(r.interp, big, 1), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    const std::string id = std::to_string(big);
    EXPECT_EQ(r.Only({"enter", "leave"}), (Lines{"enter " + id + " 1", "leave " + id + " 1"}));
}

TEST(InterpAbi, ThreadsCanBeRenamed) {
    InterpRun r(",names");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(martini_thread_start_vt(r.interp, 5, "co", 0), MARTINI_OK);
    ASSERT_EQ(martini_thread_set_name_vt(r.interp, 5, "co-renamed"), MARTINI_OK);
    ASSERT_EQ(martini_thread_end_vt(r.interp, 5), MARTINI_OK);
    std::thread worker([&] {
        EXPECT_EQ(martini_thread_start(r.interp, "worker"), MARTINI_OK);
        EXPECT_EQ(martini_thread_set_name_vt(r.interp, 0, "worker-renamed"), MARTINI_OK);  // 0: this OS thread
        EXPECT_EQ(martini_thread_end(r.interp), MARTINI_OK);
    });
    worker.join();
    EXPECT_EQ(r.Only({"tname"}), (Lines{"tname 2 co-renamed", "tname 3 worker-renamed"}));
}

// Bundled client names are looked up in config.client_path.
TEST(InterpAbi, ClientNamesAreLookedUpInTheConfiguredPath) {
    const std::string library = RECORDER_CLIENT;
    const std::string dir = library.substr(0, library.rfind('/'));
    char name[] = "/tmp/interp-path-XXXXXX";
    const int fd = mkstemp(name);
    if (fd >= 0) close(fd);
    const std::string clients = std::string("interp_recorder=out=") + name;
    martini_config c{};
    c.abi_version = MARTINI_INTERP_ABI_VERSION;
    c.clients = clients.c_str();
    c.client_path = "/nonexistent:";
    martini_interp *interp = nullptr;
    testing::internal::CaptureStderr();
    EXPECT_EQ(martini_interp_create(&c, &interp), MARTINI_E_CLIENTS);
    EXPECT_NE(testing::internal::GetCapturedStderr().find("/nonexistent/libinterp_recorder.so"), std::string::npos);
    const std::string path = "/nonexistent:" + dir;
    c.client_path = path.c_str();
    ASSERT_EQ(martini_interp_create(&c, &interp), MARTINI_OK) << martini_last_error();
    martini_interp_destroy(interp);
    std::ifstream in(name);
    std::string first;
    std::getline(in, first);
    EXPECT_EQ(first, "init 1");
    std::remove(name);
}

// Each kind of bad input: its code, a message naming the function and the cause, and
// nothing changed (the run goes on and what was collected is written).
TEST(InterpAbi, BadInputGetsAnErrorCodeAndAMessageAndChangesNothing) {
    auto error = [] { return std::string(martini_last_error()); };
    InterpRun r;
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    martini_method_info info{};
    EXPECT_EQ(martini_method_register(r.interp, 1, nullptr), MARTINI_E_NULL);
    EXPECT_EQ(error(), "martini_method_register: info is NULL");
    EXPECT_EQ(martini_method_register(r.interp, 1, &info), MARTINI_E_NULL);
    info.name = "";
    EXPECT_EQ(martini_method_register(r.interp, 1, &info), MARTINI_E_ARGUMENT);
    info.name = "f";
    EXPECT_EQ(martini_method_register(r.interp, 0, &info), MARTINI_E_ARGUMENT);
    EXPECT_NE(error().find("method id 0"), std::string::npos) << error();
    const martini_line unsorted[] = {{8, 2}, {4, 3}};
    info.lines = unsorted;
    info.line_count = 2;
    EXPECT_EQ(martini_method_register(r.interp, 1, &info), MARTINI_E_ARGUMENT);
    EXPECT_NE(error().find("must be sorted by offset"), std::string::npos) << error();
    info.lines = nullptr;
    EXPECT_EQ(martini_method_register(r.interp, 1, &info), MARTINI_E_NULL) << "line_count without lines";
    info.line_count = 0;
    ASSERT_EQ(martini_method_register(r.interp, 1, &info), MARTINI_OK);
    EXPECT_EQ(error(), "") << "cleared by a call that succeeds";
    EXPECT_EQ(martini_method_register(r.interp, 1, &info), MARTINI_OK) << "the same facts again";
    info.name = "g";
    EXPECT_EQ(martini_method_register(r.interp, 1, &info), MARTINI_E_DUPLICATE_ID);
    EXPECT_NE(error().find("is already (global).f, not (global).g"), std::string::npos) << error();

    EXPECT_EQ(martini_enter(nullptr, 1, 1), MARTINI_E_NULL);
    EXPECT_EQ(martini_enter(r.interp, 99, 1), MARTINI_E_UNKNOWN_ID);
    EXPECT_EQ(error(), "martini_enter: method id 99 was not registered (martini_method_register)");
    EXPECT_EQ(martini_enter(r.interp, 1, MARTINI_STACK_BASE), MARTINI_E_ARGUMENT);
    ASSERT_EQ(martini_enter(r.interp, 1, 5), MARTINI_OK);
    EXPECT_EQ(martini_exit(r.interp, 6), MARTINI_E_STACK);
    EXPECT_NE(error().find("stack id 6 is not on thread 1's stack (1 frames); nothing was unwound"),
              std::string::npos)
        << error();
    EXPECT_EQ(martini_enter_vt(r.interp, 0, 1, 1), MARTINI_E_ARGUMENT);
    EXPECT_EQ(martini_enter_vt(r.interp, 42, 1, 1), MARTINI_E_UNKNOWN_ID);
    EXPECT_EQ(martini_thread_start_vt(r.interp, 7, "x", 8), MARTINI_E_UNKNOWN_ID) << "unknown parent";
    ASSERT_EQ(martini_thread_start_vt(r.interp, 7, "x", 0), MARTINI_OK);
    EXPECT_EQ(martini_thread_start_vt(r.interp, 7, "x", 0), MARTINI_E_DUPLICATE_ID);
    EXPECT_EQ(martini_thread_set_name_vt(r.interp, 7, nullptr), MARTINI_E_NULL);
    EXPECT_EQ(martini_code_load(r.interp, 99, &info, 4, nullptr, 0), MARTINI_E_UNKNOWN_ID);
    EXPECT_EQ(martini_code_load(r.interp, 1, nullptr, 4, nullptr, 0), MARTINI_E_NULL);
    EXPECT_EQ(martini_code_load(r.interp, 1, &info, 0, nullptr, 0), MARTINI_E_ARGUMENT);
    const martini_line past[] = {{40, 1}};
    EXPECT_EQ(martini_code_load(r.interp, 1, &info, 4, past, 1), MARTINI_E_ARGUMENT);

    // A second instance while this one is live.
    martini_config c{};
    c.abi_version = MARTINI_INTERP_ABI_VERSION;
    c.clients = "callcount";
    martini_interp *second = nullptr;
    EXPECT_EQ(martini_interp_create(&c, &second), MARTINI_E_PHASE);
    EXPECT_EQ(second, nullptr);

    // The frame entered above is still there: the failed exit unwound nothing.
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    ASSERT_EQ(martini_interp_shutdown(r.interp), MARTINI_OK);
    EXPECT_EQ(martini_interp_shutdown(r.interp), MARTINI_OK) << "twice is harmless";
    EXPECT_EQ(martini_enter(r.interp, 1, 5), MARTINI_E_PHASE);
    EXPECT_NE(error().find("the run has ended"), std::string::npos) << error();
    EXPECT_EQ(r.Only({"enter", "leave", "shutdown"}), (Lines{"enter 1 1", "leave 1 1", "shutdown"}));
}

TEST(InterpAbi, CreateRefusesABadConfigurationAndNamesTheCause) {
    martini_interp *interp = nullptr;
    EXPECT_EQ(martini_interp_create(nullptr, &interp), MARTINI_E_NULL);
    martini_config c{};
    c.abi_version = MARTINI_INTERP_ABI_VERSION + 1;
    c.clients = "callcount";
    EXPECT_EQ(martini_interp_create(&c, &interp), MARTINI_E_VERSION);
    EXPECT_EQ(std::string(martini_last_error()),
              "martini_interp_create: the caller was built against interpreter ABI version " +
                  std::to_string(MARTINI_INTERP_ABI_VERSION + 1) + ", this library is version " +
                  std::to_string(MARTINI_INTERP_ABI_VERSION));
    c.abi_version = MARTINI_INTERP_ABI_VERSION;
    c.clients = "";
    EXPECT_EQ(martini_interp_create(&c, &interp), MARTINI_E_CLIENTS);
    EXPECT_NE(std::string(martini_last_error()).find("no client given"), std::string::npos);
    c.clients = "/nonexistent/libnothing.so";
    testing::internal::CaptureStderr();
    EXPECT_EQ(martini_interp_create(&c, &interp), MARTINI_E_CLIENTS);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("/nonexistent/libnothing.so"), std::string::npos) << log;
    EXPECT_NE(std::string(martini_last_error()).find("no client could be loaded"), std::string::npos);
    EXPECT_EQ(interp, nullptr);
    EXPECT_STREQ(martini_status_name(MARTINI_E_STACK), "MARTINI_E_STACK");
    // After the failures, an instance can still be made.
    InterpRun r;
    EXPECT_EQ(r.status, MARTINI_OK) << martini_last_error();
}


// ---- Coverage: basic-block counts kept inside Martini, read with GetCoverageInfo --------

// The recorder's "cov M ..." line for method m, "" when there is none.
std::string CoverageOf(const Lines &lines, martini_method_id m) {
    const std::string prefix = "cov " + std::to_string(m) + " ";
    for (const std::string &l : lines) {
        if (l.rfind(prefix, 0) == 0) return l;
    }
    return "";
}

// The line starting with `prefix`, "" when there is none.
std::string LineStarting(const Lines &lines, const std::string &prefix) {
    for (const std::string &l : lines) {
        if (l.rfind(prefix, 0) == 0) return l;
    }
    return "";
}

TEST(InterpCoverage, WantsSaysWhatTheClientsAskedFor) {
    {
        InterpRun r;  // calls, no coverage
        ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
        EXPECT_EQ(martini_wants(r.interp, MARTINI_WANTS_CALLS), 1);
        EXPECT_EQ(martini_wants(r.interp, MARTINI_WANTS_COVERAGE), 0);
        ASSERT_EQ(r.Method(1, "insert"), MARTINI_OK);
        EXPECT_EQ(martini_method_covered(r.interp, 1), 0);
        uint64_t *counters = nullptr;
        size_t count = 0;
        EXPECT_EQ(martini_coverage_counters(r.interp, 1, &counters, &count), MARTINI_E_ARGUMENT);
        EXPECT_NE(std::string(martini_last_error()).find("no client covers method 1 (insert)"), std::string::npos)
            << martini_last_error();
        EXPECT_EQ(martini_bb_count(r.interp, 1, 10, 1), MARTINI_OK) << "nobody covers it: nothing to count";
    }
    InterpRun r(",cover,nocalls");  // coverage, no calls
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    EXPECT_EQ(martini_wants(r.interp, MARTINI_WANTS_CALLS), 0);
    EXPECT_EQ(martini_wants(r.interp, MARTINI_WANTS_COVERAGE), 1);
    EXPECT_EQ(martini_wants(r.interp, MARTINI_WANTS_CALLS | MARTINI_WANTS_COVERAGE), 0) << "one value at a time";
    EXPECT_EQ(martini_wants(nullptr, MARTINI_WANTS_COVERAGE), 0);
    const Lines lines = r.Lines();
    // RequestCoverage: DR_COVERAGE_BLOCKS is required (or DR_COVERAGE_CALLS alone), and
    // INSTANTIATE is the only phase.
    EXPECT_EQ(LineStarting(lines, "reqcov-bad "), "reqcov-bad MRTE_ERROR_ILLEGAL_ARGUMENT");
    // DR_COVERAGE_CALLS only alone, and only where the runtime counts calls apart.
    EXPECT_EQ(LineStarting(lines, "reqcov-calls-mixed "), "reqcov-calls-mixed MRTE_ERROR_ILLEGAL_ARGUMENT");
    EXPECT_EQ(LineStarting(lines, "reqcov-calls "), "reqcov-calls MRTE_ERROR_NOT_SUPPORTED");
    EXPECT_EQ(LineStarting(lines, "reqcov-late "), "reqcov-late MRTE_ERROR_PHASE_FAILURE");
}

TEST(InterpCoverage, TheCoverageFilterChoosesTheCoveredMethods) {
    InterpRun r(",cover,cover-skip=helper");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.MethodWithRows(1, "main", {{1, 1}, {2, 2}}), MARTINI_OK);
    ASSERT_EQ(r.MethodWithRows(2, "helper", {{5, 5}}), MARTINI_OK);
    ASSERT_EQ(r.MethodWithRows(3, "work", {{9, 9}}), MARTINI_OK);
    EXPECT_EQ(martini_method_covered(r.interp, 1), 1);
    EXPECT_EQ(martini_method_covered(r.interp, 2), 0);
    EXPECT_EQ(martini_method_covered(r.interp, 3), 1);
    EXPECT_EQ(martini_method_covered(r.interp, 99), 0) << "not registered";
    EXPECT_EQ(martini_method_covered(nullptr, 1), 0);
    EXPECT_EQ(martini_bb_count(r.interp, 1, 2, 4), MARTINI_OK) << martini_last_error();
    EXPECT_EQ(martini_bb_count(r.interp, 2, 5, 4), MARTINI_OK) << "not covered: accepted, nothing counted";
    const Lines lines = r.Lines();
    EXPECT_EQ(LineStarting(lines, "covered "), "covered 1,3");
    EXPECT_EQ(CoverageOf(lines, 1), "cov 1 MRTE_RESULT_OK 1:1:0:0 2:2:4:0");
    EXPECT_EQ(CoverageOf(lines, 2), "cov 2 MRTE_ERROR_ILLEGAL_ID");
    EXPECT_EQ(CoverageOf(lines, 3), "cov 3 MRTE_RESULT_OK 9:9:0:0");
}

TEST(InterpCoverage, TheInterpreterIncrementsTheCountersInPlace) {
    InterpRun r(",cover");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.MethodWithRows(1, "walk", {{0, 3}, {4, 4}, {8, 6}}), MARTINI_OK);
    ASSERT_EQ(r.MethodWithRows(2, "flat", {}), MARTINI_OK);  // no line table: one block, offset 0
    uint64_t *counters = nullptr;
    size_t count = 0;
    ASSERT_EQ(martini_coverage_counters(r.interp, 1, &counters, &count), MARTINI_OK) << martini_last_error();
    ASSERT_EQ(count, 3u);
    counters[1] += 5;
    __atomic_store_n(&counters[2], counters[2] + 1, __ATOMIC_RELAXED);
    EXPECT_EQ(martini_bb_count(r.interp, 1, 0, 2), MARTINI_OK);
    EXPECT_EQ(martini_bb_count(r.interp, 1, 4, 1), MARTINI_OK) << "the same counter as counters[1]";
    uint64_t *flat = nullptr;
    ASSERT_EQ(martini_coverage_counters(r.interp, 2, &flat, &count), MARTINI_OK) << martini_last_error();
    EXPECT_EQ(count, 1u);
    EXPECT_EQ(martini_bb_count(r.interp, 2, 0, 7), MARTINI_OK);
    EXPECT_EQ(flat[0], 7u);
    // Bad input: its code and a message, nothing counted.
    EXPECT_EQ(martini_coverage_counters(r.interp, 1, nullptr, &count), MARTINI_E_NULL);
    EXPECT_EQ(martini_coverage_counters(r.interp, 1, &counters, nullptr), MARTINI_E_NULL);
    EXPECT_EQ(martini_coverage_counters(r.interp, 42, &counters, &count), MARTINI_E_UNKNOWN_ID);
    EXPECT_EQ(martini_bb_count(r.interp, 42, 0, 1), MARTINI_E_UNKNOWN_ID);
    EXPECT_EQ(std::string(martini_last_error()),
              "martini_bb_count: method id 42 was not registered (martini_method_register)");
    EXPECT_EQ(martini_bb_count(r.interp, 1, 5, 1), MARTINI_E_ARGUMENT) << "5 starts no row";
    EXPECT_NE(std::string(martini_last_error()).find("offset 5 starts no row of method 1's line table (walk, 3 rows)"),
              std::string::npos)
        << martini_last_error();
    EXPECT_EQ(martini_bb_count(r.interp, 2, 1, 1), MARTINI_E_ARGUMENT) << "a method without a line table has offset 0 only";
    EXPECT_EQ(martini_bb_count(nullptr, 1, 0, 1), MARTINI_E_NULL);
    const Lines lines = r.Lines();
    EXPECT_EQ(LineStarting(lines, "covered "), "covered 1,2");
    EXPECT_EQ(CoverageOf(lines, 1), "cov 1 MRTE_RESULT_OK 0:3:2:0 4:4:6:0 8:6:1:0");
    EXPECT_EQ(CoverageOf(lines, 2), "cov 2 MRTE_RESULT_OK 0:0:7:0");
}

TEST(InterpCoverage, GetCoverageInfoAnswersWithTheDataRequestResultCodes) {
    // The first client covers every method; the second leaves "helper" out.
    InterpRun r(",cover", ",cover,cover-skip=helper");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.MethodWithRows(1, "main", {{0, 1}, {4, 2}, {8, 3}}), MARTINI_OK);
    ASSERT_EQ(r.MethodWithRows(2, "helper", {{0, 7}}), MARTINI_OK);
    EXPECT_EQ(martini_method_covered(r.interp, 2), 1) << "some client covers it";
    EXPECT_EQ(martini_bb_count(r.interp, 2, 0, 3), MARTINI_OK);
    const Lines first = r.Lines();
    const Lines second = r.SecondLines();
    // An empty buffer: the size needed.
    EXPECT_EQ(LineStarting(first, "covshort 1 "), "covshort 1 MRTE_ERROR_BUFFER_TOO_SHORT 3");
    EXPECT_EQ(LineStarting(first, "covshort 2 "), "covshort 2 MRTE_ERROR_BUFFER_TOO_SHORT 1");
    // The interpreter counts no branches: the blocks, and validData says so.
    EXPECT_EQ(LineStarting(first, "covbranches 1 "),
              "covbranches 1 MRTE_ERROR_PARTIAL_INFO " + std::to_string(Martini::MPI::DR_COVERAGE_BLOCKS));
    // Covered for the first client, not for the second.
    EXPECT_EQ(CoverageOf(first, 2), "cov 2 MRTE_RESULT_OK 0:7:3:0");
    EXPECT_EQ(CoverageOf(second, 2), "cov 2 MRTE_ERROR_ILLEGAL_ID");
    EXPECT_EQ(LineStarting(second, "covshort 2 "), "covshort 2 MRTE_ERROR_ILLEGAL_ID 0");
    EXPECT_EQ(CoverageOf(second, 1), "cov 1 MRTE_RESULT_OK 0:1:0:0 4:2:0:0 8:3:0:0");
    EXPECT_EQ(LineStarting(first, "covered "), "covered 1,2");
    EXPECT_EQ(LineStarting(second, "covered "), "covered 1");
}

// The fields of a "cov" line's entries: {offset, line, count, time}.
std::vector<std::vector<uint64_t>> Entries(const std::string &covLine) {
    std::vector<std::vector<uint64_t>> out;
    std::stringstream words(covLine);
    std::string w;
    for (int skip = 0; skip < 3 && words >> w; ++skip) {
    }
    while (words >> w) {
        std::vector<uint64_t> fields;
        std::stringstream parts(w);
        for (std::string f; std::getline(parts, f, ':');) fields.push_back(std::stoull(f));
        out.push_back(fields);
    }
    return out;
}

TEST(InterpCoverage, BlockTimeGoesToTheBlockUntilTheNextMarkOrItsFramesExit) {
    using namespace std::chrono_literals;
    InterpRun r(",cover=time");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.MethodWithRows(1, "outer", {{0, 1}, {10, 2}}), MARTINI_OK);
    ASSERT_EQ(r.MethodWithRows(2, "inner", {{0, 5}}), MARTINI_OK);
    EXPECT_EQ(martini_bb_time(r.interp, 0), MARTINI_E_STACK) << "no frame: no method to time";
    ASSERT_EQ(martini_enter(r.interp, 1, 1), MARTINI_OK);
    ASSERT_EQ(martini_bb_time(r.interp, 0), MARTINI_OK) << martini_last_error();
    std::this_thread::sleep_for(30ms);
    ASSERT_EQ(martini_enter(r.interp, 2, 2), MARTINI_OK);  // a call inside the block: its time is the block's
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(martini_exit(r.interp, 1), MARTINI_OK);  // back in outer: the block goes on
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(martini_bb_time(r.interp, 10), MARTINI_OK) << martini_last_error();  // closes block 0
    EXPECT_EQ(martini_bb_time(r.interp, 3), MARTINI_E_ARGUMENT) << "3 starts no row (and closes block 10)";
    ASSERT_EQ(martini_bb_time(r.interp, 10), MARTINI_OK);
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);  // closes block 10
    std::this_thread::sleep_for(300ms);  // after the frame: nobody's time
    const Lines lines = r.Lines();
    const auto outer = Entries(CoverageOf(lines, 1));
    ASSERT_EQ(outer.size(), 2u) << CoverageOf(lines, 1);
    const uint64_t ms = 1000 * 1000;
    EXPECT_GE(outer[0][3], 70 * ms) << "block 0: 30 ms, 20 ms in the call, 20 ms after it";
    EXPECT_LT(outer[0][3], 250 * ms);
    EXPECT_GE(outer[1][3], 20 * ms) << "block 10: 20 ms until the frame exited";
    EXPECT_LT(outer[1][3], 250 * ms) << "closed when its frame exited, not at the end of the run";
    EXPECT_EQ(outer[0][2], 0u) << "times are not counts";
    EXPECT_EQ(CoverageOf(lines, 2), "cov 2 MRTE_RESULT_OK 0:5:0:0") << "inner marked no block";
}

TEST(InterpCoverage, AVirtualThreadTimesItsOwnBlocks) {
    using namespace std::chrono_literals;
    InterpRun r(",cover=time");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.MethodWithRows(1, "body", {{0, 1}, {4, 2}}), MARTINI_OK);
    ASSERT_EQ(martini_thread_start_vt(r.interp, 0xC0, "co", 0), MARTINI_OK);
    ASSERT_EQ(martini_enter_vt(r.interp, 0xC0, 1, 1), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 1, 1), MARTINI_OK);  // the OS thread runs body too
    ASSERT_EQ(martini_bb_time_vt(r.interp, 0xC0, 4), MARTINI_OK) << martini_last_error();
    ASSERT_EQ(martini_bb_time(r.interp, 0), MARTINI_OK);
    std::this_thread::sleep_for(30ms);
    ASSERT_EQ(martini_thread_end_vt(r.interp, 0xC0), MARTINI_OK);  // its frame exits: block 4 closed
    std::this_thread::sleep_for(300ms);
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);  // block 0 closed
    EXPECT_EQ(martini_bb_time_vt(r.interp, 0xC1, 0), MARTINI_E_UNKNOWN_ID);
    const auto body = Entries(CoverageOf(r.Lines(), 1));
    ASSERT_EQ(body.size(), 2u);
    const uint64_t ms = 1000 * 1000;
    EXPECT_GE(body[0][3], 330 * ms) << "the OS thread's block: 330 ms";
    EXPECT_GE(body[1][3], 30 * ms) << "the virtual thread's block: 30 ms";
    EXPECT_LT(body[1][3], 250 * ms) << "closed when the virtual thread ended";
}

TEST(InterpCoverage, BlockTimesAreKeptOnlyWhenAClientAskedForThem) {
    InterpRun r(",cover");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.MethodWithRows(1, "outer", {{0, 1}}), MARTINI_OK);
    ASSERT_EQ(martini_enter(r.interp, 1, 1), MARTINI_OK);
    EXPECT_EQ(martini_bb_time(r.interp, 0), MARTINI_OK);
    ASSERT_EQ(martini_exit(r.interp, MARTINI_STACK_BASE), MARTINI_OK);
    EXPECT_EQ(CoverageOf(r.Lines(), 1), "cov 1 MRTE_RESULT_OK 0:1:0:0");
}

TEST(InterpCoverage, ThreadsCountingOneBlockGiveTheExactTotal) {
    InterpRun r(",cover");
    ASSERT_EQ(r.status, MARTINI_OK) << martini_last_error();
    ASSERT_EQ(r.MethodWithRows(1, "hot", {{0, 1}, {4, 2}}), MARTINI_OK);
    constexpr int kThreads = 8, kCalls = 100000;
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&r, &ready, t] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) std::this_thread::yield();  // all at once
            for (int i = 0; i < kCalls; ++i) {
                if (martini_bb_count(r.interp, 1, 4, 1) != MARTINI_OK) {
                    ADD_FAILURE() << martini_last_error();
                    return;
                }
            }
            EXPECT_EQ(martini_bb_count(r.interp, 1, 0, static_cast<uint64_t>(t)), MARTINI_OK);
        });
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(CoverageOf(r.Lines(), 1),
              "cov 1 MRTE_RESULT_OK 0:1:28:0 4:2:" + std::to_string(kThreads * kCalls) + ":0");
}

}  // namespace
