// The ingestd console. It calls the server's JSON API with the token the
// operator enters and shows the answers. Every value from a response is
// put in the page as text (textContent, text nodes), never as markup:
// titles, texts, URIs and errors are written by outside authors. No
// value from a response becomes a link, an attribute the browser acts
// on, or code.
'use strict';

(function () {
  const TOKEN_KEY = 'ingestd.console.token';
  const view = document.getElementById('view');
  const notice = document.getElementById('notice');

  // el builds an element. props sets only plain properties and data-
  // attributes; children are nodes or strings (text nodes).
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, String(v));
      else if (k === 'onclick') e.addEventListener('click', v);
      else if (k === 'onsubmit') e.addEventListener('submit', v);
      else e[k] = v;
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  // api calls one route. A body, when given, is sent as JSON; a change
  // without one still says application/json, as the server asks of
  // every POST and DELETE.
  async function api(method, path, body) {
    const headers = { 'Accept': 'application/json' };
    const t = token();
    if (t) headers['Authorization'] = 'Bearer ' + t;
    const init = { method, headers, credentials: 'omit', cache: 'no-store', redirect: 'error' };
    if (method !== 'GET' && method !== 'HEAD') {
      headers['Content-Type'] = 'application/json';
      if (body !== undefined) init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (err) {
      return { ok: false, status: 0, message: 'the server did not answer: ' + err.message };
    }
    let data = null;
    try { data = await res.json(); } catch (_) { data = null; }
    if (res.ok) return { ok: true, status: res.status, data };
    const message = data && data.error && typeof data.error.message === 'string' ? data.error.message : res.statusText;
    return { ok: false, status: res.status, message };
  }

  // problem says why a route answered no, in the operator's words.
  function problem(res, what) {
    let text;
    switch (res.status) {
      case 401: text = what + ': sign in with a token (401).'; break;
      case 403: text = what + ': this token may not (403): ' + res.message; break;
      case 404: case 405: case 501: text = what + ': not available on this server (' + res.status + ').'; break;
      default: text = what + ': ' + (res.status ? res.status + ' ' : '') + res.message;
    }
    return el('p', { class: 'problem', 'data-status': res.status }, text);
  }

  // items returns the list an answer holds: the answer itself, or its
  // field key (GET /v1/installations answers {"installations": [...]}).
  function items(data, key) {
    if (Array.isArray(data)) return data;
    if (data && Array.isArray(data[key])) return data[key];
    return [];
  }

  function when(s) {
    if (!s) return 'never';
    const d = new Date(s);
    if (isNaN(d.getTime()) || d.getFullYear() < 1971) return 'never';
    return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }

  function seconds(ns) { return (Number(ns || 0) / 1e9).toFixed(2) + ' s'; }

  function table(columns, rows, rowProps) {
    return el('table', {},
      el('thead', {}, el('tr', {}, columns.map((c) => el('th', {}, c[0])))),
      el('tbody', {}, rows.map((r, i) => el('tr', rowProps ? rowProps(r, i) : {},
        columns.map((c) => { const v = c[1](r, i); return el('td', {}, v instanceof Node ? v : String(v ?? '')); })))));
  }

  function tier(t) { return el('span', { class: 'tier', 'data-tier': t || 'none' }, t || '(undeclared)'); }

  // routed is the page last routed to: a page whose data arrives after
  // the operator has gone on to another is not shown over it.
  let routed = '';

  // show puts a page's nodes in the view, unless another page has been
  // routed to since; a null or false node (a part left out) is skipped,
  // never written as text.
  function show(page, ...nodes) {
    if (page !== routed) return;
    view.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined && n !== false));
    view.setAttribute('data-page', page);
    view.setAttribute('data-state', 'ready');
  }

  function say(text) { notice.textContent = text || ''; }

  // Installations: health and the sync history.
  async function installations() {
    const res = await api('GET', '/v1/installations');
    if (!res.ok) return show('installations', el('h2', {}, 'Installations'), problem(res, 'Installations'));
    const runs = el('div', { id: 'runs' });
    const rows = items(res.data, 'installations');
    show('installations', el('h2', {}, 'Installations'),
      table([
        ['installation', (s) => s.id],
        ['kind', (s) => s.kind],
        ['tier', (s) => tier(s.tier)],
        ['documents', (s) => s.documents],
        ['health', (s) => el('span', { class: 'health', 'data-health': s.health && s.health.status }, s.health ? s.health.status : '')],
        ['reasons', (s) => (s.health && s.health.reasons || []).join('; ')],
        ['last pass', (s) => s.last_run ? when(s.last_run.started_at) + (s.last_run.error ? ' failed' : ' ok') : 'none'],
        ['last success', (s) => when(s.last_success_at)],
        ['failed in a row', (s) => s.consecutive_failures],
        ['next pass', (s) => s.next_run_at ? when(s.next_run_at) : ''],
        ['', (s) => el('span', {},
          el('button', { type: 'button', class: 'passes', onclick: () => showRuns(runs, s.id) }, 'passes'),
          el('button', { type: 'button', class: 'sync', onclick: () => syncNow(s.id) }, 'sync now'))],
      ], rows, (s) => ({ 'data-installation': s.id })),
      runs);
  }

  async function showRuns(into, id) {
    const res = await api('GET', '/v1/installations/' + encodeURIComponent(id) + '/runs?limit=20');
    if (!res.ok) return into.replaceChildren(problem(res, 'Passes of ' + id));
    into.replaceChildren(el('h3', {}, 'Last passes of ', el('code', {}, id)),
      table([
        ['started', (r) => when(r.started_at)],
        ['trigger', (r) => r.trigger],
        ['took', (r) => seconds(r.duration_ns)],
        ['seen', (r) => r.seen], ['added', (r) => r.added], ['changed', (r) => r.changed],
        ['unchanged', (r) => r.unchanged], ['deleted', (r) => r.deleted], ['failed', (r) => r.failed],
        ['skipped', (r) => r.skipped], ['queued', (r) => r.queued],
        ['complete', (r) => r.complete ? 'yes' : 'no'],
        ['error', (r) => el('span', { class: 'error-text' }, r.error || '')],
      ], items(res.data, 'runs')));
  }

  async function syncNow(id) {
    const res = await api('POST', '/v1/installations/' + encodeURIComponent(id) + '/sync');
    say(res.ok ? 'A sync of ' + id + ' is queued.' : problem(res, 'Sync ' + id).textContent);
  }

  // Provenance: the corpus by tier in force.
  async function provenance() {
    const res = await api('GET', '/v1/provenance');
    if (!res.ok) return show('provenance', el('h2', {}, 'Provenance'), problem(res, 'Provenance'));
    const r = res.data || {};
    show('provenance', el('h2', {}, 'Provenance'),
      el('dl', { class: 'facts' },
        el('dt', {}, 'documents'), el('dd', {}, String(r.total ?? 0)),
        el('dt', {}, 'written outside the organisation'), el('dd', {}, String(r.externally_authored ?? 0) + ' (' + Number(r.externally_authored_pct || 0).toFixed(1) + '%)'),
        el('dt', {}, 'orphaned (no installation declares them)'), el('dd', {}, String(r.orphaned ?? 0)),
        el('dt', {}, 'unmapped (stamped before tiers existed)'), el('dd', {}, String(r.undeclared ?? 0)),
        el('dt', {}, 'firewall mode'), el('dd', { 'data-mode': r.policy && r.policy.firewall_mode }, r.policy ? r.policy.firewall_mode : '')),
      el('h3', {}, 'By tier in force'),
      table([['tier', (t) => tier(t.tier)], ['documents', (t) => t.count], ['share', (t) => Number(t.pct || 0).toFixed(1) + '%']], r.tiers || []),
      el('h3', {}, 'By installation'),
      table([['installation', (i) => i.id], ['kind', (i) => i.kind], ['declared tier', (i) => tier(i.tier)], ['documents', (i) => i.documents],
        ['in force', (i) => (i.tiers || []).map((t) => t.tier + ': ' + t.count).join(', ')]], r.installations || []));
  }

  // Documents: an installation's documents, then one document's chunks.
  async function documents() {
    const prov = await api('GET', '/v1/provenance');
    if (!prov.ok) return show('documents', el('h2', {}, 'Documents'), problem(prov, 'Installations'));
    const list = el('div', { id: 'document-list' });
    const one = el('div', { id: 'document' });
    const insts = (prov.data && prov.data.installations) || [];
    show('documents', el('h2', {}, 'Documents'),
      el('p', {}, insts.map((i) => el('button', { type: 'button', 'data-installation': i.id, onclick: () => listDocuments(list, one, i.id) }, i.id))),
      list, one);
  }

  async function listDocuments(list, one, id) {
    const res = await api('GET', '/v1/installations/' + encodeURIComponent(id) + '/documents');
    if (!res.ok) return list.replaceChildren(problem(res, 'Documents of ' + id));
    const docs = items(res.data, 'documents');
    list.replaceChildren(el('h3', {}, 'Documents of ', el('code', {}, id)),
      table([
        ['title', (d) => el('span', { class: 'title' }, d.title || '')],
        ['tier', (d) => tier(d.tier)],
        ['status', (d) => d.status],
        ['', (d) => el('button', { type: 'button', onclick: () => showDocument(one, d.document_id || d.id) }, 'chunks')],
      ], docs));
  }

  async function showDocument(into, id) {
    const res = await api('GET', '/v1/documents/' + encodeURIComponent(id));
    if (!res.ok) return into.replaceChildren(problem(res, 'Document'));
    const d = res.data || {};
    into.replaceChildren(el('h3', { class: 'title' }, d.title || id),
      el('p', {}, tier(d.tier), ' ', d.status || '', ' ', el('code', {}, d.uri || '')),
      table([['#', (c, i) => i], ['tier', (c) => tier(c.tier)], ['where', (c) => c.locator || (c.heading_path || []).join(' > ')],
        ['text', (c) => el('span', { class: 'text' }, c.text || '')]], d.chunks || []));
  }

  // Search: the three blocks, each chunk's tier, the verdict and the
  // trusted view.
  function search() {
    const q = el('input', { type: 'search', id: 'query', placeholder: 'query', required: true, size: 50 });
    const k = el('input', { type: 'number', id: 'top-k', min: 1, max: 50, value: 8 });
    const tv = el('input', { type: 'checkbox', id: 'trusted-view', checked: true });
    const out = el('div', { id: 'answer' });
    const form = el('form', { id: 'search-form', onsubmit: (ev) => { ev.preventDefault(); retrieve(out, q.value, Number(k.value), tv.checked); } },
      el('label', { htmlFor: 'query' }, 'Query '), q, ' ',
      el('label', { htmlFor: 'top-k' }, 'top k '), k, ' ',
      tv, el('label', { htmlFor: 'trusted-view' }, ' with the trusted view'), ' ',
      el('button', { type: 'submit', id: 'search-button' }, 'Search'));
    show('search', el('h2', {}, 'Search playground'), form, out);
  }

  function verdict(v) {
    if (!v) return el('div', { class: 'verdict', 'data-verdict': 'blocked' }, 'No verdict: tools not allowed.');
    let state = 'allowed';
    let head = 'Tools allowed';
    const classes = Array.isArray(v.allowed_tool_classes) ? v.allowed_tool_classes : [];
    if (!v.tools_allowed) {
      state = 'blocked';
      head = classes.length ? 'Blocked: only ' + classes.join(', ') + ' tools allowed' : 'Blocked: no tools allowed';
    } else if (v.would_block) { state = 'would-block'; head = 'Allowed, would block (shadow mode)'; }
    return el('div', { class: 'verdict', 'data-verdict': state },
      el('strong', {}, head),
      el('span', {}, ' mode ', el('code', {}, v.mode || ''), ', reason ', el('code', {}, v.reason || '')),
      classes.length ? el('span', { class: 'classes' }, ', tool classes ', el('code', {}, classes.join(', '))) : null,
      (v.untrusted_document_ids || []).length ? el('div', {}, 'untrusted documents: ', (v.untrusted_document_ids || []).join(', ')) : null);
  }

  function block(name, chunks) {
    chunks = chunks || [];
    return el('div', { class: 'block', 'data-block': name },
      el('h4', {}, name + ' (' + chunks.length + ')'),
      chunks.length === 0 ? el('p', { class: 'empty' }, 'none') : table([
        ['tier', (c) => tier(c.tier)],
        ['title', (c) => el('span', { class: 'title' }, c.title || '')],
        ['installation', (c) => c.installation],
        ['kind', (c) => c.source_kind],
        ['score', (c) => Number(c.score || 0).toFixed(3)],
        ['via', (c) => c.via || ''],
        ['text', (c) => el('span', { class: 'text' }, c.text || '')],
      ], chunks, (c) => ({ 'data-tier': c.tier })));
  }

  function answer(title, a) {
    return el('section', { class: 'view-answer' },
      el('h3', {}, title), verdict(a.verdict),
      a.excluded_untrusted_documents ? el('p', {}, 'untrusted documents left out: ' + a.excluded_untrusted_documents) : null,
      block('primary', a.primary), block('expanded', a.expanded), block('rejected', a.rejected));
  }

  async function retrieve(out, query, topK, trustedView) {
    out.setAttribute('data-state', 'loading');
    const res = await api('POST', '/v1/retrieve', { query, top_k: topK || 8, trusted_view: trustedView });
    if (!res.ok) {
      out.replaceChildren(problem(res, 'Search'));
    } else {
      const a = res.data || {};
      out.replaceChildren(
        el('p', {}, 'grounding ', el('code', {}, a.grounding || ''), ', request ', el('code', {}, a.request_id || '')),
        answer('Answer', a),
        a.trusted_view ? answer('Trusted view', a.trusted_view) : null);
    }
    out.setAttribute('data-state', 'ready');
  }

  // Dead letters, with replay (admin scope).
  async function dlq() {
    const res = await api('GET', '/v1/dlq');
    if (!res.ok) return show('dlq', el('h2', {}, 'Dead letters'), problem(res, 'Dead letters'));
    const rows = items(res.data, 'dead_letters');
    show('dlq', el('h2', {}, 'Dead letters'),
      rows.length ? el('p', {}, el('button', { type: 'button', id: 'replay-all', onclick: replayAll }, 'Replay all')) : el('p', { class: 'empty' }, 'No dead letters.'),
      table([
        ['failed', (d) => when(d.failed_at)],
        ['subject', (d) => d.original_subject || d.subject],
        ['installation', (d) => d.job && d.job.installation || ''],
        ['deliveries', (d) => d.deliveries],
        ['reason', (d) => d.reason || ''],
        ['error', (d) => el('span', { class: 'error-text' }, d.error || '')],
        ['', (d) => el('button', { type: 'button', class: 'replay', 'data-id': d.id, onclick: (ev) => replay(ev.target, d.id) }, 'Replay')],
      ], rows, (d) => ({ 'data-id': d.id })));
  }

  async function replay(button, id) {
    button.disabled = true;
    const res = await api('POST', '/v1/dlq/' + encodeURIComponent(id) + '/replay');
    if (res.ok) {
      button.textContent = 'queued';
      button.setAttribute('data-result', 'queued');
      say('Dead letter ' + id + ' is queued again.');
    } else {
      button.disabled = false;
      button.setAttribute('data-result', 'refused');
      say(problem(res, 'Replay').textContent);
    }
  }

  async function replayAll() {
    const res = await api('POST', '/v1/dlq/replay');
    say(res.ok ? (res.data && res.data.replayed) + ' dead letters queued again.' : problem(res, 'Replay all').textContent);
    if (res.ok) dlq();
  }

  // Erasures: the tombstones that keep erased content out.
  async function erasures() {
    const res = await api('GET', '/v1/erasures');
    if (!res.ok) return show('erasures', el('h2', {}, 'Erasures'), problem(res, 'Erasures'));
    const rows = items(res.data, 'tombstones');
    show('erasures', el('h2', {}, 'Erasures and tombstones'),
      rows.length ? null : el('p', { class: 'empty' }, 'No tombstones.'),
      table([['created', (t) => when(t.created_at)], ['kind', (t) => t.kind], ['installation', (t) => t.installation || 'every'],
        ['key id', (t) => t.key_id], ['key', (t) => el('code', {}, String(t.key || '').slice(0, 16) + '…')]], rows));
  }

  function pct(n, d) { return d ? (100 * n / d).toFixed(1) + '%' : '0.0%'; }

  // Blocked turns: the rate over time and the documents that cause most
  // blocks (admin scope). A document opens with its chunks.
  async function blocks() {
    const res = await api('GET', '/v1/blocks');
    if (!res.ok) return show('blocks', el('h2', {}, 'Blocked turns'), problem(res, 'Blocked turns'));
    const r = res.data || {};
    const docs = r.documents || [];
    const one = el('div', { id: 'document' });
    show('blocks', el('h2', {}, 'Blocked turns'),
      el('dl', { class: 'facts' },
        el('dt', {}, 'counted since'), el('dd', {}, when(r.since)),
        el('dt', {}, 'turns answered'), el('dd', { id: 'turns-total' }, String(r.turns ?? 0)),
        el('dt', {}, 'blocked'), el('dd', { id: 'blocked-total' }, String(r.blocked ?? 0) + ' (' + pct(r.blocked, r.turns) + ')'),
        el('dt', {}, 'would block (shadow mode)'), el('dd', {}, String(r.would_block ?? 0))),
      el('h3', {}, 'Over time (' + Math.round((r.bucket_seconds || 300) / 60) + '-minute intervals, the last day)'),
      (r.buckets || []).length ? null : el('p', { class: 'empty' }, 'No turn answered yet.'),
      table([
        ['from', (b) => when(b.start)],
        ['turns', (b) => b.turns], ['blocked', (b) => b.blocked], ['would block', (b) => b.would_block],
        ['blocked share', (b) => el('span', { class: 'rate' },
          el('meter', { min: 0, max: 1, value: b.turns ? b.blocked / b.turns : 0 }), ' ', pct(b.blocked, b.turns))],
      ], r.buckets || []),
      el('h3', {}, 'Documents that cause most blocks'),
      docs.length ? null : el('p', { class: 'empty' }, 'No document has blocked a turn.'),
      table([
        ['document', (d) => el('code', {}, d.document_id)],
        ['installation', (d) => d.installation],
        ['blocks', (d) => d.blocks],
        ['last', (d) => when(d.last_at)],
        ['', (d) => el('button', { type: 'button', class: 'open-document', onclick: () => showDocument(one, d.document_id) }, 'open')],
      ], docs, (d) => ({ 'data-document': d.document_id })),
      r.untracked ? el('p', {}, String(r.untracked) + ' blocks by documents past the table\'s size are not listed.') : null,
      one);
  }

  // Gateway: the calls of upstream tools a tainted turn held (admin
  // scope, every installation).
  async function gatewayCalls() {
    const res = await api('GET', '/v1/gateway/decisions');
    if (!res.ok) return show('gateway', el('h2', {}, 'Gateway'), problem(res, 'Gateway calls'));
    const rows = items(res.data, 'decisions');
    show('gateway', el('h2', {}, 'Gateway: calls a tainted turn held'),
      rows.length ? null : el('p', { class: 'empty' }, 'No call has been held.'),
      table([
        ['at', (d) => when(d.at)],
        ['outcome', (d) => el('span', { class: 'outcome', 'data-outcome': d.outcome }, d.outcome)],
        ['upstream', (d) => d.upstream], ['tool', (d) => d.tool], ['class', (d) => d.class],
        ['scope', (d) => d.scope],
        ['tainted by', (d) => el('span', { class: 'taint' }, d.tainted_by || '')],
        ['call', (d) => el('code', { title: d.call_hash }, String(d.call_hash || '').slice(0, 19) + '…')],
        ['detail', (d) => el('span', { class: 'detail' }, d.detail || '')],
      ], rows, (d) => ({ 'data-outcome': d.outcome })));
  }

  const pages = { installations, provenance, documents, search, blocks, gateway: gatewayCalls, dlq, erasures };

  async function route() {
    const name = (location.hash || '#installations').slice(1);
    const page = Object.prototype.hasOwnProperty.call(pages, name) ? name : 'installations';
    for (const a of document.querySelectorAll('nav a')) {
      if (a.getAttribute('data-page') === page) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    routed = page;
    view.setAttribute('data-state', 'loading');
    say('');
    await pages[page]();
  }

  function signedIn() {
    document.getElementById('who').textContent = token() ? 'token set for this tab' : 'no token';
  }

  document.getElementById('signin').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = document.getElementById('token');
    const t = input.value.trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    input.value = '';
    signedIn();
    route();
  });
  document.getElementById('signout-button').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    signedIn();
    route();
  });
  window.addEventListener('hashchange', route);
  signedIn();
  route();
})();
