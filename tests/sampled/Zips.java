// Time in native code under a Java frame: zlib's deflate under
// java.util.zip.Deflater.deflateBytesBytes (a JNI method of the JDK's libzip), and in
// the JVM's own code (allocation, garbage collection), for about `millis` ms; then
// Math.sin, which compiled code calls as a stub of the JVM's code cache, as long.
import java.util.Random;
import java.util.zip.Deflater;

public class Zips {
    public static void main(String[] args) {
        final long millis = args.length > 0 ? Long.parseLong(args[0]) : 1500;
        final byte[] input = new byte[1 << 20];
        final Random random = new Random(42);
        for (int i = 0; i < input.length; i++) input[i] = (byte) (random.nextInt(16) + 'a');
        final byte[] output = new byte[input.length + 1024];
        long total = 0;
        Object keep = null;
        final long end = System.nanoTime() + millis * 1_000_000L;
        while (System.nanoTime() < end) {
            final Deflater deflater = new Deflater(Deflater.BEST_COMPRESSION);
            deflater.setInput(input);
            deflater.finish();
            while (!deflater.finished()) total += deflater.deflate(output);
            deflater.end();
            keep = new byte[4096][];
        }
        double sines = 0;
        final long sinEnd = System.nanoTime() + millis * 1_000_000L;
        for (int i = 0; System.nanoTime() < sinEnd; i++) {
            for (int j = 0; j < 10000; j++) sines += Math.sin(i * 0.001 + j);
        }
        System.out.println("zips: " + (total > 0 && keep != null && sines != 42 ? "done" : "?"));
    }
}
