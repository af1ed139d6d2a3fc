// A multi-threaded program that allocates, contends and waits on purpose, with known
// numbers, for running several profilers in one JVM (tests/three_profilers_test.py):
//   - 4 teller threads each make 50 transfers: 200 bank.Bank$Transfer objects, 200
//     calls of bank.Bank$Ledger.apply, each holding the ledger's monitor ~1 ms, so the
//     tellers contend on the one bank.Bank$Ledger object;
//   - an auditor thread waits on a bank.Bank$Mailbox until main posts 5 notices, one
//     every ~20 ms (wait/notify);
//   - main starts the threads, posts the notices and joins them.
package bank;

import java.util.ArrayList;
import java.util.List;

public final class Bank {
    static final int TELLERS = 4;
    static final int TRANSFERS_PER_TELLER = 50;
    static final int NOTICES = 5;

    static final class Transfer {
        final int from, to;
        final long cents;

        Transfer(int from, int to, long cents) {
            this.from = from;
            this.to = to;
            this.cents = cents;
        }
    }

    static final class Ledger {
        private final long[] balances = new long[16];
        private long applied;

        // Holds the monitor about a millisecond: the tellers queue up here.
        synchronized void apply(Transfer t) {
            balances[t.from] -= t.cents;
            balances[t.to] += t.cents;
            applied++;
            long until = System.nanoTime() + 1_000_000;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
        }

        synchronized long applied() {
            return applied;
        }
    }

    static final class Mailbox {
        private final List<String> notices = new ArrayList<>();

        synchronized void post(String notice) {
            notices.add(notice);
            notifyAll();
        }

        synchronized String take() throws InterruptedException {
            while (notices.isEmpty()) {
                wait();
            }
            return notices.remove(0);
        }
    }

    static void teller(Ledger ledger, int id) {
        for (int i = 0; i < TRANSFERS_PER_TELLER; i++) {
            ledger.apply(new Transfer(id, (id + i) % 16, 100 + i));
        }
    }

    public static void main(String[] args) throws Exception {
        Ledger ledger = new Ledger();
        Mailbox mailbox = new Mailbox();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < TELLERS; t++) {
            final int id = t;
            threads.add(new Thread(() -> teller(ledger, id), "teller-" + t));
        }
        int[] audited = new int[1];
        Thread auditor = new Thread(() -> {
            try {
                for (int i = 0; i < NOTICES; i++) {
                    mailbox.take();
                    audited[0]++;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "auditor");
        threads.add(auditor);
        for (Thread t : threads) t.start();
        for (int i = 0; i < NOTICES; i++) {
            Thread.sleep(20);
            mailbox.post("notice " + i);
        }
        for (Thread t : threads) t.join();
        System.out.println("bank: " + ledger.applied() + " transfers, " + audited[0] + " notices audited");
    }
}
