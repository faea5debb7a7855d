// Switchboard web chat — the page behind GET / and the widget iframe.
//
// Speaks the JSON frames of SPEC §7 over GET /ws. Plain ES2020, no build step,
// no dependencies. Message text only ever reaches the DOM through text nodes
// (textContent / append(string)); nothing user- or bot-supplied goes through
// innerHTML.
'use strict';

(() => {
  // ---------------------------------------------------------------- constants

  const TOKEN_KEY = 'switchboard.token';        // anonymous resume token (hello.token)
  const ROOMS_KEY = 'switchboard.rooms.';       // + platform_id: rooms are not in hello, so remember them
  const ELSEWHERE_KEY = 'switchboard.elsewhere'; // 'hidden': private chats leave out what was said elsewhere
  const HISTORY_LIMIT = 50;
  const TYPING_TTL_MS = 6000;                   // server repeats `typing` every 4 s; allow one miss
  const BACKOFF_BASE_MS = 500;
  const BACKOFF_MAX_MS = 10000;
  const MAX_FRAME_BYTES = 65536;                // server answers too_large above this
  const GROUP_WINDOW_MS = 5 * 60 * 1000;        // consecutive bubbles from one sender merge visually
  const TERMINAL = new Set(['done', 'failed', 'refused']);

  const EMBED = new URLSearchParams(location.search).get('embed') === '1';

  // localStorage can throw (third-party iframe with storage blocked, private
  // modes). The chat must still work; identity just won't survive a reload.
  const storage = {
    get(k) { try { return localStorage.getItem(k); } catch { return null; } },
    set(k, v) { try { localStorage.setItem(k, v); } catch { /* not persisted */ } },
    remove(k) { try { localStorage.removeItem(k); } catch { /* ignore */ } },
  };

  // -------------------------------------------------------------------- state

  const state = {
    creds: null,                 // {kind:'signed',user,sig} | {kind:'token',token,source} | {kind:'anon'}
    platformId: null,            // hello.platform_id, e.g. web-bryan
    user: null,                  // hello.user, e.g. user-bryan
    bots: [],                    // [{id,name}] in hello order
    botsById: new Map(),
    goneBots: new Map(),         // id -> name: bots a config reload removed while this page was open
    showElsewhere: true,         // private chats show (labelled) what was said in rooms and on other platforms
    rooms: new Map(),            // name -> {name, bots:[id], open:boolean, joined:boolean}
    convs: new Map(),            // key ('b:<bot>' | 'r:<room>') -> conversation
    current: null,               // key of the open conversation
    pending: new Map(),          // client_id -> {conv, local}: sent or queued, not yet acked
    outbox: [],                  // locals composed while disconnected, in order
    delegations: new Map(),      // id -> delegation record (+ .el)
    embedVisible: true,          // widget panel open (told by widget.js via postMessage)
    joins: new Map(),            // client_id -> room name: joins not yet answered
    histories: new Map(),        // client_id -> conversation key: history requests not yet answered
    invites: new Map(),          // client_id -> {room, user}: invites not yet answered
    clientSeq: 0,
  };

  const conn = {
    ws: null,
    ready: false,                // hello received on the current socket
    attempt: 0,                  // consecutive failed attempts, drives the backoff
    timer: null,
    countdown: null,
    everConnected: false,
    preOpenFailures: 0,          // sockets that died before opening while the server answered HTTP
    authFailed: false,
  };

  const dom = {};
  const sideItems = new Map();   // conversation key -> sidebar <button>

  // ---------------------------------------------------------------- utilities

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  function hue(id) {
    // FNV-1a: similar ids ("bot1", "bot2") still land on well-spread hues.
    let h = 0x811c9dc5;
    for (const ch of String(id)) h = Math.imul(h ^ ch.codePointAt(0), 0x01000193) >>> 0;
    return h % 360;
  }

  function initials(name) {
    const words = String(name || '?').trim().split(/[\s_\-.]+/).filter(Boolean);
    if (!words.length) return '?';
    const first = (w) => Array.from(w)[0] || '';
    const s = words.length === 1 ? Array.from(words[0]).slice(0, 2).join('') : first(words[0]) + first(words[words.length - 1]);
    return s.toUpperCase();
  }

  function avatar(seed, label, extra) {
    const a = el('span', 'avatar' + (extra ? ' ' + extra : ''), label);
    a.style.setProperty('--hue', String(hue(seed)));
    a.setAttribute('aria-hidden', 'true');
    return a;
  }

  function convAvatar(conv, extra) {
    if (conv.kind === 'room') return avatar(conv.id, '#', 'avatar-room' + (extra ? ' ' + extra : ''));
    return avatar(conv.id, initials(botName(conv.id)), extra);
  }

  function botName(id) {
    const b = state.botsById.get(id);
    return (b && b.name) || state.goneBots.get(id) || id || 'Bot';
  }

  function newClientId() {
    state.clientSeq += 1;
    // Unique across tabs of the same user: time + random + per-tab counter.
    return `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}-${state.clientSeq}`;
  }

  function parseTime(t) {
    const d = t ? new Date(t) : null;
    return d && !Number.isNaN(d.getTime()) ? d : null;
  }

  const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
  const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'short' });
  const dayFmt = new Intl.DateTimeFormat(undefined, { weekday: 'long', month: 'long', day: 'numeric' });

  function dayKey(d) { return d ? `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}` : ''; }

  function dayLabel(d) {
    const today = new Date();
    const yesterday = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 1);
    if (dayKey(d) === dayKey(today)) return 'Today';
    if (dayKey(d) === dayKey(yesterday)) return 'Yesterday';
    return dayFmt.format(d);
  }

  function utf8Length(s) { return new TextEncoder().encode(s).length; }

  // Plain text with http(s) links made clickable. Built from text nodes and
  // <a> elements only, so .text's textContent is exactly the message text.
  const URL_RE = /\bhttps?:\/\/[^\s<>"']+/gi;
  function fillText(node, text) {
    text = String(text == null ? '' : text);
    let last = 0;
    for (const m of text.matchAll(URL_RE)) {
      let url = m[0];
      const trail = url.match(/[)\].,!?;:'"]+$/);   // "see https://x.io." — the dot is prose
      if (trail) url = url.slice(0, -trail[0].length);
      if (!url) continue;
      if (m.index > last) node.append(text.slice(last, m.index));
      const a = el('a', null, url);
      a.href = url;                                   // regex guarantees http(s): no javascript: URLs
      a.target = '_blank';
      a.rel = 'noopener noreferrer nofollow';
      node.append(a);
      last = m.index + url.length;
    }
    if (last < text.length) node.append(text.slice(last));
  }

  function toast(message, kind) {
    const t = el('div', 'toast' + (kind ? ' toast-' + kind : ''));
    t.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    t.append(el('span', 'toast-text', message));
    const x = el('button', 'toast-close', '×');
    x.type = 'button';
    x.setAttribute('aria-label', 'Dismiss');
    const remove = () => { t.classList.add('leaving'); setTimeout(() => t.remove(), 200); };
    x.addEventListener('click', remove);
    t.append(x);
    dom.toasts.append(t);
    while (dom.toasts.children.length > 4) dom.toasts.firstElementChild.remove();
    setTimeout(remove, kind === 'error' ? 8000 : 5000);
  }

  // ------------------------------------------------------------- credentials

  // Page URL → /ws query (SPEC §3): user+sig (verified), else token (resume an
  // anonymous identity, from the URL or remembered), else nothing (new anon).
  function readCreds() {
    const p = new URLSearchParams(location.search);
    if (p.has('user') || p.has('sig')) return { kind: 'signed', user: p.get('user') || '', sig: p.get('sig') || '' };
    const t = p.get('token');
    if (t) return { kind: 'token', token: t, source: 'url' };
    const stored = storage.get(TOKEN_KEY);
    if (stored) return { kind: 'token', token: stored, source: 'storage' };
    return { kind: 'anon' };
  }

  function wsQuery() {
    const q = new URLSearchParams();
    const c = state.creds;
    if (c.kind === 'signed') { q.set('user', c.user); q.set('sig', c.sig); }
    else if (c.kind === 'token') q.set('token', c.token);
    const s = q.toString();
    return s ? '?' + s : '';
  }

  // Where an artifact's content is: /artifacts/{id} with the /ws credentials
  // (SPEC §8), so previews and download links work as plain URLs.
  function artifactUrl(id) {
    return `/artifacts/${encodeURIComponent(id)}${wsQuery()}`;
  }

  function wsUrl() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${proto}//${location.host}/ws${wsQuery()}`;
  }

  // ---------------------------------------------------------------- connection

  function setStatus(s, label) {
    dom.status.dataset.state = s;           // connecting | open | closed (browser tests rely on this)
    dom.statusLabel.textContent = label;
    dom.status.title = label;
  }

  function connect() {
    clearTimeout(conn.timer);
    clearInterval(conn.countdown);
    conn.timer = null;
    if (conn.authFailed) return;
    if (conn.ws && conn.ws.readyState <= WebSocket.OPEN) return;

    setStatus('connecting', conn.everConnected ? 'Reconnecting…' : 'Connecting…');
    let opened = false;
    let sock;
    try {
      sock = new WebSocket(wsUrl());
    } catch (err) {
      scheduleReconnect();
      return;
    }
    conn.ws = sock;
    sock.addEventListener('open', () => { opened = true; });
    sock.addEventListener('message', (ev) => {
      if (sock !== conn.ws) return;
      let frame;
      try { frame = JSON.parse(ev.data); } catch { return; }
      if (frame && typeof frame === 'object') handleFrame(frame);
    });
    // 'error' is always followed by 'close'; all the handling happens there.
    sock.addEventListener('close', () => {
      if (sock !== conn.ws) return;
      conn.ws = null;
      onDisconnected(opened);
    });
  }

  function onDisconnected(opened) {
    const wasReady = conn.ready;
    conn.ready = false;
    failInFlight('Connection lost before the message was confirmed.');
    for (const conv of state.convs.values()) clearTyping(conv);
    for (const conv of state.convs.values()) conv.loading = false;

    // A browser WebSocket never exposes the HTTP status of a refused upgrade,
    // so when a socket carrying credentials dies before opening, ask the same
    // URL over plain HTTP: the gateway answers 401 for a bad sig/token.
    if (!opened && !wasReady && state.creds.kind !== 'anon') {
      probeAuth().then((status) => {
        if (status === 401) return authFailed();
        // Server reachable and handling /ws (it just refuses a non-upgrade
        // GET) yet the socket keeps failing: the credentials are the likely cause.
        if (status === 400 || status === 405 || status === 426) conn.preOpenFailures += 1;
        if (conn.preOpenFailures >= 3) return authFailed();
        scheduleReconnect();
      });
      return;
    }
    scheduleReconnect();
  }

  async function probeAuth() {
    try {
      const res = await fetch(`/ws${wsQuery()}`, { cache: 'no-store', credentials: 'same-origin' });
      return res.status;
    } catch {
      return 0; // network down / server down: plain reconnect
    }
  }

  function scheduleReconnect() {
    if (conn.authFailed) return;
    clearTimeout(conn.timer);
    clearInterval(conn.countdown);
    const exp = BACKOFF_BASE_MS * 2 ** Math.min(conn.attempt, 10);
    // Jitter so many tabs don't reconnect in lockstep after a gateway restart.
    const delay = Math.min(BACKOFF_MAX_MS, Math.round(exp * (0.8 + Math.random() * 0.4)));
    conn.attempt += 1;
    const until = Date.now() + delay;
    const label = () => {
      const s = Math.max(1, Math.ceil((until - Date.now()) / 1000));
      setStatus('closed', conn.everConnected ? `Reconnecting in ${s}s…` : `Can't reach the gateway — retrying in ${s}s…`);
    };
    label();
    conn.countdown = setInterval(label, 1000);
    conn.timer = setTimeout(connect, delay);
  }

  // Skip the remaining backoff when the network or the tab comes back.
  function reconnectNow() {
    if (conn.authFailed || conn.ws) return;
    conn.attempt = 0;
    connect();
  }

  function authFailed() {
    conn.authFailed = true;
    clearTimeout(conn.timer);
    clearInterval(conn.countdown);
    setStatus('closed', 'Not connected');
    const c = state.creds;
    dom.authDetail.textContent = c.kind === 'signed'
      ? 'The gateway did not accept this link’s signature. You can still chat as an anonymous visitor.'
      : 'Your saved session could not be resumed. You can continue as a new anonymous visitor.';
    dom.authBanner.hidden = false;
    updateComposerState();
  }

  function continueAnonymously() {
    const url = new URL(location.href);
    const hadToken = state.creds.kind === 'token';
    for (const k of ['user', 'sig', 'token']) url.searchParams.delete(k);
    history.replaceState(history.state, '', url.toString());
    if (hadToken) storage.remove(TOKEN_KEY);   // that token is dead; a fresh identity comes in hello
    state.creds = readCreds();                 // may still pick up an older remembered anon token
    retryAuth();
  }

  function retryAuth() {
    conn.authFailed = false;
    conn.preOpenFailures = 0;
    conn.attempt = 0;
    dom.authBanner.hidden = true;
    updateComposerState();
    connect();
  }

  function sendFrame(frame) {
    const ws = conn.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    try { ws.send(JSON.stringify(frame)); return true; } catch { return false; }
  }

  // ------------------------------------------------------------------ frames

  function handleFrame(f) {
    switch (f.type) {
      case 'hello': onHello(f); break;
      case 'joined': onJoined(f); break;
      case 'invited': onInvited(f); break;
      case 'ack': onAck(f); break;
      case 'message': onMessage(f); break;
      case 'typing': onTyping(f); break;
      case 'delegation': upsertDelegation(f); break;
      case 'history': onHistory(f); break;
      case 'bots': onBots(f); break;
      case 'finding': onFinding(f); break;
      case 'findings': onFindings(f); break;
      case 'context': onContext(f); break;
      case 'error': onError(f); break;
      default: break; // forward compatible: ignore unknown frames
    }
  }

  function onHello(f) {
    const identityChanged = state.platformId != null && state.platformId !== f.platform_id;
    if (identityChanged) resetConversations();
    const firstForIdentity = state.platformId !== f.platform_id;
    state.platformId = f.platform_id || '';
    state.user = f.user || state.platformId;

    // Only anonymous visitors get a remembered token; a signed page re-signs every load.
    if (state.creds.kind !== 'signed' && f.token) {
      storage.set(TOKEN_KEY, f.token);
      state.creds = { kind: 'token', token: f.token, source: 'storage' };
    }

    conn.ready = true;
    conn.attempt = 0;
    conn.preOpenFailures = 0;
    conn.everConnected = true;
    setStatus('open', 'Connected');

    setBots(Array.isArray(f.bots) ? f.bots : []);
    if (firstForIdentity) loadRooms();
    renderIdentity();

    // Room membership lives with the connection, so rejoin remembered rooms.
    for (const room of state.rooms.values()) sendFrame(joinFrame(room));

    const cur = state.current && state.convs.get(state.current);
    if (!cur || !conversationExists(cur)) {
      selectConv(initialConvKey(), { focus: !isTouch() });
    } else {
      // Re-history the open chat: anything said while we were away shows up.
      requestHistory(cur);
      renderHeader();
    }
    flushOutbox();
    updateComposerState();
  }

  function initialConvKey() {
    const wanted = new URLSearchParams(location.search).get('bot');
    if (wanted && state.botsById.has(wanted)) return 'b:' + wanted;
    if (state.bots.length) return 'b:' + state.bots[0].id;
    const room = state.rooms.values().next().value;
    return room ? 'r:' + room.name : null;
  }

  function conversationExists(conv) {
    if (conv.kind !== 'bot') return state.rooms.has(conv.id);
    return state.botsById.has(conv.id) || (botGone(conv.id) && keepGone(conv.id));
  }

  function onJoined(f) {
    const name = String(f.chat || '');
    if (!name) return;
    const bots = Array.isArray(f.bots) ? f.bots : [];
    for (const b of bots) ensureBot(b.id, b.name);
    const room = addRoom(name, bots.map((b) => b.id));
    room.joined = true;
    saveRooms();
    updateSideItem(getConv('room', name));
    if (state.current === 'r:' + name) renderHeader();
    for (const [id, n] of state.joins) if (n === name) state.joins.delete(id);
  }

  function onInvited(f) {
    for (const [id, inv] of state.invites) {
      if (inv.room === f.chat && inv.user === f.user) state.invites.delete(id);
    }
    toast(`Invited ${f.user} to #${f.chat}. They can join it by its name now.`, 'info');
  }

  function onAck(f) {
    const entry = state.pending.get(f.client_id);
    if (!entry) return;
    state.pending.delete(f.client_id);
    confirmLocal(entry.conv, entry.local, f.id);
    markQueued(entry.conv, f.id, f.queued);
  }

  // ------------------------------------------------------------ queued sends
  // ack.queued counts the turns ahead of a message in its session (the
  // running one included). A message that waits is marked "Queued · N
  // ahead" until the first reply to it arrives.

  function markQueued(conv, id, queued) {
    const n = Number(queued);
    const m = conv.msgs.get(String(id));
    if (!m || !Number.isInteger(n) || n <= 0) return;
    m.queued = n;
    refreshStored(conv, m);
  }

  // A bot's message that answers a queued one ends its wait.
  function answeredQueued(conv, m) {
    if (m.from.kind === 'human' || m.replyTo == null) return;
    const asked = conv.msgs.get(m.replyTo);
    if (!asked || !asked.queued) return;
    delete asked.queued;
    refreshStored(conv, asked);
  }

  function refreshStored(conv, m) {
    if (state.current !== conv.key) return;
    const node = dom.messages.querySelector(`.msg[data-id="${CSS.escape(String(m.id))}"]`);
    if (node) node.replaceWith(buildMsgEl(m, conv, node.classList.contains('cont')));
  }

  // A local (optimistic) message became a stored one with server id `id`.
  function confirmLocal(conv, local, id) {
    const key = String(id);
    conv.local = conv.local.filter((l) => l !== local);
    state.pending.delete(local.clientId);
    const node = findLocalEl(local.clientId);
    if (conv.msgs.has(key)) {
      // Already shown (echo from the server arrived first): drop the duplicate bubble.
      if (node) node.remove();
      return;
    }
    const msg = {
      id, chat: local.chat, bot: local.bot, text: local.text, time: local.time,
      from: { kind: 'human', id: state.platformId, name: 'You' },
    };
    conv.msgs.set(key, msg);
    conv.last = msg;
    if (node) node.replaceWith(buildMsgEl(msg, conv, node.classList.contains('cont')));
    updateSideItem(conv);
  }

  function onMessage(f) {
    const m = normalizeMessage(f);
    if (!m) return;
    const conv = convForChat(m.chat, m.bot, m.chatType === 'group');
    if (!conv) return;
    if (conv.kind === 'bot') ensureBot(conv.id, m.from.kind !== 'human' ? m.from.name : null);
    const key = String(m.id);
    if (conv.msgs.has(key)) return; // dedupe: several tabs, history overlap

    if (m.from.kind === 'human' && isSelf(m, conv)) {
      // Our own message echoed before its ack: adopt the pending bubble.
      const local = conv.local.find((l) => l.text === m.text && l.status !== 'queued');
      if (local) { confirmLocal(conv, local, m.id); return; }
    } else {
      // A reply ends that bot's "typing…" in that chat.
      clearTyping(conv, m.bot);
      if (m.from.id && m.from.id !== m.bot) clearTyping(conv, m.from.id);
      answeredQueued(conv, m);
    }

    if (m.delegation) {
      upsertDelegation(m.delegation);
      delegationSeenIn(conv, m);
    }
    conv.msgs.set(key, m);
    conv.last = m;

    const own = m.from.kind === 'human' && isSelf(m, conv);
    if (!own && (state.current !== conv.key || pageHidden())) conv.unread += 1;
    if (state.current === conv.key) addToView(conv, m);
    updateSideItem(conv);
    updateUnreadTotals();
  }

  function onTyping(f) {
    if (!f.bot) return;
    const conv = convForChat(f.chat, f.bot);
    if (!conv) return;
    const prev = conv.typing.get(f.bot);
    if (prev) clearTimeout(prev);
    conv.typing.set(f.bot, setTimeout(() => { conv.typing.delete(f.bot); typingChanged(conv); }, TYPING_TTL_MS));
    if (!prev) typingChanged(conv);
  }

  function onHistory(f) {
    const conv = f.bot ? getConv('bot', String(f.bot)) : convForChat(f.chat, null);
    if (!conv) return;
    if (conv.kind === 'bot') ensureBot(conv.id);
    const wasLoaded = conv.loaded;
    conv.loading = false;
    conv.loaded = true;
    const list = Array.isArray(f.messages) ? f.messages : [];
    for (const raw of list) {
      const m = normalizeMessage(raw);
      if (!m) continue;
      conv.msgs.set(String(m.id), m);
      if (m.delegation) {
        upsertDelegation(m.delegation);
        delegationSeenIn(conv, m);
      }
    }
    dropDeliveredLocals(conv);
    const items = visibleItems(conv);
    conv.last = items.length ? items[items.length - 1] : null;
    updateSideItem(conv);
    if (state.current === conv.key) renderMessages(wasLoaded);
  }

  function onError(f) {
    if (f.client_id && findingsAsked.delete(f.client_id)) return; // the board is an extra: no toast
    if (f.client_id && contextAsked.delete(f.client_id)) return;  // so is the context panel
    const text = errorText(f);
    const entry = f.client_id ? state.pending.get(f.client_id) : null;
    if (entry) {
      state.pending.delete(f.client_id);
      const { conv, local } = entry;
      local.status = 'failed';
      local.error = text;
      local.retryable = f.code === 'rate_limited';
      refreshLocal(local);
      if (state.current !== conv.key) toast(`${convTitle(conv)}: ${text}`, 'error');
      return;
    }
    // A refused join: a closed room we are not a member of (not_allowed),
    // a bad name. The room leaves the sidebar unless the refusal was
    // passing (rate_limited, unavailable).
    const joinName = f.client_id ? state.joins.get(f.client_id) : undefined;
    if (joinName !== undefined) {
      state.joins.delete(f.client_id);
      if (f.code !== 'rate_limited' && f.code !== 'unavailable' && state.rooms.has(joinName)) removeRoom(joinName);
      toast(`Couldn't join “${joinName}”: ${text}`, 'error');
      return;
    }
    const histKey = f.client_id ? state.histories.get(f.client_id) : undefined;
    if (histKey !== undefined) {
      state.histories.delete(f.client_id);
      const conv = state.convs.get(histKey);
      if (!conv) return; // its room was refused and removed: said already
      conv.loading = false;
      if (state.current === conv.key) renderMessages(true);
      toast(`${convTitle(conv)}: ${text}`, 'error');
      return;
    }
    const inv = f.client_id ? state.invites.get(f.client_id) : undefined;
    if (inv) {
      state.invites.delete(f.client_id);
      toast(`Couldn't invite ${inv.user} to #${inv.room}: ${text}`, 'error');
      return;
    }
    toast(text, 'error');
  }

  function errorText(f) {
    const fallback = {
      bad_request: 'The gateway could not understand that request.',
      unknown_bot: 'That bot is not available.',
      unknown_chat: 'That room does not exist.',
      too_large: 'That message is too long.',
      rate_limited: 'Slow down — too many messages at once.',
      not_allowed: 'You are not a member of that room.',
    };
    return (f.message && String(f.message)) || fallback[f.code] || 'Something went wrong.';
  }

  // ---------------------------------------------------------- conversations

  function getConv(kind, id) {
    const key = (kind === 'bot' ? 'b:' : 'r:') + id;
    let conv = state.convs.get(key);
    if (!conv) {
      conv = {
        key, kind, id,
        msgs: new Map(),    // String(server id) -> message
        local: [],          // optimistic sends without a server id yet
        unread: 0,
        loaded: false,
        loading: false,
        typing: new Map(),  // bot id -> expiry timer
        last: null,
      };
      state.convs.set(key, conv);
    }
    return conv;
  }

  // Which pane a chat ID belongs to (SPEC §3/§7): `<platform_id>:<bot>` is the
  // private chat with that bot, anything else is a room name. `group`: the
  // frame said so (chat_type), whatever the name looks like.
  function convForChat(chat, bot, group) {
    chat = String(chat == null ? '' : chat);
    if (!chat) return bot ? getConv('bot', String(bot)) : null;
    const pid = state.platformId;
    if (!group && pid && chat.startsWith(pid + ':')) return getConv('bot', chat.slice(pid.length + 1));
    if (state.rooms.has(chat)) return getConv('room', chat);
    // The same session's private chat on another platform (history by bot spans platforms).
    if (!group && bot && chat.endsWith(':' + bot)) return getConv('bot', bot);
    // A room we did not know about — joined from another tab, say.
    addRoom(chat, []);
    saveRooms();
    return getConv('room', chat);
  }

  function convTitle(conv) {
    return conv.kind === 'bot' ? botName(conv.id) : '#' + conv.id;
  }

  function isSelf(m, conv) {
    if (m.from.kind !== 'human') return false;
    // In a private pane every human message is this user's (possibly from
    // Telegram/Discord: history by bot is the whole cross-platform session).
    if (conv.kind === 'bot') return true;
    return m.from.id === state.platformId || m.from.id === state.user;
  }

  function normalizeMessage(raw) {
    if (!raw || raw.id == null) return null;
    const from = raw.from && typeof raw.from === 'object' ? raw.from : {};
    // 'system': the gateway's own answer (a /stage command's), no bot's.
    const kind = from.kind === 'human' ? 'human' : from.kind === 'system' ? 'system' : 'bot';
    return {
      id: raw.id,
      chat: raw.chat,
      platform: raw.platform ? String(raw.platform) : '',       // absent: the web
      chatType: raw.chat_type === 'group' ? 'group' : '',
      bot: raw.bot || (kind === 'bot' ? from.id : undefined),
      from: { kind, id: from.id || (kind === 'bot' ? raw.bot : ''), name: from.name || '' },
      text: raw.text == null ? '' : String(raw.text),
      time: raw.time,
      delegation: raw.delegation && typeof raw.delegation === 'object' ? raw.delegation : null,
      failed: raw.failed === true,     // the apology of a failed brain turn
      replyTo: raw.reply_to != null ? String(raw.reply_to) : null,
      artifacts: Array.isArray(raw.artifacts) ? raw.artifacts.filter((a) => a && a.id != null) : [],
    };
  }

  function compareIds(a, b) {
    const x = Number(a.id), y = Number(b.id);
    if (Number.isFinite(x) && Number.isFinite(y)) return x - y;
    const ta = parseTime(a.time), tb = parseTime(b.time);
    return (ta ? ta.getTime() : 0) - (tb ? tb.getTime() : 0) || String(a.id).localeCompare(String(b.id));
  }

  // Stored messages in server order, then this tab's unconfirmed sends.
  function orderedItems(conv) {
    return [...conv.msgs.values()].sort(compareIds).concat(conv.local);
  }

  function resetConversations() {
    for (const conv of state.convs.values()) clearTyping(conv);
    state.convs.clear();
    state.rooms.clear();
    state.pending.clear();
    state.outbox = [];
    state.delegations.clear();
    contexts.clear();
    state.goneBots.clear();
    state.current = null;
    for (const b of sideItems.values()) b.remove();
    sideItems.clear();
    renderDelegationPanel();
    dom.messages.replaceChildren();
  }

  // --------------------------------------------------------------- bots/rooms

  // The web's bots, from hello or a bots frame. A bot that was listed and
  // is not any more is gone: its chat stays readable (see noteGoneBots).
  function setBots(list) {
    const before = state.bots;
    state.bots = [];
    state.botsById = new Map();
    for (const b of list) {
      if (!b || !b.id) continue;
      const bot = { id: String(b.id), name: b.name ? String(b.name) : String(b.id) };
      state.bots.push(bot);
      state.botsById.set(bot.id, bot);
    }
    noteGoneBots(before);
    renderBotList();
  }

  // A bot seen in a frame but not in hello (config changed): show it anyway,
  // unless a reload removed it (a reply it sent just before, say).
  function ensureBot(id, name) {
    if (!id || state.botsById.has(id) || state.goneBots.has(id)) return;
    const bot = { id, name: name || id };
    state.bots.push(bot);
    state.botsById.set(id, bot);
    renderBotList();
  }

  function loadRooms() {
    state.rooms.clear();
    let saved = [];
    try { saved = JSON.parse(storage.get(ROOMS_KEY + state.platformId) || '[]'); } catch { saved = []; }
    if (Array.isArray(saved)) {
      for (const r of saved) {
        if (r && r.name) addRoom(String(r.name), Array.isArray(r.bots) ? r.bots.map(String) : [], r.open === true);
      }
    }
    renderRoomList();
  }

  function saveRooms() {
    if (!state.platformId) return;
    const list = [...state.rooms.values()].map((r) => ({ name: r.name, bots: r.bots, open: r.open }));
    storage.set(ROOMS_KEY + state.platformId, JSON.stringify(list));
  }

  function addRoom(name, bots, open) {
    let room = state.rooms.get(name);
    if (!room) {
      room = { name, bots: bots || [], open: !!open, joined: false };
      state.rooms.set(name, room);
      getConv('room', name);
      renderRoomList();
    } else if (bots && bots.length) {
      room.bots = bots;
    }
    return room;
  }

  function removeRoom(name) {
    state.rooms.delete(name);
    const key = 'r:' + name;
    const conv = state.convs.get(key);
    if (conv) clearTyping(conv);
    state.convs.delete(key);
    const item = sideItems.get(key);
    if (item) item.closest('li').remove();
    sideItems.delete(key);
    saveRooms();
    renderRoomList();
    if (state.current === key) selectConv(initialConvKey(), { focus: false });
    updateUnreadTotals();
  }

  // On a re-join the stored bot list (and openness) is sent again: it is
  // what the user asked for, and recreates the room as it was if the gateway
  // forgot it. An existing room keeps its own bots whatever a join says.
  function joinFrame(room) {
    const f = { type: 'join', chat: room.name, client_id: newClientId() };
    if (room.bots && room.bots.length) f.bots = room.bots;
    if (room.open) f.open = true;
    state.joins.set(f.client_id, room.name);
    return f;
  }

  function requestHistory(conv) {
    if (!conv || !conn.ready) return;
    if (conv.kind === 'bot' && botGone(conv.id)) return; // the gateway no longer answers for it
    const f = conv.kind === 'bot'
      ? { type: 'history', bot: conv.id, limit: HISTORY_LIMIT }
      : { type: 'history', chat: conv.id, limit: HISTORY_LIMIT };
    f.client_id = newClientId();
    state.histories.set(f.client_id, conv.key);
    if (sendFrame(f)) {
      conv.loading = true;
      if (state.current === conv.key && !conv.loaded) renderMessages(false);
    }
    requestFindings(conv);
    requestContext(conv);
  }

  // ------------------------------------------------------------------ sidebar

  function sideItem(conv) {
    let b = sideItems.get(conv.key);
    if (b) return b;
    b = el('button', conv.kind === 'bot' ? 'bot side-item' : 'room side-item');
    b.type = 'button';
    if (conv.kind === 'bot') b.dataset.bot = conv.id;
    else b.dataset.chat = conv.id;
    const body = el('span', 'item-body');
    body.append(el('span', 'item-name'), el('span', 'item-sub'));
    const badge = el('span', 'unread-dot');
    badge.setAttribute('aria-hidden', 'true');
    b.append(convAvatar(conv), body, badge);
    b.addEventListener('click', () => selectConv(conv.key, { focus: !isTouch() }));
    sideItems.set(conv.key, b);
    return b;
  }

  function updateSideItem(conv) {
    const b = sideItems.get(conv.key);
    if (!b) return;
    const name = convTitle(conv);
    b.querySelector('.item-name').textContent = conv.kind === 'room' ? conv.id : name;
    const av = b.querySelector('.avatar');
    if (conv.kind === 'bot') av.textContent = initials(name);

    const sub = b.querySelector('.item-sub');
    const typingBots = [...conv.typing.keys()];
    sub.classList.toggle('is-typing', typingBots.length > 0);
    if (typingBots.length) {
      sub.textContent = conv.kind === 'bot' ? 'typing…' : `${botName(typingBots[0])} is typing…`;
    } else if (conv.last) {
      const m = conv.last;
      const own = m.from && m.from.kind === 'human' && isSelf(m, conv);
      const who = own ? 'You: ' : conv.kind === 'room' ? `${senderName(m)}: ` : '';
      sub.textContent = who + String(m.text || '').replace(/\s+/g, ' ').trim();
    } else if (conv.kind === 'room') {
      const room = state.rooms.get(conv.id);
      const n = room ? room.bots.length : 0;
      sub.textContent = n ? `${n} bot${n === 1 ? '' : 's'}` : 'Group room';
    } else {
      sub.textContent = 'Private chat';
    }

    const gone = conv.kind === 'bot' && botGone(conv.id);
    b.classList.toggle('gone', gone);
    if (gone) sub.textContent = 'No longer available';

    b.classList.toggle('unread', conv.unread > 0);
    b.querySelector('.unread-dot').textContent = conv.unread > 0 ? (conv.unread > 99 ? '99+' : String(conv.unread)) : '';
    b.setAttribute('aria-label', `${name}${conv.unread ? `, ${conv.unread} unread` : ''}`);
    const active = state.current === conv.key;
    b.classList.toggle('active', active);
    if (active) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
  }

  function renderBotList() {
    // Bots a reload removed stay listed, last, while there is something of
    // theirs to read.
    const ids = state.bots.map((bot) => bot.id).concat([...state.goneBots.keys()].filter(keepGone));
    const items = ids.map((id) => {
      const conv = getConv('bot', id);
      const b = sideItem(conv);
      updateSideItem(conv);
      const li = b.parentElement && b.parentElement.tagName === 'LI' ? b.parentElement : el('li');
      li.append(b);
      return li;
    });
    // Drop conversations of bots that are gone from the config.
    for (const [key, b] of sideItems) {
      if (key.startsWith('b:') && !ids.includes(key.slice(2))) { b.closest('li')?.remove(); sideItems.delete(key); }
    }
    dom.botList.replaceChildren(...items);
    dom.botEmpty.hidden = items.length > 0;
    dom.botEmpty.textContent = conn.everConnected ? 'No bots are on the web platform yet.' : 'Waiting for the gateway…';
    renderRoomDialogBots();
  }

  function renderRoomList() {
    const items = [...state.rooms.values()].map((room) => {
      const conv = getConv('room', room.name);
      const b = sideItem(conv);
      updateSideItem(conv);
      const li = b.parentElement && b.parentElement.tagName === 'LI' ? b.parentElement : el('li');
      li.append(b);
      return li;
    });
    dom.roomList.replaceChildren(...items);
    dom.roomEmpty.hidden = items.length > 0;
  }

  function renderIdentity() {
    const c = state.creds;
    const signed = c.kind === 'signed';
    const label = signed ? `Signed in as ${c.user}` : 'Anonymous visitor';
    const av = avatar(state.platformId || 'anon', signed ? initials(c.user) : '?', 'avatar-sm');
    const body = el('span', 'identity-body');
    body.append(el('span', 'identity-name', label), el('span', 'identity-id', state.platformId || ''));
    dom.identity.replaceChildren(av, body);
    dom.identity.title = state.user && state.user !== state.platformId ? `${state.platformId} → ${state.user}` : state.platformId || '';
  }

  function updateUnreadTotals() {
    let total = 0;
    for (const conv of state.convs.values()) total += conv.unread;
    document.title = total ? `(${total}) Switchboard` : 'Switchboard';
    dom.picker.classList.toggle('has-unread', [...state.convs.values()].some((c) => c.unread && c.key !== state.current));
    postToParent({ type: 'unread', count: total });
  }

  // ------------------------------------------------------------- selection

  function selectConv(key, opts) {
    const conv = key ? state.convs.get(key) : null;
    const prev = state.current;
    state.current = conv ? conv.key : null;
    if (prev && prev !== state.current) {
      const p = state.convs.get(prev);
      if (p) updateSideItem(p);
    }
    closeDrawer();
    if (conv) {
      conv.unread = 0;
      updateSideItem(conv);
    }
    updateUnreadTotals();
    renderHeader();
    renderMessages(false);
    renderTyping();
    renderDelegationPanel();
    renderFindingsPanel();
    renderContextPanel();
    if (conv) requestHistory(conv);
    updateComposerState();
    if (opts && opts.focus && conv) dom.composer.focus({ preventScroll: true });
  }

  function currentConv() {
    return state.current ? state.convs.get(state.current) || null : null;
  }

  // ------------------------------------------------------------------ header

  function renderHeader() {
    const conv = currentConv();
    if (!conv) {
      dom.pickerName.textContent = 'Switchboard';
      dom.pickerSub.textContent = state.bots.length ? '' : 'No conversation';
      const blank = avatar('switchboard', 'SB');
      blank.id = 'picker-avatar';
      dom.pickerAvatar.replaceWith(blank);
      dom.pickerAvatar = blank;
      dom.leaveRoom.hidden = true;
      dom.inviteRoom.hidden = true;
      dom.mentions.hidden = true;
      return;
    }
    const av = convAvatar(conv, conv.kind === 'bot' && botGone(conv.id) ? 'avatar-gone' : '');
    av.id = 'picker-avatar';
    dom.pickerAvatar.replaceWith(av);
    dom.pickerAvatar = av;
    dom.pickerName.textContent = conv.kind === 'room' ? conv.id : botName(conv.id);
    if (conv.kind === 'room') {
      const room = state.rooms.get(conv.id);
      const names = room ? room.bots.map(botName) : [];
      dom.pickerSub.textContent = names.length ? `Room · ${names.join(', ')}` : 'Group room';
      dom.leaveRoom.hidden = false;
      dom.inviteRoom.hidden = false;
      renderMentions(room ? room.bots.filter((id) => !botGone(id)) : []);
    } else {
      dom.pickerSub.textContent = botGone(conv.id) ? 'No longer available' : 'Private chat';
      dom.leaveRoom.hidden = true;
      dom.inviteRoom.hidden = true;
      dom.mentions.hidden = true;
    }
    dom.composer.placeholder = conv.kind === 'room'
      ? `Message ${conv.id} — @mention a bot to get its reply`
      : `Message ${botName(conv.id)}`;
  }

  // In a group room bots only answer when addressed (SPEC §4): one tap inserts the mention.
  function renderMentions(botIds) {
    const chips = botIds.map((id) => {
      const chip = el('button', 'mention', '@' + id);
      chip.type = 'button';
      chip.title = `Mention ${botName(id)}`;
      chip.addEventListener('click', () => insertAtCursor(dom.composer, '@' + id + ' '));
      return chip;
    });
    dom.mentions.replaceChildren(...chips);
    dom.mentions.hidden = chips.length === 0;
  }

  function insertAtCursor(ta, text) {
    const start = ta.selectionStart ?? ta.value.length;
    const end = ta.selectionEnd ?? ta.value.length;
    const before = ta.value.slice(0, start);
    const pad = before && !/\s$/.test(before) ? ' ' : '';
    ta.setRangeText(pad + text, start, end, 'end');
    ta.focus();
    onComposerInput();
  }

  // ---------------------------------------------------------------- messages

  function senderName(m) {
    if (m.from.kind === 'human') return m.from.name || m.from.id || 'Someone';
    return m.from.name || botName(m.from.id || m.bot);
  }

  function senderKey(m, conv) {
    if (m.from.kind === 'human') return isSelf(m, conv) ? 'self' : 'h:' + m.from.id;
    return 'b:' + (m.from.id || m.bot);
  }

  function isContinuation(prev, m, conv) {
    if (!prev) return false;
    if (senderKey(prev, conv) !== senderKey(m, conv)) return false;
    if (whereLabel(prev, conv) !== whereLabel(m, conv)) return false;
    const a = parseTime(prev.time), b = parseTime(m.time);
    if (!a || !b) return true;
    return dayKey(a) === dayKey(b) && Math.abs(b - a) < GROUP_WINDOW_MS;
  }

  function buildMsgEl(m, conv, cont) {
    if (m.from.kind === 'system') return systemNoteEl(m);
    const human = m.from.kind === 'human';
    const self = human && isSelf(m, conv);
    const div = el('div', `msg ${human ? 'msg-human' : 'msg-bot'} ${self ? 'msg-self' : 'msg-other'}`);
    if (cont) div.classList.add('cont');
    if (m.id != null) div.dataset.id = String(m.id);
    if (m.clientId) div.dataset.clientId = m.clientId;
    if (m.status) div.classList.add('is-' + m.status);

    if (!self) {
      const seed = human ? 'h:' + m.from.id : m.from.id || m.bot;
      div.append(avatar(seed, initials(senderName(m)), 'msg-avatar'));
    }

    const body = el('div', 'msg-body');
    const name = self ? null : el('div', 'msg-name', senderName(m));
    if (name) body.append(name);
    const where = whereSaid(m, conv);
    if (where) {
      div.classList.add('msg-elsewhere');
      (name || body).append(whereEl(where)); // beside the name, or on its own over our own bubble
    }

    const bubble = el('div', 'bubble');
    const text = el('div', 'text');
    fillText(text, m.text);
    bubble.append(text);
    body.append(bubble);
    const failure = !human && m.failed ? failedTurn(div, bubble, m, conv) : null;
    if (!human && isHandoffNotice(m) && mayFold(m.text)) foldLongText(bubble, text);

    if (m.artifacts && m.artifacts.length && window.SwitchboardAttachments) {
      body.append(window.SwitchboardAttachments.list(m.artifacts, artifactUrl));
    }

    if (m.delegation) body.append(delegTag(m.delegation, conv, m));

    const meta = el('div', 'msg-meta');
    const t = parseTime(m.time);
    if (t) {
      const time = el('time', null, timeFmt.format(t));
      time.dateTime = t.toISOString();
      time.title = fullFmt.format(t);
      meta.append(time);
    }
    if (m.status === 'pending') meta.append(el('span', 'msg-state', 'Sending…'));
    if (m.status === 'queued') meta.append(el('span', 'msg-state', 'Waiting for connection…'));
    if (m.queued > 0) {
      const q = el('span', 'msg-state msg-queued', `Queued · ${m.queued} ahead`);
      q.title = m.queued === 1 ? 'One message is answered before this one.' : `${m.queued} messages are answered before this one.`;
      meta.append(q);
    }
    body.append(meta);
    if (failure) body.append(failure);

    if (m.status === 'failed') {
      const err = el('div', 'msg-error');
      err.setAttribute('role', 'alert');
      err.append(el('span', null, m.error || 'Not sent.'));
      if (m.retryable) {
        const retry = el('button', 'link-button', 'Retry');
        retry.type = 'button';
        retry.addEventListener('click', () => retryLocal(conv, m));
        err.append(retry);
      }
      const dismiss = el('button', 'link-button', 'Remove');
      dismiss.type = 'button';
      dismiss.addEventListener('click', () => discardLocal(conv, m));
      err.append(dismiss);
      body.append(err);
    }

    div.append(body);
    return div;
  }

  function dayDivider(d) {
    const sep = el('div', 'day-divider');
    sep.setAttribute('role', 'separator');
    sep.append(el('span', null, dayLabel(d)));
    return sep;
  }

  function emptyState(conv) {
    const box = el('div', 'empty');
    if (conv.loading && !conv.loaded) {
      box.classList.add('loading');
      box.append(el('span', 'spinner'), el('span', null, 'Loading conversation…'));
      return box;
    }
    box.append(convAvatar(conv, 'avatar-lg'));
    if (conv.kind === 'bot' && botGone(conv.id)) {
      box.append(el('strong', null, botName(conv.id)), el('span', null, `${botName(conv.id)} is no longer available.`));
    } else if (conv.kind === 'bot') {
      box.append(el('strong', null, botName(conv.id)), el('span', null, `Say hello — ${botName(conv.id)} will reply here.`));
    } else {
      box.append(el('strong', null, conv.id), el('span', null, 'A group room. Bots reply when you @mention them.'));
    }
    return box;
  }

  function isAtBottom() {
    const box = dom.messages;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }

  function scrollToBottom() {
    dom.messages.scrollTop = dom.messages.scrollHeight;
    dom.jump.hidden = true;
  }

  // Full render of the open conversation. `keepScroll`: a refresh of what the
  // user is already reading — do not yank them down if they scrolled up.
  function renderMessages(keepScroll) {
    const box = dom.messages;
    const conv = currentConv();
    const wasAtBottom = isAtBottom();
    const prevTop = box.scrollTop;
    const frag = document.createDocumentFragment();
    if (conv) {
      const items = visibleItems(conv);
      const hidden = orderedItems(conv).length - items.length;
      if (hidden) frag.append(elsewhereNote(hidden));
      if (!items.length) frag.append(emptyState(conv));
      let prev = null;
      for (const m of items) {
        appendItem(frag, m, prev, conv);
        prev = m;
      }
    }
    box.replaceChildren(frag);
    if (keepScroll && !wasAtBottom) box.scrollTop = prevTop;
    else scrollToBottom();
    renderElsewhereToggle();
  }

  function appendItem(parent, m, prev, conv) {
    const d = parseTime(m.time);
    const pd = prev ? parseTime(prev.time) : null;
    const newDay = d && (!pd || dayKey(pd) !== dayKey(d));
    if (newDay) parent.append(dayDivider(d));
    parent.append(buildMsgEl(m, conv, !newDay && isContinuation(prev, m, conv)));
  }

  // Cheap path for the common case (a new message at the end); anything else
  // (out-of-order arrival, messages landing before pending sends) re-renders.
  function addToView(conv, m) {
    const items = visibleItems(conv);
    const box = dom.messages;
    const atBottom = isAtBottom();
    if (items.length < 2 || items[items.length - 1] !== m) {
      renderMessages(true);
    } else {
      appendItem(box, m, items[items.length - 2], conv);
      box.lastElementChild.classList.add('appear');
    }
    const own = m.from && m.from.kind === 'human' && isSelf(m, conv);
    if (atBottom || own) scrollToBottom();
    else dom.jump.hidden = false;
  }

  function findLocalEl(clientId) {
    return dom.messages.querySelector(`.msg[data-client-id="${CSS.escape(clientId)}"]`);
  }

  function refreshLocal(local) {
    const conv = local.conv;
    if (state.current !== conv.key) return;
    const node = findLocalEl(local.clientId);
    const stick = isAtBottom();
    if (node) node.replaceWith(buildMsgEl(local, conv, node.classList.contains('cont')));
    else renderMessages(true);
    if (stick) scrollToBottom();   // the error line under a failed send must be visible
  }

  // ---------------------------------------------------------------- sending

  function sendCurrent() {
    const conv = currentConv();
    if (!conv || conn.authFailed) return;
    const text = dom.composer.value.trim();
    if (!text) return;
    const local = dispatchText(conv, text);
    if (!local) return;
    dom.composer.value = '';
    onComposerInput();
    showLocal(conv, local);
  }

  // Sends text into conv as a new message (a new client_id): what the
  // composer and a failed turn's Retry do. False when it is too long.
  function sendText(conv, text) {
    const local = dispatchText(conv, text);
    if (local) showLocal(conv, local);
    return !!local;
  }

  // The optimistic message for text, queued for sending; null when too long.
  function dispatchText(conv, text) {
    const clientId = newClientId();
    const frame = conv.kind === 'bot'
      ? { type: 'send', bot: conv.id, text, client_id: clientId }
      : { type: 'send', chat: conv.id, text, client_id: clientId };
    const local = {
      clientId, text, conv, frame,
      chat: conv.kind === 'bot' ? `${state.platformId}:${conv.id}` : conv.id,
      bot: conv.kind === 'bot' ? conv.id : undefined,
      time: new Date().toISOString(),
      from: { kind: 'human', id: state.platformId, name: 'You' },
      status: 'pending',
      error: null,
      retryable: false,
    };

    if (utf8Length(JSON.stringify(frame)) > MAX_FRAME_BYTES) {
      // Same outcome as the server's too_large, without the round trip.
      toast('That message is too long to send (64 KB limit). Try splitting it.', 'error');
      return null;
    }

    conv.local.push(local);
    conv.last = local;
    dispatchLocal(local);
    return local;
  }

  function showLocal(conv, local) {
    if (state.current === conv.key) addToView(conv, local);
    updateSideItem(conv);
  }

  function dispatchLocal(local) {
    state.pending.set(local.clientId, { conv: local.conv, local });
    if (conn.ready && sendFrame(local.frame)) {
      local.status = 'pending';
    } else {
      local.status = 'queued';
      if (!state.outbox.includes(local)) state.outbox.push(local);
    }
  }

  function flushOutbox() {
    const queued = state.outbox;
    state.outbox = [];
    for (const local of queued) {
      if (local.status !== 'queued' || !state.convs.has(local.conv.key)) continue;
      dispatchLocal(local);
      refreshLocal(local);
    }
  }

  // Sent but never acknowledged when the socket dropped: we cannot know if the
  // gateway stored it, so say so and let the user retry (history may show it).
  function failInFlight(reason) {
    for (const [cid, { local }] of state.pending) {
      if (local.status !== 'pending') continue;
      state.pending.delete(cid);
      local.status = 'failed';
      local.error = reason;
      local.retryable = true;
      local.lostInFlight = true;
      refreshLocal(local);
    }
  }

  // After re-history: an in-flight message the gateway did store shows up as
  // ours in history — drop the failed bubble rather than show it twice.
  function dropDeliveredLocals(conv) {
    const lost = conv.local.filter((l) => l.lostInFlight && l.status === 'failed');
    if (!lost.length) return;
    const mine = [...conv.msgs.values()].filter((m) => m.from.kind === 'human' && isSelf(m, conv));
    for (const l of lost) {
      const sentAt = parseTime(l.time);
      const hit = mine.find((m) => {
        if (m.text !== l.text) return false;
        const t = parseTime(m.time);
        return !t || !sentAt || Math.abs(t - sentAt) < 10 * 60 * 1000;
      });
      if (hit) conv.local = conv.local.filter((x) => x !== l);
    }
  }

  function retryLocal(conv, local) {
    local.error = null;
    local.retryable = false;
    local.lostInFlight = false;
    dispatchLocal(local);  // same client_id: lets the gateway dedupe if it stored the first try
    refreshLocal(local);
  }

  function discardLocal(conv, local) {
    conv.local = conv.local.filter((l) => l !== local);
    state.pending.delete(local.clientId);
    state.outbox = state.outbox.filter((l) => l !== local);
    const node = findLocalEl(local.clientId);
    if (node) node.remove();
    if (!orderedItems(conv).length) renderMessages(false);
  }

  // ----------------------------------------------------------------- typing

  function clearTyping(conv, bot) {
    if (bot === undefined) {
      if (!conv.typing.size) return;
      for (const t of conv.typing.values()) clearTimeout(t);
      conv.typing.clear();
      typingChanged(conv);
      return;
    }
    const t = conv.typing.get(bot);
    if (t === undefined) return;
    clearTimeout(t);
    conv.typing.delete(bot);
    typingChanged(conv);
  }

  function typingChanged(conv) {
    updateSideItem(conv);
    if (state.current === conv.key) renderTyping();
  }

  function renderTyping() {
    const conv = currentConv();
    const names = conv ? [...conv.typing.keys()].map(botName) : [];
    if (!names.length) { dom.typing.hidden = true; return; }
    let text;
    if (names.length === 1) text = `${names[0]} is typing…`;
    else if (names.length === 2) text = `${names[0]} and ${names[1]} are typing…`;
    else text = `${names[0]}, ${names[1]} and ${names.length - 2} more are typing…`;
    dom.typingText.textContent = text;
    const stick = isAtBottom();
    dom.typing.hidden = false;
    if (stick) scrollToBottom();
  }

  // ---------------------------------------------------------- failed turns

  // A bot's apology for a turn whose brain failed (message.failed): a
  // warning bubble with a Retry that sends the person's message again, as
  // a new message. The message it answers is message.reply_to.
  function failedTurn(div, bubble, m, conv) {
    div.classList.add('msg-turn-failed');
    const icon = el('span', 'turn-failed-icon', '!');
    icon.setAttribute('aria-hidden', 'true');
    bubble.prepend(icon);
    const row = el('div', 'turn-failed');
    row.append(el('span', 'turn-failed-label', 'Reply failed'));
    const asked = m.replyTo != null ? conv.msgs.get(m.replyTo) : null;
    // Only the person's own message is theirs to send again.
    if (!asked || !isSelf(asked, conv)) return row;
    const retry = el('button', 'link-button turn-retry', 'Retry');
    retry.type = 'button';
    retry.title = `Send “${summary(asked.text, 60)}” again`;
    if (sentAgain(conv, m, asked.text)) {
      retry.disabled = true;
      retry.textContent = 'Sent again';
    }
    retry.addEventListener('click', () => {
      if (retry.disabled || conn.authFailed) return;
      if (!sendText(conv, asked.text)) return;
      retry.disabled = true;
      retry.textContent = 'Sent again';
    });
    row.append(retry);
    return row;
  }

  // Whether the person has sent text again since the failed turn m.
  function sentAgain(conv, m, text) {
    return orderedItems(conv).some((x) => x !== m && x.from.kind === 'human' && isSelf(x, conv) &&
      x.text === text && (x.clientId || compareIds(x, m) > 0));
  }

  function summary(text, n) {
    const line = String(text).replace(/\s+/g, ' ').trim();
    return line.length > n ? line.slice(0, n - 1) + '…' : line;
  }

  // ----------------------------------------------------------- hand-offs

  const FOLD_LINES = 4;

  // A message the asking bot says about its hand-off: the acknowledgement,
  // and the result notice ("Finn Shipley finished: …").
  function isHandoffNotice(m) {
    return !!m.delegation && m.from.id === m.delegation.from_bot;
  }

  // Whether text may be longer than FOLD_LINES lines on a narrow screen.
  function mayFold(text) {
    return text.split('\n').length > FOLD_LINES || text.length > FOLD_LINES * 40;
  }

  // Folds text after FOLD_LINES lines, with "Show more"/"Show less". The
  // fold is measured once the bubble is on the page; text that fits keeps
  // no fold.
  function foldLongText(bubble, text) {
    text.classList.add('folded');
    text.style.setProperty('--fold-lines', String(FOLD_LINES));
    const toggle = el('button', 'link-button fold-toggle', 'Show more');
    toggle.type = 'button';
    toggle.hidden = true;
    toggle.setAttribute('aria-expanded', 'false');
    toggle.addEventListener('click', () => {
      const folded = text.classList.toggle('folded');
      toggle.textContent = folded ? 'Show more' : 'Show less';
      toggle.setAttribute('aria-expanded', String(!folded));
    });
    bubble.append(toggle);
    requestAnimationFrame(() => {
      if (!text.isConnected) return;
      if (text.scrollHeight > text.clientHeight + 1) {
        toggle.hidden = false;
      } else {
        text.classList.remove('folded');
        toggle.remove();
      }
    });
  }

  // -------------------------------------------------------------- delegations

  // Hand-offs are kept by ID with the conversations they were seen in
  // (a message of theirs was there) and the smallest such message ID,
  // which orders them: live ones not seen in a message yet are newest.
  let delegationSeq = 0;

  function upsertDelegation(d) {
    if (!d || d.id == null) return;
    const id = String(d.id);
    const prev = state.delegations.get(id);
    // Frames can cross (a message snapshot after the final status): a finished
    // delegation never goes back to queued/running.
    if (prev && TERMINAL.has(prev.status) && !TERMINAL.has(d.status)) return;
    const rec = Object.assign(prev || { convs: new Set(), order: Number.MAX_SAFE_INTEGER - 1e6 + (delegationSeq += 1) }, {
      id,
      from_bot: d.from_bot ?? (prev && prev.from_bot),
      to_bot: d.to_bot ?? (prev && prev.to_bot),
      task: d.task ?? (prev && prev.task),
      kind: d.kind ?? (prev && prev.kind),
      status: d.status || (prev && prev.status) || 'queued',
      depth: d.depth ?? (prev && prev.depth),
      // The chat it was asked in, when the frame names one of ours.
      chat: d.chat ?? (prev && prev.chat),
      // The newest progress report (SPEC §10.7): frames keep the last one
      // after the hand-off ends; a frame without one changes nothing.
      progress: d.progress && typeof d.progress === 'object' ? d.progress : prev && prev.progress,
    });
    state.delegations.set(id, rec);
    updateDelegTags(rec);
    schedulePanel();
  }

  function delegationSeenIn(conv, m) {
    const rec = state.delegations.get(String(m.delegation.id));
    if (!rec) return;
    // A newer message of the hand-off takes the link to the target's chat.
    const newest = newestOf(conv, rec.id);
    if (state.current === conv.key && (!newest || compareIds(m, newest) > 0)) {
      for (const a of dom.messages.querySelectorAll(`.deleg-open[data-delegation-id="${CSS.escape(rec.id)}"]`)) a.remove();
    }
    rec.convs.add(conv.key);
    const n = Number(m.id);
    if (Number.isFinite(n) && n < rec.order) rec.order = n;
    schedulePanel();
  }

  // The hand-offs of a conversation: those seen in it, in a private
  // chat those its bot started or was given (for this person: the
  // gateway sends no one else's), and in a room those asked in it. A
  // hand-off a bot makes by its delegate action has no message until its
  // target answers; its frames name the chat it was asked in, so a room
  // shows it (and its progress) while it runs.
  function delegationsOf(conv) {
    if (!conv) return [];
    const room = conv.kind === 'room' ? state.rooms.get(conv.id) : null;
    return [...state.delegations.values()]
      .filter((d) => d.convs.has(conv.key) || (conv.kind === 'bot' && (d.from_bot === conv.id || d.to_bot === conv.id)) ||
        (room && d.convs.size === 0 && d.chat === conv.id))
      .sort((a, b) => b.order - a.order);
  }

  // A help request (kind "help") reads "Matty Atlas asked Finn Shipley";
  // its answer is never shown, only its status.
  function delegWho(d) {
    if (d.kind === 'help') return `${botName(d.from_bot)} asked ${botName(d.to_bot)}`;
    return `${botName(d.from_bot)} → ${botName(d.to_bot)}`;
  }

  // Row text reads "Matty Atlas → Finn Shipley: build the login page · running",
  // or while it reports progress "… · Step 1/3: Surveying CompetitorX".
  function delegationRow(rec) {
    const li = el('li', 'delegation');
    li.dataset.id = rec.id;
    li.dataset.status = rec.status;
    const who = el('span', 'deleg-who', delegWho(rec));
    const task = el('span', 'deleg-task', rec.task || '');
    const label = progressLabel(rec);
    const status = el('span', 'deleg-status' + (label ? ' deleg-progress' : ''), label || rec.status);
    // A progress label has a line of its own, so that a phone shows it.
    li.classList.toggle('has-progress', !!label);
    li.append(el('span', 'deleg-dot'), who, document.createTextNode(': '), task, el('span', 'deleg-sep', ' · '), status);
    li.title = `${delegWho(rec)}: ${rec.task || ''}${rec.depth > 1 ? ` (depth ${rec.depth})` : ''} — ${label || rec.status}`;
    return li;
  }

  // A running hand-off's progress as people read it (delegation.Progress's
  // Label): "Step 1/3: Surveying CompetitorX", "Step 2: …" without a
  // total, or the text alone; "" when it is not running or reported none.
  // Done, failed and refused say so instead.
  function progressLabel(d) {
    const p = d && d.progress;
    if (!p || d.status !== 'running' || !p.text) return '';
    const step = Number(p.step) || 0;
    const total = Number(p.total) || 0;
    if (step > 0 && total > 0) return `Step ${step}/${total}: ${p.text}`;
    if (step > 0) return `Step ${step}: ${p.text}`;
    return String(p.text);
  }

  let panelQueued = false;
  function schedulePanel() {
    if (panelQueued) return;
    panelQueued = true;
    queueMicrotask(() => { panelQueued = false; renderDelegationPanel(); });
  }

  // The open conversation's hand-offs, newest first: the active ones,
  // then the finished ones folded under "Finished (n)".
  function renderDelegationPanel() {
    const all = delegationsOf(currentConv());
    const active = all.filter((d) => !TERMINAL.has(d.status));
    const finished = all.filter((d) => TERMINAL.has(d.status));
    dom.delegationPanel.hidden = all.length === 0;
    dom.delegations.replaceChildren(...active.map(delegationRow));
    dom.delegations.hidden = active.length === 0;
    dom.delegDone.replaceChildren(...finished.map(delegationRow));
    dom.delegFinished.hidden = finished.length === 0;
    dom.delegFinishedCount.textContent = String(finished.length);
    dom.delegCount.textContent = active.length ? `${active.length} active` : 'all finished';
    dom.delegCount.classList.toggle('active', active.length > 0);
  }

  // The small status line under a hand-off message, updated live. The
  // newest message of a hand-off in a chat also has a way to the target's
  // chat, when that is not the open one.
  function delegTag(d, conv, m) {
    const rec = state.delegations.get(String(d.id)) || d;
    const tag = el('div', 'deleg-tag');
    tag.dataset.delegationId = String(d.id);
    fillDelegTag(tag, rec);
    const to = String(rec.to_bot || '');
    if (!to || !state.botsById.has(to) || (conv.kind === 'bot' && conv.id === to) || newestOf(conv, d.id) !== m) return tag;
    const wrap = el('div', 'deleg-line');
    const open = el('button', 'link-button deleg-open', 'Open chat →');
    open.type = 'button';
    open.title = `Open your chat with ${botName(to)}`;
    open.setAttribute('aria-label', open.title);
    open.dataset.bot = to;
    open.dataset.delegationId = String(d.id);
    open.addEventListener('click', () => {
      getConv('bot', to);
      selectConv('b:' + to, { focus: !isTouch() });
    });
    wrap.append(tag, open);
    return wrap;
  }

  // The newest message of hand-off id in conv.
  function newestOf(conv, id) {
    let newest = null;
    for (const x of conv.msgs.values()) {
      if (x.delegation && String(x.delegation.id) === String(id) && (!newest || compareIds(x, newest) > 0)) newest = x;
    }
    return newest;
  }

  function fillDelegTag(tag, d) {
    tag.dataset.status = d.status || 'queued';
    const label = progressLabel(d);
    const text = el('span', 'deleg-tag-text', `${delegWho(d)} · `);
    text.append(el('span', label ? 'deleg-progress' : 'deleg-state', label || d.status || 'queued'));
    tag.replaceChildren(el('span', 'deleg-dot'), text);
    tag.title = label ? `${d.task || ''}\n${label}` : d.task || '';
  }

  function updateDelegTags(rec) {
    for (const tag of dom.messages.querySelectorAll(`.deleg-tag[data-delegation-id="${CSS.escape(rec.id)}"]`)) fillDelegTag(tag, rec);
  }

  // ---------------------------------------------------------- findings board

  // The findings board (SPEC §10.2) of the open conversation's space: a
  // room's (chat:web:<room>), or in a private chat the person's own
  // (user:<id>), which every bot of theirs shares. `findings` asks for
  // it; a `finding` frame adds one as it becomes visible (findings a bot
  // posts in an isolated stage arrive all at once at /release). Newest
  // first, with its author, severity and stage.
  const FINDINGS_LIMIT = 50;
  const FINDINGS_COLLAPSED_KEY = 'switchboard.findings.collapsed';
  const boards = new Map();        // space -> Map(String(id) -> finding)
  const findingsAsked = new Set(); // client_ids of findings frames not yet answered

  // The space a conversation's findings live in.
  function spaceOf(conv) {
    if (!conv) return '';
    return conv.kind === 'room' ? `chat:web:${conv.id}` : `user:${state.user || state.platformId}`;
  }

  function requestFindings(conv) {
    if (!conv || !conn.ready) return;
    const f = conv.kind === 'room'
      ? { type: 'findings', chat: conv.id, limit: FINDINGS_LIMIT }
      : { type: 'findings', bot: conv.id, limit: FINDINGS_LIMIT };
    f.client_id = newClientId();
    findingsAsked.add(f.client_id);
    sendFrame(f);
  }

  function onFindings(f) {
    const space = String(f.space || '');
    if (!space) return;
    const board = new Map();
    for (const it of Array.isArray(f.items) ? f.items : []) if (it && it.id != null) board.set(String(it.id), it);
    boards.set(space, board);
    // The answer names no client_id: forget the oldest question.
    const first = findingsAsked.values().next();
    if (!first.done) findingsAsked.delete(first.value);
    if (space === spaceOf(currentConv())) renderFindingsPanel();
  }

  function onFinding(f) {
    const space = String(f.space || '');
    if (!space || f.id == null) return;
    if (!boards.has(space)) boards.set(space, new Map());
    boards.get(space).set(String(f.id), f);
    if (space === spaceOf(currentConv())) renderFindingsPanel(String(f.id));
  }

  function findingRow(f, fresh) {
    const li = el('li', 'finding');
    li.dataset.severity = f.severity || 'medium';
    if (fresh) li.classList.add('fresh');
    const sev = el('span', 'finding-sev', f.severity || 'medium');
    const who = el('span', 'finding-who', botName(f.bot));
    const text = el('span', 'finding-text');
    fillText(text, f.text || '');
    li.append(sev, who, text);
    if (f.stage) li.append(el('span', 'finding-stage', f.stage));
    const t = parseTime(f.time);
    li.title = `${botName(f.bot)} · ${f.severity}${f.stage ? ` · stage ${f.stage}` : ''}${t ? ` · ${fullFmt.format(t)}` : ''}\n${f.text || ''}`;
    li.addEventListener('click', () => li.classList.toggle('open'));
    return li;
  }

  // fresh: the ID of a finding that just arrived, highlighted a moment.
  function renderFindingsPanel(fresh) {
    const board = boards.get(spaceOf(currentConv()));
    const list = board ? [...board.values()].sort((a, b) => Number(b.id) - Number(a.id)) : [];
    dom.findingsPanel.hidden = list.length === 0;
    const rows = list.map((f) => findingRow(f, String(f.id) === fresh));
    dom.findingsList.replaceChildren(...rows);
    // The highlight of a finding that just arrived fades.
    for (const r of rows) if (r.classList.contains('fresh')) setTimeout(() => r.classList.remove('fresh'), 1500);
    dom.findingsCount.textContent = String(list.length);
    dom.findingsPanel.classList.toggle('collapsed', storage.get(FINDINGS_COLLAPSED_KEY) === '1');
    dom.findingsToggle.setAttribute('aria-expanded', String(!dom.findingsPanel.classList.contains('collapsed')));
  }

  function toggleFindingsPanel() {
    const collapsed = dom.findingsPanel.classList.toggle('collapsed');
    storage.set(FINDINGS_COLLAPSED_KEY, collapsed ? '1' : '0');
    dom.findingsToggle.setAttribute('aria-expanded', String(!collapsed));
  }

  // A line from the gateway itself (a /stage command's answer), between
  // the messages rather than in anyone's bubble.
  function systemNoteEl(m) {
    const div = el('div', 'msg-system');
    div.setAttribute('role', 'note');
    if (m.id != null) div.dataset.id = String(m.id);
    const text = el('span', 'msg-system-text');
    fillText(text, m.text);
    div.append(text);
    const t = parseTime(m.time);
    if (t) {
      const time = el('time', null, timeFmt.format(t));
      time.dateTime = t.toISOString();
      time.title = fullFmt.format(t);
      div.append(time);
    }
    return div;
  }

  // ---------------------------------------------------------- shared context

  // The shared context (SPEC §10.7) of the open room, in a panel beside
  // the messages: the artifact chain (each hand-off that ended here, its
  // producer, the files it produced and the files it was handed), and the
  // events, entities and facts its bots recorded. `context` asks for it
  // when a room opens; the gateway pushes the same frame to every
  // connection in the room whenever it changes, so the panel stays
  // current. A private chat has no panel. On a wide screen the panel is a
  // column the person may close (remembered); on a narrow one, and in the
  // embedded widget, a drawer from the right, closed until asked for.
  const CONTEXT_LIMIT = 50;
  const CONTEXT_CLOSED_KEY = 'switchboard.context.closed'; // '1': closed on wide screens
  const CONTEXT_WIDE = '(min-width: 1100px)';
  const contexts = new Map();      // room name -> {events, entities, facts, chain}
  const contextAsked = new Map();  // client_id -> room: context frames not yet answered
  let contextDrawer = false;       // the drawer is open (narrow screens)

  function requestContext(conv) {
    if (!conv || conv.kind !== 'room' || !conn.ready) return;
    const f = { type: 'context', chat: conv.id, limit: CONTEXT_LIMIT, client_id: newClientId() };
    contextAsked.set(f.client_id, conv.id);
    sendFrame(f);
  }

  // An answer or a push: the frame is the room's whole context.
  function onContext(f) {
    const room = String(f.chat || '');
    if (!room) return; // a person's private space: no panel shows it
    for (const [id, r] of contextAsked) if (r === room) contextAsked.delete(id);
    if (!state.rooms.has(room)) return;
    const list = (x) => (Array.isArray(x) ? x.filter((it) => it && typeof it === 'object') : []);
    const prev = contexts.get(room);
    contexts.set(room, { events: list(f.events), entities: list(f.entities), facts: list(f.facts), chain: list(f.chain) });
    const cur = currentConv();
    if (!cur || cur.kind !== 'room' || cur.id !== room) return; // another room's: shown when it opens
    if (prev && !contextShown()) dom.contextToggle.classList.add('has-news');
    renderContextPanel(prev);
  }

  function contextWide() {
    return !EMBED && window.matchMedia(CONTEXT_WIDE).matches;
  }

  // Whether the open conversation's panel is showing.
  function contextShown() {
    const conv = currentConv();
    if (!conv || conv.kind !== 'room') return false;
    return contextWide() ? storage.get(CONTEXT_CLOSED_KEY) !== '1' : contextDrawer;
  }

  function setContextShown(show) {
    if (contextWide()) storage.set(CONTEXT_CLOSED_KEY, show ? '0' : '1');
    else {
      if (show) closeDrawer();
      contextDrawer = show;
    }
    renderContextPanel();
    if (show) dom.contextClose.focus({ preventScroll: true });
    else if (!dom.contextToggle.hidden) dom.contextToggle.focus({ preventScroll: true });
  }

  function closeContextDrawer() {
    if (contextDrawer) setContextShown(false);
  }

  // prev: the room's context before a push, whose new items are
  // highlighted a moment.
  function renderContextPanel(prev) {
    const conv = currentConv();
    const room = conv && conv.kind === 'room';
    const shown = contextShown();
    const wide = contextWide();
    dom.contextToggle.hidden = !room;
    dom.contextToggle.setAttribute('aria-pressed', String(shown));
    if (shown) dom.contextToggle.classList.remove('has-news');
    dom.contextPanel.hidden = !shown;
    dom.app.classList.toggle('context-open', shown && wide);
    dom.contextPanel.classList.toggle('drawer', shown && !wide);
    // The scrim is the sidebar drawer's too.
    dom.scrim.hidden = !(dom.app.classList.contains('drawer-open') || (shown && !wide));
    if (!room) return;
    dom.contextSub.textContent = `#${conv.id} · what its bots recorded`;
    const c = contexts.get(conv.id);
    if (!c) {
      const box = el('div', 'ctx-loading');
      box.append(el('span', 'spinner'), el('span', null, 'Loading the context…'));
      dom.contextBody.replaceChildren(box);
      return;
    }
    const empty = !c.chain.length && !c.events.length && !c.entities.length && !c.facts.length;
    const parts = [];
    if (empty) parts.push(el('p', 'ctx-intro', 'As the bots here work, what they record shows here: the files each hand-off produced, and the events, entities and facts they noted.'));
    parts.push(
      ctxSection('chain', 'Artifact chain', c.chain.length, chainList(c.chain, prev), 'No hand-off has ended in this room yet.'),
      ctxSection('events', 'Events', c.events.length, eventList(c.events, prev), 'No events yet.'),
      ctxSection('entities', 'Entities', c.entities.length, entityList(c.entities), 'No entities yet.'),
      ctxSection('facts', 'Facts', c.facts.length, factList(c.facts), 'No facts yet.'),
    );
    const scroll = dom.contextBody.scrollTop;
    dom.contextBody.replaceChildren(...parts);
    dom.contextBody.scrollTop = scroll;
    for (const f of dom.contextBody.querySelectorAll('.fresh')) setTimeout(() => f.classList.remove('fresh'), 1500);
  }

  function ctxSection(name, title, n, list, emptyText) {
    const sec = el('section', 'ctx-section');
    sec.dataset.section = name;
    const h = el('h3', 'ctx-title', title);
    if (n) h.append(el('span', 'ctx-count', String(n)));
    sec.append(h, n ? list : el('p', 'ctx-empty', emptyText));
    return sec;
  }

  // "just now", "5 min ago", "3 h ago", then the date.
  function ago(d) {
    const s = (Date.now() - d.getTime()) / 1000;
    if (s < 45) return 'just now';
    if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
    return dayFmt.format(d);
  }

  function agoEl(t) {
    const d = parseTime(t);
    if (!d) return null;
    const time = el('time', 'ctx-time', ago(d));
    time.dateTime = d.toISOString();
    time.title = fullFmt.format(d);
    return time;
  }

  // The artifact chain, oldest step first: "1 Researcher", its task, the
  // files it was handed ("from …") and those it produced, each a link to
  // its content with its size and hash.
  function chainList(chain, prev) {
    const seen = new Set(prev ? prev.chain.map((s) => String(s.step)) : []);
    const ol = el('ol', 'ctx-chain');
    for (const st of chain) {
      const li = el('li', 'ctx-step');
      li.dataset.step = String(st.step);
      li.dataset.status = String(st.status || 'done');
      li.dataset.producer = String(st.producer || '');
      if (prev && !seen.has(String(st.step))) li.classList.add('fresh');
      const body = el('div', 'ctx-step-body');
      const head = el('div', 'ctx-step-head');
      const who = el('span', 'ctx-producer', botName(st.producer));
      who.title = String(st.producer || '');
      head.append(who);
      if (st.status === 'failed') head.append(el('span', 'ctx-failed', 'failed'));
      const t = agoEl(st.time);
      if (t) head.append(t);
      body.append(head);
      if (st.task) {
        const task = el('div', 'ctx-task', st.task);
        task.title = st.task;
        body.append(task);
      }
      const inputs = Array.isArray(st.inputs) ? st.inputs : [];
      if (inputs.length) {
        const from = el('div', 'ctx-from', 'from ');
        inputs.forEach((f, i) => {
          if (i) from.append(', ');
          from.append(fileLink(f, 'ctx-input'));
        });
        body.append(from);
      }
      const outputs = Array.isArray(st.outputs) ? st.outputs : [];
      if (outputs.length) {
        const files = el('ul', 'ctx-files');
        for (const f of outputs) files.append(fileRow(f));
        body.append(files);
      } else {
        body.append(el('div', 'ctx-nofiles', st.status === 'failed' ? 'No files: the hand-off failed.' : 'No files.'));
      }
      li.append(el('span', 'ctx-step-num', String(st.step)), body);
      li.title = `Step ${st.step}: ${botName(st.producer)}${st.status === 'failed' ? ' (failed)' : ''}`;
      ol.append(li);
    }
    return ol;
  }

  // A file of the chain as a link to its content, downloaded as a
  // message's files are.
  function fileLink(f, cls) {
    const a = el('a', cls, f.name || 'file');
    if (f.id != null) a.href = artifactUrl(f.id);
    a.setAttribute('download', f.name || '');
    a.rel = 'noreferrer';
    a.dataset.artifactId = String(f.id);
    a.title = `Download ${f.name || 'the file'}`;
    return a;
  }

  // An output: its name, then its size and the start of its SHA-256 (the
  // whole hash on hover).
  function fileRow(f) {
    const li = el('li', 'ctx-file');
    const link = fileLink(f, 'ctx-file-name');
    const meta = el('span', 'ctx-file-meta');
    const size = window.SwitchboardAttachments ? window.SwitchboardAttachments.humanSize(f.size) : `${f.size} B`;
    if (size) meta.append(size);
    if (f.sha256) {
      if (size) meta.append(' · ');
      const hash = el('span', 'ctx-hash', String(f.sha256).slice(0, 8));
      hash.title = `sha256:${f.sha256}`;
      meta.append(hash);
    }
    li.append(link, meta);
    return li;
  }

  // Events, newest last: the bot, what it noted, when.
  function eventList(events, prev) {
    const seen = new Set(prev ? prev.events.map((e) => String(e.id)) : []);
    const ol = el('ol', 'ctx-events');
    for (const e of events) {
      const li = el('li', 'ctx-event');
      if (prev && !seen.has(String(e.id))) li.classList.add('fresh');
      const who = el('span', 'ctx-who', botName(e.bot));
      who.title = String(e.bot || '');
      const text = el('span', 'ctx-text');
      fillText(text, e.text || '');
      const t = agoEl(e.time);
      if (t) li.append(t); // first: it floats to the right of the first line
      li.append(who, text);
      ol.append(li);
    }
    return ol;
  }

  // Entities: the name, then each attribute as "key: value".
  function entityList(entities) {
    const ul = el('ul', 'ctx-entities');
    for (const e of entities) {
      const li = el('li', 'ctx-entity');
      const head = el('div', 'ctx-entity-head');
      head.append(el('span', 'ctx-entity-name', e.name || ''));
      const by = el('span', 'ctx-by', botName(e.updated_by));
      by.title = `Last updated by ${botName(e.updated_by)}`;
      head.append(by);
      li.append(head);
      const attrs = e.attributes && typeof e.attributes === 'object' && !Array.isArray(e.attributes) ? e.attributes : {};
      const dl = el('dl', 'ctx-attrs');
      for (const [k, v] of Object.entries(attrs)) {
        const row = el('div', 'ctx-attr');
        row.append(el('dt', null, k), el('dd', null, typeof v === 'string' ? v : JSON.stringify(v)));
        dl.append(row);
      }
      if (dl.childElementCount) li.append(dl);
      ul.append(li);
    }
    return ul;
  }

  // Facts: subject predicate object, with how sure its bot is.
  function factList(facts) {
    const ul = el('ul', 'ctx-facts');
    for (const f of facts) {
      const li = el('li', 'ctx-fact');
      const line = el('div', 'ctx-fact-line');
      line.append(el('span', 'ctx-subject', f.subject || ''), ' ', el('span', 'ctx-predicate', f.predicate || ''), ' ', el('span', 'ctx-object', f.object || ''));
      const c = Number(f.confidence);
      const conf = el('span', 'ctx-conf', Number.isFinite(c) ? c.toFixed(2) : '?');
      conf.dataset.level = c >= 0.8 ? 'high' : c >= 0.5 ? 'medium' : 'low';
      conf.title = `Confidence ${Number.isFinite(c) ? c : 'unknown'}`;
      const meta = el('div', 'ctx-fact-meta');
      const who = el('span', 'ctx-who', botName(f.bot));
      who.title = String(f.bot || '');
      meta.append(conf, who);
      const t = agoEl(f.time);
      if (t) meta.append(t);
      li.append(line, meta);
      ul.append(li);
    }
    return ul;
  }

  // ------------------------------------------------ where a message was said

  // A private chat's history is the whole session with its bot (SPEC §7): what
  // the person and the bot said in rooms, on Telegram, on Discord is in it
  // too. Such a message is labelled with where it was said, or left out while
  // the header's toggle says so (a choice this browser remembers).
  const PLATFORM_NAMES = { telegram: 'Telegram', discord: 'Discord' };

  // null for a message said in this conversation itself; else {label, room?}.
  function whereSaid(m, conv) {
    if (conv.kind !== 'bot' || !m.chat || !state.platformId) return null;
    const chat = String(m.chat);
    const platform = m.platform || 'web';
    if (platform === 'web' && chat === `${state.platformId}:${conv.id}`) return null;
    if (m.chatType === 'group') {
      if (platform === 'web') return { label: `in #${chat}`, room: chat };
      if (platform === 'telegram') return { label: 'in a Telegram group' };
      if (platform === 'discord') return { label: 'in a Discord channel' };
      if (platform === 'cli') return { label: `in #${chat} in the terminal` };
      return { label: `in a group on ${platform}` };
    }
    // The same person's private chat as another web identity (users.yaml
    // lists several), from the terminal, or on another platform.
    if (platform === 'web') return { label: `on the web as ${chat.slice(0, chat.lastIndexOf(':'))}` };
    if (platform === 'cli') return { label: 'in the terminal' };
    return { label: `on ${PLATFORM_NAMES[platform] || platform}` };
  }

  function whereLabel(m, conv) {
    const w = whereSaid(m, conv);
    return w ? w.label : '';
  }

  // The label over the bubble; a room this page knows opens on a click.
  function whereEl(where) {
    const box = el('div', 'msg-where');
    if (where.room && state.rooms.has(where.room)) {
      const open = el('button', 'msg-where-link', where.label);
      open.type = 'button';
      open.title = `Open #${where.room}`;
      open.addEventListener('click', () => selectConv('r:' + where.room, { focus: !isTouch() }));
      box.append(open);
    } else {
      box.textContent = where.label;
    }
    return box;
  }

  // What the open conversation shows: everything, or all but what was said
  // elsewhere.
  function visibleItems(conv) {
    const items = orderedItems(conv);
    if (state.showElsewhere || conv.kind !== 'bot') return items;
    return items.filter((m) => !whereSaid(m, conv));
  }

  function elsewhereNote(n) {
    const note = el('div', 'elsewhere-note');
    note.append(el('span', null, `${n} message${n === 1 ? '' : 's'} from other chats hidden`));
    const show = el('button', 'link-button', 'Show');
    show.type = 'button';
    show.addEventListener('click', () => setShowElsewhere(true));
    note.append(show);
    return note;
  }

  // The header's toggle, shown in a private chat that holds messages said
  // elsewhere.
  function renderElsewhereToggle() {
    const conv = currentConv();
    const n = conv && conv.kind === 'bot' ? orderedItems(conv).filter((m) => whereSaid(m, conv)).length : 0;
    const t = dom.elsewhereToggle;
    t.hidden = n === 0;
    t.setAttribute('aria-pressed', String(state.showElsewhere));
    t.title = state.showElsewhere
      ? 'Showing what was said in rooms and on other platforms, labelled. Click to hide it.'
      : `Hiding ${n} message${n === 1 ? '' : 's'} said in rooms or on other platforms. Click to show them.`;
  }

  function setShowElsewhere(show) {
    state.showElsewhere = show;
    if (show) storage.remove(ELSEWHERE_KEY); else storage.set(ELSEWHERE_KEY, 'hidden');
    const conv = currentConv();
    if (conv) {
      const items = visibleItems(conv);
      conv.last = items.length ? items[items.length - 1] : null;
      updateSideItem(conv);
    }
    renderMessages(true);
  }

  // ------------------------------------------------------------------ roster

  // bots (SPEC §7): a config reload changed the web's bots. New ones appear,
  // renamed ones change, removed ones are gone (setBots).
  function onBots(f) {
    if (!Array.isArray(f.bots)) return;
    setBots(f.bots);
    for (const conv of state.convs.values()) updateSideItem(conv);
    const cur = currentConv();
    if (!cur || !conversationExists(cur)) selectConv(initialConvKey(), { focus: false });
    else { renderHeader(); renderMessages(true); }
    updateComposerState();
  }

  // Bots listed before and not now are gone; a bot listed again is back.
  function noteGoneBots(before) {
    for (const b of before) if (!state.botsById.has(b.id)) state.goneBots.set(b.id, b.name);
    for (const id of state.botsById.keys()) state.goneBots.delete(id);
  }

  function botGone(id) {
    return !state.botsById.has(id) && state.goneBots.has(id);
  }

  // A removed bot's chat stays while there is something in it to read.
  function keepGone(id) {
    const conv = state.convs.get('b:' + id);
    return !!conv && (conv.msgs.size > 0 || conv.local.length > 0 || state.current === conv.key);
  }

  // ---------------------------------------------------------------- composer

  function onComposerInput() {
    const ta = dom.composer;
    // Grow with the text up to a cap, then scroll inside the textarea.
    ta.style.height = 'auto';
    ta.style.height = Math.min(ta.scrollHeight, 180) + 'px';
    updateComposerState();
  }

  function updateComposerState() {
    const conv = currentConv();
    // A chat with a bot a reload removed stays readable, but takes no message.
    const gone = !!conv && conv.kind === 'bot' && botGone(conv.id);
    const usable = !!conv && !conn.authFailed && !gone;
    dom.composer.disabled = !usable;
    dom.send.disabled = !usable || !dom.composer.value.trim();
    if (!conv) dom.composer.placeholder = conn.everConnected ? 'No bots available' : 'Connecting…';
    dom.convNotice.hidden = !gone;
    if (gone) {
      const name = botName(conv.id);
      dom.convNoticeText.textContent = `${name} is no longer available.`;
      dom.composer.placeholder = `${name} is no longer available`;
    }
  }

  // ------------------------------------------------------- drawer & dialogs

  function isCompact() {
    return EMBED || window.matchMedia('(max-width: 760px)').matches;
  }

  function isTouch() {
    return window.matchMedia('(pointer: coarse)').matches;
  }

  function openDrawer() {
    if (!isCompact()) return;
    dom.app.classList.add('drawer-open');
    dom.scrim.hidden = false;
    dom.picker.setAttribute('aria-expanded', 'true');
    const active = dom.sidebar.querySelector('.side-item.active') || dom.sidebar.querySelector('.side-item');
    if (active) active.focus({ preventScroll: true });
  }

  function closeDrawer() {
    if (!dom.app.classList.contains('drawer-open')) return;
    dom.app.classList.remove('drawer-open');
    dom.scrim.hidden = true;
    dom.picker.setAttribute('aria-expanded', 'false');
  }

  function renderRoomDialogBots() {
    const prevChecked = new Map([...dom.roomBots.querySelectorAll('input')].map((i) => [i.value, i.checked]));
    const rows = state.bots.map((bot) => {
      const label = el('label', 'room-bot');
      const box = el('input');
      box.type = 'checkbox';
      box.name = 'room-bot';
      box.value = bot.id;
      box.checked = prevChecked.has(bot.id) ? prevChecked.get(bot.id) : true;
      const name = el('span', 'room-bot-name', bot.name);
      const id = el('span', 'room-bot-id', '@' + bot.id);
      label.append(box, avatar(bot.id, initials(bot.name), 'avatar-sm'), name, id);
      return label;
    });
    if (!rows.length) rows.push(el('p', 'side-empty', 'No bots yet.'));
    dom.roomBots.replaceChildren(...rows);
  }

  function openRoomDialog() {
    renderRoomDialogBots();
    for (const box of dom.roomBots.querySelectorAll('input')) box.checked = true;
    dom.roomName.value = '';
    dom.roomOpen.checked = false;
    dom.roomError.hidden = true;
    dom.roomDialog.hidden = false;
    closeDrawer();
    dom.roomName.focus();
  }

  function closeRoomDialog() {
    dom.roomDialog.hidden = true;
    dom.newRoom.focus({ preventScroll: true });
  }

  function submitRoomDialog(ev) {
    ev.preventDefault();
    const name = dom.roomName.value.trim();
    const bots = [...dom.roomBots.querySelectorAll('input:checked')].map((i) => i.value);
    let problem = '';
    if (!name) problem = 'Give the room a name.';
    else if (!state.rooms.has(name) && !bots.length) problem = 'Pick at least one bot.';
    if (problem) {
      dom.roomError.textContent = problem;
      dom.roomError.hidden = false;
      return;
    }
    dom.roomDialog.hidden = true;
    const existing = state.rooms.get(name);
    const room = existing || addRoom(name, bots, dom.roomOpen.checked);
    saveRooms();
    if (conn.ready) sendFrame(joinFrame(room));
    // else: joined on the next hello along with every remembered room
    selectConv('r:' + name, { focus: true });
  }

  // Invite (SPEC §12): a member adds a person to the room by their master
  // user ID or platform ID (the ID shown at the foot of their sidebar).
  function openInviteDialog() {
    const conv = currentConv();
    if (!conv || conv.kind !== 'room') return;
    dom.inviteTitle.textContent = `Invite to #${conv.id}`;
    dom.inviteUser.value = '';
    dom.inviteError.hidden = true;
    dom.inviteDialog.hidden = false;
    dom.inviteUser.focus();
  }

  function closeInviteDialog() {
    dom.inviteDialog.hidden = true;
    dom.inviteRoom.focus({ preventScroll: true });
  }

  function submitInviteDialog(ev) {
    ev.preventDefault();
    const conv = currentConv();
    const user = dom.inviteUser.value.trim();
    let problem = '';
    if (!conv || conv.kind !== 'room') problem = 'Open a room first.';
    else if (!user) problem = 'Give the person’s ID, e.g. web-ann or user-bryan.';
    else if (!conn.ready) problem = 'Not connected; try again in a moment.';
    if (problem) {
      dom.inviteError.textContent = problem;
      dom.inviteError.hidden = false;
      return;
    }
    const f = { type: 'invite', chat: conv.id, user, client_id: newClientId() };
    state.invites.set(f.client_id, { room: conv.id, user });
    sendFrame(f);
    closeInviteDialog();
  }

  function leaveCurrentRoom() {
    const conv = currentConv();
    if (!conv || conv.kind !== 'room') return;
    if (!window.confirm(`Remove “${conv.id}” from your sidebar? You can join it again by name.`)) return;
    removeRoom(conv.id);
  }

  // ------------------------------------------------------------- embedding

  const parentOrigin = (() => {
    if (window.parent === window) return null;
    try {
      if (location.ancestorOrigins && location.ancestorOrigins.length) return location.ancestorOrigins[0];
      if (document.referrer) return new URL(document.referrer).origin;
    } catch { /* fall through */ }
    return '*'; // only unread counts and a close request go out this way
  })();

  function postToParent(msg) {
    if (!EMBED || !parentOrigin) return;
    try { window.parent.postMessage(Object.assign({ source: 'switchboard' }, msg), parentOrigin); } catch { /* ignore */ }
  }

  function pageHidden() {
    return document.hidden || (EMBED && !state.embedVisible);
  }

  function onParentMessage(ev) {
    if (ev.source !== window.parent || !ev.data || ev.data.source !== 'switchboard-widget') return;
    if (ev.data.type === 'visibility') {
      state.embedVisible = !!ev.data.open;
      if (state.embedVisible) onBecameVisible();
    }
  }

  function onBecameVisible() {
    const conv = currentConv();
    if (conv && conv.unread) {
      conv.unread = 0;
      updateSideItem(conv);
      updateUnreadTotals();
    }
    reconnectNow();
  }

  // ------------------------------------------------------------------- init

  function bindDom() {
    const ids = ['app', 'sidebar', 'bot-list', 'bot-empty', 'room-list', 'room-empty', 'new-room', 'identity',
      'scrim', 'picker', 'picker-avatar', 'picker-name', 'picker-sub', 'status', 'status-label', 'leave-room',
      'close-embed', 'auth-banner', 'auth-detail', 'continue-anon', 'retry-auth', 'delegation-panel',
      'deleg-toggle', 'deleg-count', 'delegations', 'deleg-finished', 'deleg-finished-count', 'deleg-done', 'messages', 'jump', 'typing', 'typing-text',
      'findings-panel', 'findings-toggle', 'findings-count', 'findings-list',
      'context-toggle', 'context-panel', 'context-sub', 'context-close', 'context-body',
      'composer-form', 'mentions', 'composer', 'send', 'room-dialog', 'room-form', 'room-name', 'room-bots',
      'room-error', 'room-cancel', 'room-open', 'invite-room', 'invite-dialog', 'invite-form', 'invite-title',
      'invite-user', 'invite-error', 'invite-cancel', 'toasts', 'elsewhere-toggle', 'conv-notice', 'conv-notice-text'];
    for (const id of ids) dom[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }

  function bindEvents() {
    dom.composer.addEventListener('input', onComposerInput);
    dom.composer.addEventListener('keydown', (e) => {
      // Enter sends, Shift+Enter is a newline; never send mid IME composition.
      if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        sendCurrent();
      }
    });
    dom.composerForm.addEventListener('submit', (e) => { e.preventDefault(); sendCurrent(); dom.composer.focus({ preventScroll: true }); });

    dom.messages.addEventListener('scroll', () => { if (isAtBottom()) dom.jump.hidden = true; }, { passive: true });
    dom.jump.addEventListener('click', scrollToBottom);

    dom.picker.addEventListener('click', () => (dom.app.classList.contains('drawer-open') ? closeDrawer() : openDrawer()));
    dom.scrim.addEventListener('click', closeDrawer);
    dom.newRoom.addEventListener('click', openRoomDialog);
    dom.roomForm.addEventListener('submit', submitRoomDialog);
    dom.roomCancel.addEventListener('click', closeRoomDialog);
    dom.roomDialog.addEventListener('click', (e) => { if (e.target === dom.roomDialog) closeRoomDialog(); });
    dom.leaveRoom.addEventListener('click', leaveCurrentRoom);
    dom.inviteRoom.addEventListener('click', openInviteDialog);
    dom.inviteForm.addEventListener('submit', submitInviteDialog);
    dom.inviteCancel.addEventListener('click', closeInviteDialog);
    dom.inviteDialog.addEventListener('click', (e) => { if (e.target === dom.inviteDialog) closeInviteDialog(); });
    dom.closeEmbed.addEventListener('click', () => postToParent({ type: 'close' }));

    dom.continueAnon.addEventListener('click', continueAnonymously);
    dom.retryAuth.addEventListener('click', retryAuth);

    dom.delegToggle.addEventListener('click', () => {
      const collapsed = dom.delegationPanel.classList.toggle('collapsed');
      dom.delegToggle.setAttribute('aria-expanded', String(!collapsed));
    });
    dom.elsewhereToggle.addEventListener('click', () => setShowElsewhere(!state.showElsewhere));
    dom.findingsToggle.addEventListener('click', toggleFindingsPanel);
    dom.contextToggle.addEventListener('click', () => setContextShown(!contextShown()));
    dom.contextClose.addEventListener('click', () => setContextShown(false));
    dom.scrim.addEventListener('click', closeContextDrawer);
    // Crossing the width where the panel stops being a column.
    window.matchMedia(CONTEXT_WIDE).addEventListener('change', () => { contextDrawer = false; renderContextPanel(); });
    // The panel's "5 min ago" stay true: only their texts change, so a
    // link with the keyboard's focus keeps it.
    setInterval(() => {
      if (!contextShown() || pageHidden()) return;
      for (const t of dom.contextBody.querySelectorAll('time.ctx-time')) t.textContent = ago(new Date(t.dateTime));
    }, 60 * 1000);

    document.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      if (!dom.roomDialog.hidden) closeRoomDialog();
      else if (!dom.inviteDialog.hidden) closeInviteDialog();
      else if (contextDrawer) closeContextDrawer();
      else if (dom.app.classList.contains('drawer-open')) closeDrawer();
      else postToParent({ type: 'close' }); // Escape inside the iframe never reaches the host page
    });

    window.addEventListener('online', reconnectNow);
    document.addEventListener('visibilitychange', () => { if (!pageHidden()) onBecameVisible(); });
    window.addEventListener('message', onParentMessage);
    // Leaving compact layout with the drawer open would leave the scrim behind.
    window.matchMedia('(max-width: 760px)').addEventListener('change', () => { if (!isCompact()) closeDrawer(); });
    // Day labels ("Today") go stale across midnight on a long-open tab.
    setInterval(() => { if (currentConv() && !document.hidden) renderMessages(true); }, 60 * 60 * 1000);
  }

  function init() {
    bindDom();
    if (EMBED) {
      document.documentElement.classList.add('embed');
      dom.closeEmbed.hidden = window.parent === window;
    }
    bindEvents();
    state.creds = readCreds();
    state.showElsewhere = storage.get(ELSEWHERE_KEY) !== 'hidden';
    renderHeader();
    updateComposerState();
    connect();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
