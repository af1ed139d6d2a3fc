package overflow;

// Recurses until the stack is full, twenty times: some of the overflows happen in the
// call to the enter probe at the start of `down`, where the call is not seen.
public class Overflow {
    static long calls;

    static void down() {
        calls++;
        down();
    }

    public static void main(String[] args) {
        int errors = 0;
        for (int i = 0; i < 20; i++) {
            try {
                down();
            } catch (StackOverflowError e) {
                errors++;
            }
        }
        System.out.println("overflow done " + errors);
    }
}
