package martini.runtime;

/**
 * The calls Martini's bytecode instrumentation inserts into the methods a client's
 * call-graph filter selected. Loaded from the bootstrap class path so every class,
 * whatever its loader or module, can call it; the natives are bound by the agent.
 */
public final class Probes {
    private Probes() {}

    /** At the start of the method with this id. */
    public static native void enter(int id);

    /** Before each return of the method. */
    public static native void leave(int id);

    /** When an exception leaves the method (the inserted handler rethrows it). */
    public static native void leaveExceptional(int id);
}
