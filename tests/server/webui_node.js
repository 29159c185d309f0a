// Runs the chat page's own <script> (served at GET /) in Node against a live server, with a
// minimal DOM stand-in, submits one message and checks the streamed reply lands in the page.
// Node >= 18 gives fetch, ReadableStream, TextDecoder, AbortController, performance.
// usage: node tests/server/webui_node.js http://127.0.0.1:PORT   (exit 0 and prints the reply)
const base = process.argv[2];
function el(id) {
  const e = { id, value: '', textContent: '', className: '', disabled: false, children: [], scrollTop: 0, listeners: {},
    appendChild(c) { this.children.push(c); return c; },
    addEventListener(t, f) { this.listeners[t] = f; },
    set innerHTML(v) { this.children = []; } };
  return e;
}
const els = {};
['model', 'temp', 'maxtok', 'key', 'clear', 'log', 'f', 'in', 'send', 'stop'].forEach(id => els[id] = el(id));
els.temp.value = '0'; els.maxtok.value = '12';
els.f.requestSubmit = () => els.f.onsubmit({ preventDefault() {} });
global.document = { getElementById: id => els[id] || (els[id] = el(id)), createElement: () => el('') };
const realFetch = fetch;
global.fetch = (url, opt) => realFetch(base + url, opt);   // the page uses relative URLs
(async () => {
  const html = await (await realFetch(base + '/')).text();
  const m = html.match(/<script>([\s\S]*)<\/script>/);   // the inline script (the others have src=)
  if (!m) { console.error('no script in the page'); process.exit(1); }
  if (/(src|href)=\s*"?(https?:)?\/\//.test(html)) { console.error('page loads external assets'); process.exit(1); }
  eval(m[1]);
  els.in.value = 'Say hello.';
  await els.f.onsubmit({ preventDefault() {} });
  const msgs = els.log.children.filter(c => c.className.startsWith('msg'));
  const reply = msgs.length === 2 ? msgs[1].textContent : '';
  const ok = msgs[0].textContent === 'Say hello.' && msgs[1].className === 'msg assistant' && reply.length > 0 &&
             els.model.textContent.startsWith('SmolLM2') && !els.send.disabled;
  console.log(JSON.stringify({ ok, reply, model: els.model.textContent, stats: (els.log.children[2] || {}).textContent }));
  process.exit(ok ? 0 : 1);
})().catch(e => { console.error(e); process.exit(1); });
