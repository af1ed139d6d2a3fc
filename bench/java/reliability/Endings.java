package rel;

import java.util.ArrayList;
import java.util.List;

// Every way a Java program can end, for bench/reliability.py. Each run first calls
// `counted` exactly 1000 times (the oracle every profile is checked against), then ends
// as its argument says:
//   normal          returns from main (exit 0)
//   exit3           System.exit(3)
//   uncaught        throws from main (exit 1)
//   thread-uncaught a thread dies of an exception; main returns
//   daemons         daemon threads still calling methods when main returns
//   halt            Runtime.halt(5): no shutdown hooks
//   oom             allocates until OutOfMemoryError, uncaught (run with -Xmx64m)
//   overflow        recursion to StackOverflowError, caught, then returns
//   wait            prints "ready" and sleeps (the harness sends a signal)
//   badclass        defines a malformed class (ClassFormatError, caught), then returns
public class Endings {
    static long sink;

    static long counted(int i) { return sink += i; }

    static long down(int n) { return down(n + 1) + 1; }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 1000; i++) counted(i);
        String mode = args.length > 0 ? args[0] : "normal";
        switch (mode) {
            case "normal": break;
            case "exit3": System.exit(3); break;
            case "uncaught": throw new IllegalStateException("ending by an uncaught exception");
            case "thread-uncaught": {
                Thread t = new Thread(() -> { throw new IllegalStateException("a thread dies"); });
                t.start();
                t.join();
                break;
            }
            case "daemons": {
                for (int k = 0; k < 4; k++) {
                    Thread t = new Thread(() -> { while (true) sink += sink % 7; });
                    t.setDaemon(true);
                    t.start();
                }
                Thread.sleep(200);
                break;
            }
            case "halt": Runtime.getRuntime().halt(5); break;
            case "oom": {
                List<long[]> hold = new ArrayList<>();
                while (true) hold.add(new long[1 << 16]);
            }
            case "overflow":
                try { down(0); } catch (StackOverflowError e) { System.out.println("overflowed"); }
                break;
            case "wait":
                System.out.println("ready");
                System.out.flush();
                Thread.sleep(60_000);
                break;
            case "badclass": {
                byte[] bytes = {(byte) 0xCA, (byte) 0xFE, (byte) 0xBA, (byte) 0xBE, 0, 0, 0, 61, 0, 9, 1, 0, 3, 'a'};
                try {
                    new ClassLoader() {
                        Class<?> define() { return defineClass("rel.Broken", bytes, 0, bytes.length); }
                    }.define();
                } catch (ClassFormatError e) {
                    System.out.println("malformed class rejected: " + e.getClass().getSimpleName());
                }
                break;
            }
            default: throw new IllegalArgumentException(mode);
        }
        System.out.println("done " + mode);
    }
}
