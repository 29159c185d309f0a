#!/usr/bin/env python3
"""The chat page (GET /) in headless Chromium from Debian's package, against a live `strata serve`.

Chromium is driven through the DevTools protocol over --remote-debugging-pipe (NUL-terminated
JSON messages: commands on fd 3, replies and events on fd 4), so only Python's standard library
is needed. The test types a message into the page's textarea with real input events, sends it
with Enter, waits for the streamed reply to finish (the page appends its stats line and
re-enables Send), then asks a second question by clicking Send. Each reply shown in the page must
be non-empty and equal, byte for byte, to what /v1/chat/completions returns for the same greedy
conversation (non-stream), the page must load nothing but its own origin, and no script error
may be thrown.

usage: python3 tests/server/test_webui_chromium.py [--bin build/strata] [--model PATH] [--chromium PATH]
Prints "N passed, N failed[, N skipped]" last, like the C tests (tests/test.h).
"""
import argparse, ctypes, http.client, json, os, re, select, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import check, done  # noqa: E402  (also clears proxy variables)
import harness  # noqa: E402

MAX_TOKENS = 24          # typed into the page's "max tokens" field; the API request uses the same


class Server(harness.Server):
    """The server the page talks to (2 slots, 1024 context); stop() looks for sanitizer
    reports (make test-asan runs this suite with a sanitizer build)."""
    def __init__(self, binary, model):
        super().__init__(binary, model, "--parallel", "2", "--ctx", "1024", timeout=120)

    def chat(self, messages, finish=False):
        """The API's greedy answer to messages (and its finish_reason with finish=True)."""
        st, _, data = self.raw("POST", "/v1/chat/completions",
                               {"messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS})
        body = json.loads(data)
        if st != 200:
            raise RuntimeError("API answered %d: %s" % (st, body))
        ch = body["choices"][0]
        return (ch["message"]["content"], ch["finish_reason"]) if finish else ch["message"]["content"]


def children():
    """(pid, state letter) of this process's children, from /proc."""
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()   # after "pid (comm) ": state, ppid, ...
        if int(fields[1]) == me:
            out.append((int(d), fields[0]))
    return out


class Chromium:
    """A headless Chromium in its own process group, spoken to over the DevTools pipe."""

    def __init__(self, exe, keep=(), timeout=30):
        self.keep = set(keep)                # our other children (the server): never touched
        self.profile = tempfile.mkdtemp(prefix="strata-chromium-")
        cmd_r, self.cmd_w = os.pipe()        # we write commands, Chromium reads fd 3
        self.resp_r, resp_w = os.pipe()      # Chromium writes fd 4, we read
        args = [exe, "--headless=new", "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--disable-breakpad", "--disable-dev-shm-usage", "--mute-audio", "--no-proxy-server",
                "--password-store=basic", "--use-mock-keychain", "--window-size=1000,800", "about:blank"]
        # no sandbox: it refuses to run as root, and CI containers often lack the user namespaces
        # it needs otherwise; the page comes from our own server on 127.0.0.1
        args.insert(1, "--no-sandbox")

        def child():                          # runs in the child before exec: fds 3 and 4
            os.dup2(cmd_r, 3)
            os.dup2(resp_w, 4)
        # become a subreaper (prctl PR_SET_CHILD_SUBREAPER) so the helper processes Chromium
        # forks are reparented to this test, which reaps them, instead of to PID 1, which in a
        # container may never reap them
        try:
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.errf, stderr=self.errf,
                                     pass_fds=(3, 4), preexec_fn=child, start_new_session=True)
        os.close(cmd_r)
        os.close(resp_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.timeout = timeout

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no DevTools message within the timeout")
            r, _, _ = select.select([self.resp_r], [], [], left)
            if r:
                data = os.read(self.resp_r, 1 << 16)
                if not data:
                    raise RuntimeError("Chromium closed the DevTools pipe: %s" % self.log()[-2000:])
                self.buf += data
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.cmd_w, data):]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def pump(self, seconds):
        """Collect events for a while (they arrive between replies)."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except TimeoutError:
            pass

    def log(self):
        self.errf.seek(0)
        return self.errf.read()

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        # the renderer, GPU and utility processes share the browser's process group
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.wait()
        # helpers that left the group (the crash handler starts its own session) were
        # reparented to us (subreaper): end and reap every child that is not the server
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            kids = [(pid, st) for pid, st in children() if pid not in self.keep]
            if not kids:
                break
            for pid, st in kids:
                if st != "Z":
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
            time.sleep(0.02)
        for fd in (self.cmd_w, self.resp_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, session):
        self.b, self.s = browser, session

    def js(self, expr, timeout=None):
        r = self.b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True},
                        self.s, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError("page script: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def wait(self, expr, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.js(expr):
                return True
            time.sleep(0.05)
        return False

    def click(self, selector):
        box = self.js("(()=>{const r=document.querySelector(%s).getBoundingClientRect();"
                      "return [r.x+r.width/2,r.y+r.height/2];})()" % json.dumps(selector))
        for t in ("mousePressed", "mouseReleased"):
            self.b.send("Input.dispatchMouseEvent", {"type": t, "x": box[0], "y": box[1], "button": "left",
                                                     "clickCount": 1}, self.s)

    def type_into(self, selector, text):
        """Click the field, select what is there, and type over it (real key/input events)."""
        self.click(selector)
        self.js("document.querySelector(%s).select()" % json.dumps(selector))
        self.b.send("Input.insertText", {"text": text}, self.s)

    def press_enter(self):
        for t in ("keyDown", "keyUp"):
            self.b.send("Input.dispatchKeyEvent", {"type": t, "key": "Enter", "code": "Enter",
                                                   "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13,
                                                   **({"text": "\r"} if t == "keyDown" else {})}, self.s)


DONE = "document.querySelectorAll('.stats').length>=%d && !document.getElementById('send').disabled"
# a reply's text as the API gave it (the page keeps it beside the rendered Markdown)
REPLIES = "[...document.querySelectorAll('.msg')].map(d=>[d.className,d._raw!==undefined?d._raw:d.textContent])"
SHOTS = None             # where the screenshots go (next to the binary)


def shot(b, sess, name):
    import base64
    data = b.send("Page.captureScreenshot", {"format": "png"}, sess)["data"]
    path = os.path.join(SHOTS, name)
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
    return path


def click_button(p, scope, label, index=-1):
    """Click (real mouse events) the button labelled `label` inside the elements matching scope."""
    ok = p.js("(()=>{const bs=[...document.querySelectorAll(%s)].filter(b=>b.textContent===%s);"
              "const b=bs.at(%d);if(!b)return false;document.querySelectorAll('#tclick').forEach(x=>x.removeAttribute('id'));"
              "b.id='tclick';return true;})()" % (json.dumps(scope + " button"), json.dumps(label), index))
    if ok:
        p.click("#tclick")
    return ok


def run(server, exe):
    t0 = time.monotonic()
    b = Chromium(exe, keep=[server.proc.pid])
    try:
        ver = b.send("Browser.getVersion")
        print("browser: %s" % ver.get("product"), file=sys.stderr)
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sess = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        p = Page(b, sess)
        for dom in ("Page.enable", "Runtime.enable", "Network.enable"):
            b.send(dom, session=sess)
        b.send("Page.navigate", {"url": server.base + "/"}, sess)
        check(p.wait("document.readyState==='complete' && document.getElementById('model').textContent!==''", 30),
              "page loads and shows the model id")
        model = p.js("document.getElementById('model').textContent")
        check((model or "").startswith("SmolLM2"), "header names the loaded model: %r" % model)
        t_load = time.monotonic() - t0

        # settings typed like a user would: greedy, a short reply
        p.type_into("#temp", "0")
        p.type_into("#maxtok", str(MAX_TOKENS))
        check(p.js("[document.getElementById('temp').value, document.getElementById('maxtok').value]")
              == ["0", str(MAX_TOKENS)], "settings typed into the page")

        # turn 1: type into the textarea and press Enter
        q1 = "Write one sentence about the sea."
        p.type_into("#in", q1)
        check(p.js("document.getElementById('in').value") == q1, "message typed into the input")
        p.press_enter()
        check(p.wait("document.getElementById('send').disabled || document.querySelectorAll('.stats').length>=1", 30),
              "Enter sends (Send is disabled while streaming)")
        check(p.wait(DONE % 1, 120), "first reply finishes streaming")
        msgs = p.js(REPLIES)
        check(p.js("document.getElementById('in').value") == "", "input cleared after sending")
        conv = [{"role": "user", "content": q1}]
        want1, fin1 = server.chat(conv, finish=True)
        got1 = msgs[1][1] if len(msgs) >= 2 else None
        check(len(msgs) == 2 and msgs[0] == ["msg user", q1] and msgs[1][0] == "msg assistant",
              "page shows the user message and one assistant reply: %r" % msgs)
        check(bool(got1) and got1 == want1, "reply in the page equals the API's greedy reply: page %r, API %r" % (got1, want1))

        # turn 2: the page sends the whole conversation; click Send this time
        q2 = "Now say it in French."
        p.type_into("#in", q2)
        p.click("#send")
        check(p.wait(DONE % 2, 120), "second reply finishes streaming")
        msgs = p.js(REPLIES)
        conv += [{"role": "assistant", "content": got1 or ""}, {"role": "user", "content": q2}]
        want2, fin2 = server.chat(conv, finish=True)
        got2 = msgs[3][1] if len(msgs) >= 4 else None
        check(len(msgs) == 4 and msgs[2] == ["msg user", q2] and msgs[3][0] == "msg assistant",
              "second turn: user message and reply: %r" % msgs)
        check(bool(got2) and got2 == want2, "second reply (multi-turn) equals the API's: page %r, API %r" % (got2, want2))
        stats = p.js("document.querySelector('.stats').textContent")
        check(re.match(r"\d+ tokens, [\d.]+ tok/s, first token \d+\.\d\d s$", stats or "") is not None, "stats line: %r" % stats)
        features(p, b, sess, server, conv, [fin1, fin2])

        # what the page did on the network and in its scripts
        b.pump(0.3)
        urls = [e["params"]["request"]["url"] for e in b.events
                if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == sess]
        foreign = [u for u in urls if not u.startswith(server.base + "/")]
        check(server.base + "/v1/chat/completions" in urls and not foreign,
              "the page loads only its own origin (foreign: %r)" % foreign)
        errors = [e["params"] for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
        errors += [e["params"] for e in b.events if e.get("method") == "Runtime.consoleAPICalled"
                   and e["params"].get("type") == "error"]
        check(not errors, "no script errors in the page: %r" % errors[:3])
        print("chromium: page loaded in %.1f s, both turns done in %.1f s" % (t_load, time.monotonic() - t0),
              file=sys.stderr)
    finally:
        b.close()


def features(p, b, sess, server, conv, finishes):
    """Markdown and code, the max-tokens marker, saved conversations, regenerate / edit, the
    system prompt, light and dark (screenshots of both)."""
    # the max-tokens marker: shown under exactly the replies the API also ends with "length"
    cuts = p.js("[...document.querySelectorAll('.msg.assistant')].map(d=>{let n=d.nextElementSibling;"
                "while(n&&!n.classList.contains('msg')){if(n.classList.contains('cut'))return n.textContent;n=n.nextElementSibling;}return null;})")
    check(len(cuts) == 2 and all((c is not None) == (f == "length") for c, f in zip(cuts, finishes))
          and any(c and "max tokens limit (%d)" % MAX_TOKENS in c for c in cuts) == ("length" in finishes),
          "max-tokens marker matches the API's finish_reason: %r %r" % (cuts, finishes))
    shot(b, sess, "webui-light.png")
    # Markdown and highlighted code, from a conversation stored in the browser and a reload
    md_reply = ("## Plan\n\nUse **bold** text and a list:\n\n- one\n- two\n\n```python\ndef add(a, b):\n"
                "    return a + b  # sum\n```\n\nRaw <img src=x onerror=\"window.pwned=1\"> stays text.")
    p.js("(()=>{const c=JSON.parse(localStorage.getItem('strata.convs'));c.push({id:'md1',title:'markdown test',system:'',"
         "t:Date.now()+1e6,messages:[{role:'user',content:'show code'},{role:'assistant',content:%s,stats:'5 tokens, 1.0 tok/s, first token 0.10 s',"
         "finish:'length',max:7}]});localStorage.setItem('strata.convs',JSON.stringify(c));})()" % json.dumps(md_reply))
    b.send("Page.reload", {}, sess)
    check(p.wait("document.readyState==='complete' && document.querySelectorAll('.msg').length===2", 30), "reload opens the newest conversation")
    r = p.js("(()=>{const m=document.querySelector('.msg.assistant');const code=m.querySelector('pre code');return {"
             "h2:!!m.querySelector('h2'),strong:m.querySelector('strong')&&m.querySelector('strong').textContent,li:m.querySelectorAll('li').length,"
             "code:code&&code.textContent,hl:code?code.className:'',spans:code?code.querySelectorAll('span[class^=hljs-]').length:0,"
             "fence:m.textContent.includes('```'),img:m.querySelectorAll('img').length,rawimg:m.textContent.includes('<img src=x'),"
             "pwned:!!window.pwned,cut:!!document.querySelector('.cut'),convs:document.querySelectorAll('#convs .conv').length,"
             "color:getComputedStyle(code||m).color}})()")
    check(r["h2"] and r["strong"] == "bold" and r["li"] == 2, "Markdown rendered (heading, bold, list): %r" % r)
    check(r["code"] == "def add(a, b):\n    return a + b  # sum\n" and "hljs" in r["hl"] and r["spans"] >= 2 and not r["fence"],
          "a ```python block is rendered as highlighted code: %r" % r)
    check(r["img"] == 0 and r["rawimg"] and not r["pwned"], "raw HTML in a reply stays text: %r" % r)
    check(r["cut"] and r["convs"] == 2, "saved conversations come back after a reload (2 listed), marker kept: %r" % r)
    check(p.js("[document.getElementById('temp').value, document.getElementById('maxtok').value]") == ["0", str(MAX_TOKENS)],
          "settings kept across the reload")
    shot(b, sess, "webui-code-light.png")
    # dark theme
    bg0 = p.js("getComputedStyle(document.body).backgroundColor")
    p.click("#theme")
    d = p.js("[document.body.className, getComputedStyle(document.body).backgroundColor, document.getElementById('hl-dark').disabled,"
             " document.getElementById('hl-light').disabled, localStorage.getItem('strata.theme')]")
    check(d[0] == "dark" and d[1] != bg0 and d[2] is False and d[3] is True and d[4] == "dark", "dark theme: %r (light bg %s)" % (d, bg0))
    shot(b, sess, "webui-code-dark.png")
    p.click("#theme")
    # back to the real conversation (the list's other entry): regenerate keeps the greedy reply
    click_button(p, "#convs .conv:not(.on)", p.js("document.querySelector('#convs .conv:not(.on) button').textContent"), 0)
    check(p.wait("document.querySelectorAll('.msg').length===4", 30), "the first conversation opens from the list")
    before = p.js(REPLIES)
    n0 = server.metrics().get("strata_requests_completed_total", 0)
    check(click_button(p, ".tools", "regenerate"), "a regenerate button under the last reply")
    check(p.wait(DONE % 2 + " && document.querySelectorAll('.msg').length===4", 120), "regenerated reply finishes")
    # that a new request ran is read from the server's count (this was a poll for the Send button's
    # disabled state, too brief to be seen on every run, and so a check that passed either way)
    t_end = time.monotonic() + 30
    while server.metrics().get("strata_requests_completed_total", 0) < n0 + 1 and time.monotonic() < t_end:
        time.sleep(0.05)
    check(server.metrics().get("strata_requests_completed_total", 0) == n0 + 1, "regenerate ran one request")
    check(p.js(REPLIES) == before, "regenerated greedy reply equals the first: %r" % p.js(REPLIES)[-1:])
    # copy puts the raw text out (the button says so)
    check(click_button(p, ".tools", "copy") and p.wait("[...document.querySelectorAll('.tools button')].some(b=>b.textContent==='copied')", 5),
          "copy button answers")
    # edit: the last user message goes back to the input, the turns after it leave
    check(click_button(p, ".tools", "edit"), "an edit button under the user message")
    check(p.wait("document.querySelectorAll('.msg').length===2", 30) and p.js("document.getElementById('in').value") == conv[2]["content"],
          "edit puts the message back in the input and drops what followed")
    # a system prompt in a new chat is sent first
    p.click("#clear")
    p.type_into("#system", "You answer in one word.")
    p.type_into("#in", "Name a color.")
    p.press_enter()
    check(p.wait(DONE % 1 + " && document.querySelectorAll('.msg').length===2", 120), "reply with a system prompt finishes")
    got = p.js(REPLIES)
    want = server.chat([{"role": "system", "content": "You answer in one word."}, {"role": "user", "content": "Name a color."}])
    check(len(got) == 2 and got[1][1] == want, "the system prompt is sent: page %r, API %r" % (got[-1:], want))
    print("chromium: screenshots in %s" % SHOTS, file=sys.stderr)


def find_chromium(given):
    for c in ([given] if given else []) + ["/usr/lib/chromium/chromium", "chromium", "chromium-browser"]:
        path = c if os.path.isabs(c) else shutil.which(c)
        if path and os.access(path, os.X_OK):
            return path
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("STRATA_BIN", os.path.join(os.environ.get("BUILD", "build"), "strata")))
    ap.add_argument("--model", default=os.environ.get("STRATA_MODEL", os.path.expanduser("~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf")))
    ap.add_argument("--chromium", default=None)
    a = ap.parse_args()
    global SHOTS
    SHOTS = os.path.join(os.path.dirname(os.path.abspath(a.bin)), "webui-screenshots")
    os.makedirs(SHOTS, exist_ok=True)
    if not os.path.exists(a.model):
        print("SKIP model: no model at %s" % a.model)
        print("0 passed, 0 failed, 1 skipped")
        return 0
    exe = find_chromium(a.chromium)
    # make test installs chromium (setup-sys): its absence is a failure, not a skip
    if check(exe is not None, "chromium found (Debian package 'chromium'; `make setup-sys` installs it)"):
        t0 = time.monotonic()
        s = None
        try:
            s = Server(a.bin, a.model)
            run(s, exe)
        except Exception as e:
            check(False, "chromium test raised %r" % e)
        finally:
            if s:
                check(s.stop() == 0, "server exits 0 on SIGTERM")
        print("total %.1f s" % (time.monotonic() - t0), file=sys.stderr)
    return done()


if __name__ == "__main__":
    sys.exit(main())
