package martini.runtime;

/**
 * The calls Martini's bytecode instrumentation inserts: enter/leave probes in the
 * methods a client's call-graph filter selected, and, in exact allocation mode,
 * allocation probes in the constructors of the classes a client's heap filter
 * selected, array allocation probes after the newarray/anewarray/multianewarray
 * instructions creating arrays of the classes it selected, and site probes before the calls of Object.notify/notifyAll and
 * Thread.start/join/sleep/interrupt in the methods a client's thread-interaction
 * filter selected (or, for Thread.start(), that need thread parents), and coverage
 * counters at the block starts and branches of the methods a client's coverage filter
 * selected. Loaded from the bootstrap class path so every class, whatever its loader
 * or module, can call it; the natives are bound by the agent.
 */
public final class Probes {
    private Probes() {}

    /**
     * Enters lost to a StackOverflowError thrown by the call to {@link #enter} itself:
     * the handler inserted over that call adds one (no call, so it runs on a full
     * stack) and rethrows. Read by the agent at VM death. Not atomic: a count, not a
     * synchronization point.
     */
    public static int lostEnters;

    /** At the start of the method with this id. */
    public static native void enter(int id);

    /** Before each return of the method. */
    public static native void leave(int id);

    /** When an exception leaves the method (the inserted handler rethrows it). */
    public static native void leaveExceptional(int id);

    /**
     * Right after a constructor's super() call, with the class that declares the
     * constructor. Subclass constructors run their super constructors first, and each
     * passes its own class: only the most-derived class's constructor reports the
     * object, once.
     */
    public static void alloc(Object o, Class<?> c, int classId) {
        if (o.getClass() == c) allocated(o, classId);
    }

    private static native void allocated(Object o, int classId);

    /**
     * The same for class files before version 49, which cannot load a class constant:
     * the agent compares the object's class with the class of classId itself.
     */
    public static native void allocByClassId(Object o, int classId);

    /**
     * Right after a newarray, anewarray or multianewarray, with the new array and the
     * allocation site's id (the site names the array's class).
     */
    public static native void allocArray(Object array, int site);

    /**
     * Before a notify/notifyAll/start/join/interrupt call, with its receiver (the
     * arguments, if any, were set aside and are put back after this returns).
     */
    public static native void interaction(Object receiver, int site);

    /** Before a Thread.sleep call. */
    public static native void interactionStatic(int site);

    /**
     * Coverage counters: 8-byte counters in native memory from {@link #counters} on, in
     * STRIPES + 1 stripes of STRIDE bytes. Stripe 0 is shared and added to atomically;
     * stripe s + 1 belongs to the one thread whose id is OWNERS[s], which adds to it
     * with plain loads and stores (no other thread writes it, so no add is lost). The
     * agent sums the stripes when a client asks. `unsafe` and `counters` are set by the
     * agent (through JNI, which needs no access) before any class has a coverage probe,
     * after exporting jdk.internal.misc to this class's module (java.base is in every
     * module graph; sun.misc.Unsafe's jdk.unsupported is not, under `java -m`); it
     * checks STRIPES and STRIDE against its own.
     */
    static jdk.internal.misc.Unsafe unsafe;
    static long counters;
    static final int STRIPES = 16;
    static final long STRIDE = 8L << 24;
    private static final long[] OWNERS = new long[STRIPES];

    /**
     * At the start of a covered block, and around a conditional branch: counter + 1.
     * Compiled inline: the thread's id, its stripe's owner, a plain add when it is the
     * owner; else {@link #hitShared}.
     */
    public static void hit(int counter) {
        final long id = Thread.currentThread().getId();
        final int s = (int) id & (STRIPES - 1);
        if (OWNERS[s] == id) {
            final long address = counters + (s + 1L) * STRIDE + ((long) counter << 3);
            unsafe.putLong(address, unsafe.getLong(address) + 1L);
        } else {
            hitShared(counter, id, s);
        }
    }

    /** A thread without a stripe: it takes a free one, or adds atomically to the shared one. */
    private static void hitShared(int counter, long id, int s) {
        if (claim(id, s)) {
            final long address = counters + (s + 1L) * STRIDE + ((long) counter << 3);
            unsafe.putLong(address, unsafe.getLong(address) + 1L);
        } else {
            unsafe.getAndAddLong(null, counters + ((long) counter << 3), 1L);
        }
    }

    private static synchronized boolean claim(long id, int s) {
        if (OWNERS[s] == 0) OWNERS[s] = id;
        return OWNERS[s] == id;
    }

    /**
     * A plain add to the shared stripe (MARTINI_COVERAGE_COUNTERS=plain): not exact when
     * threads run the same code; for measuring what exactness costs.
     */
    public static void hitPlain(int counter) {
        final long address = counters + ((long) counter << 3);
        unsafe.putLong(address, unsafe.getLong(address) + 1L);
    }

    /**
     * Nothing (MARTINI_COVERAGE_COUNTERS=none): the call alone, for measuring what a
     * probe costs beside counting.
     */
    public static void hitNone(int counter) {
    }
}
