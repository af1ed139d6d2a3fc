// Time in the kernel under a Java frame: FileInputStream.read of /dev/zero in 8 KiB
// chunks (libjava reads into a buffer on its stack, so the read system call, where the
// kernel clears the buffer, is most of the time), for about `millis` ms.
import java.io.FileInputStream;
import java.io.IOException;

public class Reads {
    public static void main(String[] args) throws IOException {
        final long millis = args.length > 0 ? Long.parseLong(args[0]) : 1000;
        final byte[] buffer = new byte[8192];
        long total = 0;
        try (FileInputStream zero = new FileInputStream("/dev/zero")) {
            final long end = System.nanoTime() + millis * 1_000_000L;
            while (System.nanoTime() < end) total += zero.read(buffer);
        }
        System.out.println("reads: " + (total > 0 ? "done" : "?"));
    }
}
