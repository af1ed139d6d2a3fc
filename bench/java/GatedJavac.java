// bench/attach_overhead.sh's workload: javac compiling the given sources in this JVM,
// over and over until the file GATE exists (the phase a profiler attaches to and
// detaches from), then ROUNDS more times, timed: prints "elapsed MS".
//   java GatedJavac GATE ROUNDS JAVAC-ARGS...
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

public class GatedJavac {
    public static void main(String[] args) throws Exception {
        Path gate = Path.of(args[0]);
        int rounds = Integer.parseInt(args[1]);
        String[] javacArgs = Arrays.copyOfRange(args, 2, args.length);
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        do {
            if (com.sun.tools.javac.Main.compile(javacArgs) != 0) throw new IllegalStateException("javac failed");
        } while (!Files.exists(gate));
        long start = System.nanoTime();
        for (int i = 0; i < rounds; ++i) {
            if (com.sun.tools.javac.Main.compile(javacArgs) != 0) throw new IllegalStateException("javac failed");
        }
        System.out.println("elapsed " + (System.nanoTime() - start) / 1000000);
    }
}
