// A program that runs until told to stop, for attaching to it: main sits in loop()
// (running when an agent attaches), calling work() over and over. What it prints and
// its exit status do not depend on how long it ran or on being profiled.
//   java Attached STOP-FILE
import java.nio.file.Files;
import java.nio.file.Path;

public class Attached {
    static long work(long i) {
        long h = i;
        for (int k = 0; k < 2000; ++k) h = h * 6364136223846793005L + 1442695040888963407L;
        return h;
    }

    static void loop(Path stop) throws InterruptedException {
        long sink = 0;
        while (!Files.exists(stop)) {
            for (int i = 0; i < 50; ++i) sink += work(i);
            Thread.sleep(2);
        }
        if (sink == 42) System.out.println("unlikely");
    }

    public static void main(String[] args) throws Exception {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        loop(Path.of(args[0]));
        long sum = 0;
        for (int i = 0; i < 1000; ++i) sum += work(i);
        System.out.println("sum " + sum);
        System.exit(3);
    }
}
