// Two named threads, worker-a and worker-b, run five phases with known call counts;
// each phase starts when the test creates the file go<N> (N = 1..5), and each thread
// prints "<name> <N>" when it finished phase N. Per phase and thread: p1 a() 100 times,
// p2 b() 200, p3 c() 300, p4 d() 50, p5 e() 10; each call allocates one Box.
//   java Workers DIR
import java.nio.file.Files;
import java.nio.file.Path;

public class Workers {
    static final class Box {
        final long v;
        Box(long v) { this.v = v; }
    }
    static volatile Object last;
    static volatile long sink;
    static void a() { last = new Box(sink++); }
    static void b() { last = new Box(sink += 2); }
    static void c() { last = new Box(sink += 3); }
    static void d() { last = new Box(sink += 4); }
    static void e() { last = new Box(sink += 5); }

    static void waitFor(Path p) {
        try {
            while (!Files.exists(p)) Thread.sleep(5);
        } catch (InterruptedException ex) {
            throw new RuntimeException(ex);
        }
    }

    static void work(Path dir) {
        String me = Thread.currentThread().getName();
        int[] counts = {100, 200, 300, 50, 10};
        for (int phase = 1; phase <= 5; ++phase) {
            waitFor(dir.resolve("go" + phase));
            for (int i = 0; i < counts[phase - 1]; ++i) {
                switch (phase) {
                    case 1: a(); break;
                    case 2: b(); break;
                    case 3: c(); break;
                    case 4: d(); break;
                    default: e(); break;
                }
            }
            synchronized (Workers.class) {
                System.out.println(me + " " + phase);
                System.out.flush();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Thread ta = new Thread(() -> work(dir), "worker-a");
        Thread tb = new Thread(() -> work(dir), "worker-b");
        ta.start();
        tb.start();
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        ta.join();
        tb.join();
        System.out.println("end " + sink);
    }
}
