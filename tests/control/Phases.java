// Three phases with known call counts, each started when the test creates a file:
// a() 1000 times, then b() 500 times, then c() 700 times. The test pauses and resumes
// the profiler between phases with `martini control`.
import java.nio.file.Files;
import java.nio.file.Path;

public class Phases {
    static int sink;
    static void a() { sink++; }
    static void b() { sink += 2; }
    static void c() { sink += 3; }

    static void waitFor(Path p) throws InterruptedException {
        while (!Files.exists(p)) Thread.sleep(5);
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        for (int i = 0; i < 1000; i++) a();
        System.out.println("A done " + ProcessHandle.current().pid());
        System.out.flush();
        waitFor(dir.resolve("go1"));
        for (int i = 0; i < 500; i++) b();
        System.out.println("B done");
        System.out.flush();
        waitFor(dir.resolve("go2"));
        for (int i = 0; i < 700; i++) c();
        System.out.println("C done " + sink);
    }
}
