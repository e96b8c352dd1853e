"""The soak's bookkeeping, shared by every traffic thread: outcomes counted
by kind, invariant violations (each with enough context to debug), and the
greedy reference texts that results are compared with.

Thread: every method may be called from any thread (one lock)."""

import collections
import threading

# Protocol v1's terminal message types: after one, nothing more for that id.
TERMINAL = ("finished", "error")


class Ledger:
    def __init__(self, reference):
        # reference: {(prompt, max_tokens): greedy text}, from a run of each
        # prompt alone before the traffic starts.
        self.reference = dict(reference)
        self.outcomes = collections.Counter()
        self.violations = []
        self.greedy_compared = 0
        self.seeded_compared = 0
        self.embeddings_compared = 0
        self._lock = threading.Lock()

    def outcome(self, kind):
        with self._lock:
            self.outcomes[kind] += 1

    def violation(self, what):
        with self._lock:
            self.violations.append(what)
            if len(self.violations) <= 20:
                print("VIOLATION: %s" % what, flush=True)

    def check_reference(self, key, text, where):
        """A greedy (temperature 0) or seeded (a reference seed: key has 4
        fields) result that ended by length or stop and was not cancelled
        must equal the reference text of the same request."""
        ref = self.reference.get(key)
        if ref is None:
            return
        seeded = isinstance(key, tuple) and len(key) == 4
        with self._lock:
            if seeded:
                self.seeded_compared += 1
            else:
                self.greedy_compared += 1
        if text != ref:
            self.violation("%s: %s text differs from the reference for %r: got %r, want %r"
                           % (where, "seeded" if seeded else "greedy", key, text[:200], ref[:200]))


    def check_embedding(self, text, ref, got, tolerance, where):
        """An embedding returned amid other traffic: the reference's length,
        unit L2 norm and every component within `tolerance` of the reference
        (the same input embedded alone)."""
        with self._lock:
            self.embeddings_compared += 1
        if not isinstance(got, list) or len(got) != len(ref):
            self.violation("%s: embedding of %r has %s components, want %d"
                           % (where, text, len(got) if isinstance(got, list) else type(got).__name__, len(ref)))
            return
        norm = sum(x * x for x in got) ** 0.5
        worst = max(abs(a - b) for a, b in zip(got, ref))
        if abs(norm - 1.0) > tolerance or worst > tolerance:
            self.violation("%s: embedding of %r: norm %.6f, largest difference from the reference %.2e (bound %.0e)"
                           % (where, text, norm, worst, tolerance))


def play(ledger, name, rng, stop, scenarios, on_raise=None):
    """Runs scenarios ([(fn, weight)], picked at random by weight) until
    `stop` is set. A scenario that raises is a violation (a client-side
    failure fails the soak too); on_raise() then resets the caller."""
    total = sum(w for _, w in scenarios)
    while not stop.is_set():
        x = rng.uniform(0, total)
        for fn, w in scenarios:
            x -= w
            if x <= 0:
                break
        try:
            fn()
        except Exception as e:
            ledger.violation("%s: %s raised %r" % (name, fn.__name__, e))
            if on_raise:
                on_raise()


class StreamCheck:
    """The per-request invariants of one ZeroMQ connection: seq contiguous
    from 0 (accepted is 0; a rejected submit's error is 0 too), exactly one
    terminal, nothing after it. Messages for ids this connection never sent
    are violations too.

    Thread: owned by one traffic thread (its socket's reader)."""

    def __init__(self, ledger, where):
        self.ledger = ledger
        self.where = where
        self.next_seq = {}   # live id -> the seq its next message must carry
        self.ended = set()   # ids whose terminal arrived
        self.sent = set()    # every id submitted on this connection

    def submitted(self, rid):
        self.sent.add(rid)
        self.next_seq[rid] = 0

    def live(self):
        return [r for r in self.next_seq]

    def on_message(self, m):
        """Checks one arriving message; returns True when it is its
        request's terminal."""
        rid = m.get("id")
        t = m.get("t")
        if t == "error" and m.get("terminal") is False:
            # Rejects another message naming a live id: no seq, stream goes on.
            if "seq" in m:
                self.ledger.violation("%s: non-terminal error carries seq: %r" % (self.where, m))
            return False
        if rid is None or t not in ("accepted", "chunk") + TERMINAL:
            return False  # a reply to a connection-level message
        if rid in self.ended:
            self.ledger.violation("%s: %s for %s after its terminal message" % (self.where, t, rid))
            return False
        if rid not in self.next_seq:
            self.ledger.violation("%s: %s for id %r never submitted here" % (self.where, t, rid))
            return False
        want = self.next_seq[rid]
        if m.get("seq") != want:
            self.ledger.violation("%s: %s for %s has seq %r, want %d" % (self.where, t, rid, m.get("seq"), want))
        if want == 0 and t not in ("accepted", "error"):
            self.ledger.violation("%s: first message for %s is %s, not accepted" % (self.where, rid, t))
        if t == "error" and want == 0 and m.get("terminal") is not True:
            self.ledger.violation("%s: rejection of %s lacks terminal: true: %r" % (self.where, rid, m))
        self.next_seq[rid] = want + 1
        if t in TERMINAL:
            del self.next_seq[rid]
            self.ended.add(rid)
            return True
        return False
