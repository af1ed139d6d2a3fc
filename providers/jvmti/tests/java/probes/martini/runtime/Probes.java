package martini.runtime;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLongArray;

// Test stand-in for the agent's native probes: counts per method id and checks, per
// thread, that every leave pairs with the innermost enter; counts the objects each
// allocation probe reports, and objects reported more than once. Prints its findings
// at exit.
public final class Probes {
    private static final int MAX = 1 << 16;
    private static final AtomicLongArray ENTERS = new AtomicLongArray(MAX);
    private static final AtomicLongArray LEAVES = new AtomicLongArray(MAX);
    private static final AtomicLongArray EXCEPTIONAL = new AtomicLongArray(MAX);
    private static final AtomicLongArray VIOLATIONS = new AtomicLongArray(1);
    private static final ThreadLocal<int[]> STACK = ThreadLocal.withInitial(() -> new int[4096]);
    private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);
    private static final AtomicLongArray ALLOCS = new AtomicLongArray(MAX);
    private static final AtomicLongArray DUPLICATES = new AtomicLongArray(1);
    private static final Map<Object, Boolean> SEEN = Collections.synchronizedMap(new IdentityHashMap<>());
    // allocByClassId (class files before version 49): "id<TAB>runtime class" -> count
    private static final Map<String, Long> BY_ID = Collections.synchronizedMap(new TreeMap<>());
    // Array probes: "id<TAB>runtime class" -> count
    private static final Map<String, Long> ARRAYS = Collections.synchronizedMap(new TreeMap<>());
    // Site probes: "id<TAB>receiver class" ("-" for none) -> count
    private static final Map<String, Long> SITES = Collections.synchronizedMap(new TreeMap<>());

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Probes::report));
    }

    private Probes() {}

    public static void enter(int id) {
        ENTERS.incrementAndGet(id);
        int[] depth = DEPTH.get();
        STACK.get()[depth[0]++] = id;
    }

    public static void leave(int id) {
        LEAVES.incrementAndGet(id);
        pop(id);
    }

    public static void leaveExceptional(int id) {
        EXCEPTIONAL.incrementAndGet(id);
        pop(id);
    }

    // The agent's Probes.alloc, with the native part counting.
    public static void alloc(Object o, Class<?> c, int classId) {
        if (o.getClass() == c) allocated(o, classId);
    }

    private static void allocated(Object o, int classId) {
        ALLOCS.incrementAndGet(classId);
        if (SEEN.put(o, Boolean.TRUE) != null) DUPLICATES.incrementAndGet(0);
    }

    // The agent compares the classes natively; here the test script does, by name.
    public static void allocByClassId(Object o, int classId) {
        BY_ID.merge(classId + "\t" + o.getClass().getName().replace('.', '/'), 1L, Long::sum);
    }

    public static void allocArray(Object a, int id) {
        ARRAYS.merge(id + "\t" + a.getClass().getName(), 1L, Long::sum);
        if (SEEN.put(a, Boolean.TRUE) != null) DUPLICATES.incrementAndGet(0);
    }

    public static void interaction(Object o, int id) {
        SITES.merge(id + "\t" + (o == null ? "null" : o.getClass().getName().replace('.', '/')), 1L, Long::sum);
    }

    public static void interactionStatic(int id) {
        SITES.merge(id + "\t-", 1L, Long::sum);
    }

    private static void pop(int id) {
        int[] depth = DEPTH.get();
        if (depth[0] == 0 || STACK.get()[depth[0] - 1] != id) {
            VIOLATIONS.incrementAndGet(0);
            System.err.println("probes: leave of " + id + " does not pair with the innermost enter");
            return;
        }
        depth[0]--;
    }

    private static void report() {
        StringBuilder sb = new StringBuilder();
        for (int id = 0; id < MAX; id++) {
            long e = ENTERS.get(id), l = LEAVES.get(id), x = EXCEPTIONAL.get(id);
            if (e != 0 || l != 0 || x != 0) sb.append("probe\t").append(id).append('\t').append(e).append('\t')
                    .append(l).append('\t').append(x).append('\n');
        }
        for (int id = 0; id < MAX; id++) {
            if (ALLOCS.get(id) != 0) sb.append("alloc\t").append(id).append('\t').append(ALLOCS.get(id)).append('\n');
        }
        synchronized (BY_ID) {
            for (Map.Entry<String, Long> e : BY_ID.entrySet()) {
                sb.append("allocById\t").append(e.getKey()).append('\t').append(e.getValue()).append('\n');
            }
        }
        synchronized (ARRAYS) {
            for (Map.Entry<String, Long> e : ARRAYS.entrySet()) {
                sb.append("array\t").append(e.getKey()).append('\t').append(e.getValue()).append('\n');
            }
        }
        synchronized (SITES) {
            for (Map.Entry<String, Long> e : SITES.entrySet()) {
                sb.append("site\t").append(e.getKey()).append('\t').append(e.getValue()).append('\n');
            }
        }
        sb.append("duplicates\t").append(DUPLICATES.get(0)).append('\n');
        sb.append("violations\t").append(VIOLATIONS.get(0)).append('\n');
        System.out.print(sb);
        System.out.flush();
    }
}
