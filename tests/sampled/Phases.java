// Two phases one after the other, for sampled profiles' lines and times: first() for
// about a second, then second() for about a second. In first() nearly all the time
// goes to the line marked HOT; the test finds that line by its marker.
public class Phases {
    static long sink;

    static long first(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) {
            x = (x ^ (x >>> 7)) * 0x9E3779B97F4A7C15L + i % 7 + (x % 13); // HOT
        }
        x += n & 3; // COLD
        return x;
    }

    static long second(long n) {
        long y = 3;
        for (long i = 0; i < n; i++) {
            y = y * 31 + (i ^ (y >>> 3)) % 11;
        }
        return y;
    }

    static void phase(boolean isFirst, long millis) {
        final long end = System.nanoTime() + millis * 1_000_000L;
        while (System.nanoTime() < end) sink += isFirst ? first(200_000) : second(200_000);
    }

    public static void main(String[] args) {
        final long millis = args.length > 0 ? Long.parseLong(args[0]) : 1000;
        phase(true, millis);
        phase(false, millis);
        System.out.println("phases: " + (sink != 42 ? "done" : "?"));
    }
}
