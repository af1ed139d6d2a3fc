package martini.runtime;

import java.util.concurrent.atomic.AtomicLongArray;

// Test stand-in for the agent's native probes: counts per method id and checks, per
// thread, that every leave pairs with the innermost enter. Prints its findings at exit.
public final class Probes {
    private static final int MAX = 1 << 16;
    private static final AtomicLongArray ENTERS = new AtomicLongArray(MAX);
    private static final AtomicLongArray LEAVES = new AtomicLongArray(MAX);
    private static final AtomicLongArray EXCEPTIONAL = new AtomicLongArray(MAX);
    private static final AtomicLongArray VIOLATIONS = new AtomicLongArray(1);
    private static final ThreadLocal<int[]> STACK = ThreadLocal.withInitial(() -> new int[4096]);
    private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

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
        sb.append("violations\t").append(VIOLATIONS.get(0)).append('\n');
        System.out.print(sb);
        System.out.flush();
    }
}
