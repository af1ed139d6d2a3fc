// bench/attach_overhead.sh's workload: javac compiling the given sources in this JVM,
// WARMUP times (the phase a profiler attaches to and detaches from), then, once the file
// GATE exists, ROUNDS more times, each timed: prints "ready PID", "warm", then
// "elapsed MS MS ..." (one time per round).
//   java GatedJavac GATE WARMUP ROUNDS JAVAC-ARGS...
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

public class GatedJavac {
    static void compile(String[] javacArgs) {
        if (com.sun.tools.javac.Main.compile(javacArgs) != 0) throw new IllegalStateException("javac failed");
    }

    public static void main(String[] args) throws Exception {
        Path gate = Path.of(args[0]);
        int warmup = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        String[] javacArgs = Arrays.copyOfRange(args, 3, args.length);
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        for (int i = 0; i < warmup; ++i) compile(javacArgs);
        System.out.println("warm");
        System.out.flush();
        while (!Files.exists(gate)) Thread.sleep(10);
        StringBuilder times = new StringBuilder("elapsed");
        for (int i = 0; i < rounds; ++i) {
            long start = System.nanoTime();
            compile(javacArgs);
            times.append(' ').append((System.nanoTime() - start) / 1000000);
        }
        System.out.println(times);
    }
}
