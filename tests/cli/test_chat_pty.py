#!/usr/bin/env python3
"""strata chat on a terminal (a pty, driven with pexpect): line editing and history, \"\"\"
multi-line input, /commands, the context shift, Ctrl-C during a long prompt and at the prompt.

usage: python3 tests/cli/test_chat_pty.py --bin build/strata --model PATH
Prints "N passed, N failed" last, like the C tests.
"""
import argparse, os, re, sys, tempfile, time
import pexpect

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import check, done  # noqa: E402


PROMPT = "\r\n> "   # the prompt after a reply, a command's output or the banner
CACHE = tempfile.mkdtemp(prefix="strata-chat-test-")
CHILDREN = []   # every chat spawned, so a timed-out attempt's can be ended before the retry


def spawn(*args):
    env = dict(os.environ, STRATA_CACHE_DIR=CACHE, TERM="xterm")
    p = pexpect.spawn(BIN, ["chat", "-m", MODEL, "-t", "1", "--temp", "0", *args], env=env, encoding="utf-8",
                      timeout=120, dimensions=(50, 200))
    CHILDREN.append(p)
    p.expect(r"Ctrl-D exits\.")
    p.expect("> ")
    return p


def show(p):
    """The conversation as /show prints it: [(role, content)]."""
    p.sendline("/show")
    p.expect(r"(\d+) messages?:")
    p.expect("\r\n> ")
    body = p.before.replace("\r\n", "\n")[1:]
    return re.findall(r"\[(system|user|assistant)\] (.*?)(?=\n\[(?:system|user|assistant)\] |\Z)", body, re.S)


def editing_and_history():
    p = spawn("-n", "3")
    p.send("abc\x1b[D\x1b[DX\r")         # Left, Left, X: "aXbc"
    p.expect(PROMPT)
    p.send("\x1b[A\r")                    # Up recalls "aXbc"
    p.expect(PROMPT)
    conv = show(p)
    users = [c for r, c in conv if r == "user"]
    check(users == ["aXbc", "aXbc"], "editing + history: user messages %r" % users)
    check(all("^[[" not in c for _, c in conv), "no raw escape sequences in the messages")
    # multi-line input is one message
    p.send('"""\r')
    p.expect(r"\.\.\. ")
    p.send("line one\r")
    p.expect(r"\.\.\. ")
    p.send('line two"""\r')
    p.expect(PROMPT)
    conv = show(p)
    check(conv and conv[-2] == ("user", "line one\nline two"), "multi-line message: %r" % conv[-2:])
    # commands are not sent to the model
    p.sendline("/nosuch")
    p.expect("unknown command /nosuch")
    p.expect("> ")
    p.sendline("/set temp 0.5")
    p.expect(r"\[temp = 0.5\]")
    p.expect("> ")
    p.sendline("/clear")
    p.expect(r"\[conversation cleared\]")
    p.expect("> ")
    check(show(p) == [], "/clear empties the conversation")
    p.sendline("/bye")
    p.expect(pexpect.EOF)
    p.close()
    check(p.exitstatus == 0, "/bye exits 0 (got %r)" % p.exitstatus)
    hist = open(os.path.join(CACHE, "chat_history"), errors="replace").read()
    check("aXbc" in hist and "/bye" in hist, "history file kept: %r" % hist[-200:])
    # the history comes back in the next session
    p = spawn("-n", "2")
    p.send("\x1b[A\x1b[A\r")              # the last lines were /clear, /show, /bye: Up twice is /show
    p.expect(r"settings: temp 0, .* n-predict 2, context \d+\r\n0 messages:")
    p.expect("> ")
    p.sendcontrol("d")
    p.expect(pexpect.EOF)
    p.close()
    check(p.exitstatus == 0, "Ctrl-D exits 0 (got %r)" % p.exitstatus)


def context_shift():
    p = spawn("-c", "160", "-n", "24", "--system", "Answer briefly.")
    notices = 0
    for i in range(6):
        p.sendline("Tell me one fact about the number %d and why it matters to people." % (i + 10))
        i_ = p.expect([r"\[context full \(160 tokens\): dropped the (\d+) oldest messages?; the system prompt is kept\]", PROMPT])
        if i_ == 0:
            notices += 1
            p.expect(PROMPT)
    conv = show(p)
    check(notices >= 2, "context shift announced %d times in 6 turns of a 160-token context" % notices)
    check(conv and conv[0] == ("system", "Answer briefly.") and len(conv) < 13 and conv[-2][0] == "user"
          and "number 15" in conv[-2][1], "after the shifts: system kept, newest turn present: %r" % conv[:3])
    p.sendline("/bye")
    p.expect(pexpect.EOF)
    p.close()
    check(p.exitstatus == 0, "the chat went on to /bye (exit %r)" % p.exitstatus)


def ctrl_c():
    p = spawn("-c", "8192", "-n", "16")
    p.send('"""\r')
    for i in range(30):   # about 3,000 tokens in lines of ~400 bytes
        p.expect(r"\.\.\. ")
        p.send(" ".join("w%d-%d is one more word here." % (i, k) for k in range(12)) + "\r")
    p.expect(r"\.\.\. ")
    p.send('"""\r')
    # The closing line's echo says the chat has read it. A Ctrl-C that comes before that read
    # makes the terminal drop the unread input (ISIG without NOFLSH): the chat then waits at
    # "... " for a line that never comes. CI failed so (ci of 2026-12-03: "ctrl_c: Timeout
    # exceeded" under ASan at load, the fixed 1.5 s not enough); a Ctrl-C sent right after this
    # echo stops the prompt (tried 3 of 3), one sent right after the send hangs (1 of 1).
    p.expect('"""\r\n')
    time.sleep(1.5)       # well into the prompt
    t0 = time.time()
    p.sendintr()
    p.expect(r"\[stopped during the prompt\]")
    dt = time.time() - t0
    p.expect("> ")
    # 10 s: generous for a loaded machine under ASan (a prompt step is sized to ~0.1 s), and far
    # below reading the rest of a 3,000-token prompt (minutes on this machine), which a missed
    # Ctrl-C would do; that would also not print "[stopped during the prompt]"
    check(dt < 10.0, "Ctrl-C during a 3,000-token prompt answered in %.2f s" % dt)
    print("chat: Ctrl-C during a 3k-token prompt -> stopped in %.3f s" % dt)
    check(show(p) == [], "the interrupted message is not kept")
    p.sendintr()          # at the prompt: exit 130
    p.expect(pexpect.EOF)
    p.close()
    check(p.exitstatus == 130 or p.signalstatus == 2, "Ctrl-C at the prompt exits 130 (got %r/%r)" % (p.exitstatus, p.signalstatus))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/strata")
    ap.add_argument("--model", default=os.environ.get("STRATA_MODEL", ""))
    a = ap.parse_args()
    BIN, MODEL = a.bin, a.model
    if not (MODEL and os.path.exists(MODEL)):
        print("SKIP: no model", file=sys.stderr)
    else:
        # A part that times out (an expected output not seen in 120 s) runs once more: under ASan
        # on a loaded CI machine a terminal race can swallow input (the Ctrl-C one is fixed above;
        # editing_and_history timed out once in CI, 2026-12-03, and not in 6 runs here). The
        # second attempt's checks count, the first's passes are dropped (its failures stay), the
        # retry is printed with what the terminal showed; a real hang times out twice and fails.
        for t in (editing_and_history, context_shift, ctrl_c):
            for attempt in (1, 2):
                p0 = harness.passed
                try:
                    t()
                    break
                except (pexpect.TIMEOUT, pexpect.EOF) as e:
                    lines = str(e).splitlines()
                    shown = [l for l in lines if l.startswith(("buffer", "before"))]
                    for c in CHILDREN:
                        c.terminate(force=True)
                    CHILDREN.clear()
                    if attempt == 1:
                        harness.passed = p0
                        print("RETRY %s: %s; the terminal: %s" % (t.__name__, lines[0], " | ".join(shown)), flush=True)
                        continue
                    check(False, "%s: %s (twice); the terminal: %s" % (t.__name__, lines[0], " | ".join(shown)))
    sys.exit(done())
