package martini.runtime;

/**
 * The calls Martini's bytecode instrumentation inserts: enter/leave probes in the
 * methods a client's call-graph filter selected, and, in exact allocation mode,
 * allocation probes in the constructors of the classes a client's heap filter
 * selected, array allocation probes after the newarray/anewarray/multianewarray
 * instructions creating arrays of the classes it selected, and site probes before the calls of Object.notify/notifyAll and
 * Thread.start/join/sleep/interrupt in the methods a client's thread-interaction
 * filter selected (or, for Thread.start(), that need thread parents). Loaded from the bootstrap class path so every class, whatever its loader
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
     * Coverage counters: 8-byte counters in native memory from {@link #counters} on,
     * read by the agent when a client asks. Both fields are set by the agent (through
     * JNI, which needs no access) before any class has a coverage probe.
     */
    static sun.misc.Unsafe unsafe;
    static long counters;

    /**
     * At the start of a covered block, and around a conditional branch: counter + 1, an
     * atomic add (exact when several threads run the same code). Compiled inline.
     */
    public static void hit(int counter) {
        unsafe.getAndAddLong(null, counters + ((long) counter << 3), 1L);
    }

    /** The same without the atomic add (MARTINI_COVERAGE_COUNTERS=plain): for measuring. */
    public static void hitPlain(int counter) {
        final long address = counters + ((long) counter << 3);
        unsafe.putLong(address, unsafe.getLong(address) + 1L);
    }
}
