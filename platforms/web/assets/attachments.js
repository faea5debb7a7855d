// Switchboard web chat — the files a message shows (SPEC §7 message.artifacts).
//
// Each artifact becomes a card under its message bubble: an icon by type, the
// name, a human size and a download link; images get an inline preview (click
// for a larger view), Markdown is rendered, JSON pretty-printed, plain text
// shown as is — each preview folded after a few lines. The content comes from
// GET /artifacts/{id} with the chat's credentials (app.js gives the URL).
//
// Like app.js, nothing a bot wrote reaches the DOM as HTML: the Markdown and
// JSON renderers build elements and text nodes only, links only to http(s)
// and mailto, and never load images. app.js calls
// SwitchboardAttachments.list(artifacts, urlOf).
'use strict';

window.SwitchboardAttachments = (() => {
  const PREVIEW_MAX_BYTES = 256 * 1024;  // larger text is downloaded, not previewed
  const FOLD_PX = 220;                   // a preview taller than this folds

  // The same content is asked for once per page, whatever re-renders it.
  const texts = new Map();               // artifact id -> Promise<string>

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  function svg(paths, cls) {
    const NS = 'http://www.w3.org/2000/svg';
    const s = document.createElementNS(NS, 'svg');
    s.setAttribute('viewBox', '0 0 24 24');
    s.setAttribute('aria-hidden', 'true');
    if (cls) s.setAttribute('class', cls);
    for (const d of paths) {
      const p = document.createElementNS(NS, 'path');
      p.setAttribute('d', d);
      s.append(p);
    }
    return s;
  }

  // ------------------------------------------------------------------ types

  function baseType(mediaType) {
    return String(mediaType || '').split(';')[0].trim().toLowerCase();
  }

  function extension(name) {
    const m = /\.([A-Za-z0-9]{1,8})$/.exec(String(name || ''));
    return m ? m[1].toLowerCase() : '';
  }

  const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/svg+xml', 'image/bmp']);
  const ARCHIVES = new Set(['application/zip', 'application/gzip', 'application/x-tar', 'application/x-7z-compressed', 'application/x-gzip']);
  const CODE_EXT = new Set(['js', 'ts', 'go', 'py', 'rb', 'rs', 'java', 'c', 'h', 'cpp', 'sh', 'sql', 'html', 'htm', 'css', 'xml', 'yaml', 'yml', 'toml']);

  // kind picks the icon and the preview: image, markdown, json, text, pdf,
  // sheet, archive, code or file.
  function kind(a) {
    const t = baseType(a.media_type);
    const ext = extension(a.name);
    if (IMAGE_TYPES.has(t)) return 'image';
    if (t === 'text/markdown' || t === 'text/x-markdown') return 'markdown';
    if (t === 'application/json' || (t.startsWith('application/') && t.endsWith('+json'))) return 'json';
    if (t === 'text/plain') return ext === 'md' ? 'markdown' : 'text';
    if (t === 'application/pdf') return 'pdf';
    if (t === 'text/csv' || ext === 'csv' || ext === 'xlsx') return 'sheet';
    if (ARCHIVES.has(t) || ['zip', 'gz', 'tgz', 'tar', '7z'].includes(ext)) return 'archive';
    if (t.startsWith('text/') || t.endsWith('xml') || t.endsWith('javascript') || CODE_EXT.has(ext)) return 'code';
    return 'file';
  }

  const LABELS = { markdown: 'Markdown', json: 'JSON', text: 'Text', pdf: 'PDF', sheet: 'Spreadsheet', archive: 'Archive' };

  function typeLabel(a, k) {
    if (k === 'image') {
      const sub = baseType(a.media_type).slice(6).replace(/\+xml$/, '');
      return (sub === 'jpeg' ? 'JPEG' : sub.toUpperCase()) + ' image';
    }
    if (LABELS[k]) return LABELS[k];
    const ext = extension(a.name);
    return ext ? ext.toUpperCase() + ' file' : 'File';
  }

  // Icons: a folded-corner page with a glyph for the kind.
  const PAGE = 'M6 2.75h8.2L19.25 7.8V21.25H6z M14 2.75V8h5.25';
  const GLYPHS = {
    image: ['M8.5 17.5l3-3.6 2.1 2.4 1.6-1.9 2.3 3.1z', 'M10 11.2a1.3 1.3 0 1 0 0.01 0'],
    markdown: ['M8.5 17v-5l2 2.4 2-2.4v5', 'M15.5 12v5m-1.7-1.8l1.7 1.8 1.7-1.8'],
    json: ['M10.5 11.5c-1.4 0-1.4.8-1.4 1.6s-.6 1.4-1.3 1.4c.7 0 1.3.6 1.3 1.4s0 1.6 1.4 1.6', 'M14.5 11.5c1.4 0 1.4.8 1.4 1.6s.6 1.4 1.3 1.4c-.7 0-1.3.6-1.3 1.4s0 1.6-1.4 1.6'],
    text: ['M9 12h7.5M9 14.8h7.5M9 17.6h5'],
    code: ['M10.5 12l-2.5 2.5 2.5 2.5', 'M14.5 12l2.5 2.5-2.5 2.5'],
    pdf: ['M8.6 17.5v-5h1.7a1.5 1.5 0 0 1 0 3H8.6', 'M13 12.5v5h1a2.5 2.5 0 0 0 0-5z'],
    sheet: ['M8.8 11.5h7.7v6.3H8.8z', 'M8.8 14.6h7.7M12.6 11.5v6.3'],
    archive: ['M12 3v2m0 1.5v2m0 1.5v2', 'M10.8 13.2h2.4v3.4h-2.4z'],
    file: [],
  };

  function icon(k) {
    const box = el('span', 'att-icon att-icon-' + k);
    box.append(svg([PAGE].concat(GLYPHS[k] || []), 'att-glyph'));
    return box;
  }

  function humanSize(n) {
    n = Number(n);
    if (!Number.isFinite(n) || n < 0) return '';
    if (n < 1024) return `${n} B`;
    const units = ['KB', 'MB', 'GB'];
    let v = n / 1024;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return `${v < 10 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)} ${units[i]}`;
  }

  // ------------------------------------------------------------------ cards

  // list renders a message's artifacts; urlOf(id) is where each one's content is.
  function list(artifacts, urlOf) {
    const box = el('div', 'attachments');
    for (const a of artifacts) box.append(card(a, urlOf(a.id)));
    return box;
  }

  function card(a, url) {
    const k = kind(a);
    const c = el('div', 'att att-kind-' + k);
    c.dataset.artifactId = String(a.id);

    if (k === 'image') c.append(imagePreview(a, url));

    const head = el('div', 'att-head');
    const info = el('div', 'att-info');
    const name = el('span', 'att-name', a.name || 'file');
    name.title = a.name || '';
    info.append(name, el('span', 'att-meta', [typeLabel(a, k), humanSize(a.size)].filter(Boolean).join(' · ')));
    const dl = el('a', 'att-download');
    dl.href = url;
    dl.setAttribute('download', a.name || '');
    dl.rel = 'noreferrer';
    dl.title = `Download ${a.name || 'file'}`;
    dl.setAttribute('aria-label', dl.title);
    dl.append(svg(['M12 4v11', 'M7 10.5l5 5 5-5', 'M5 19.5h14'], 'att-dl-icon'));
    head.append(icon(k), info, dl);
    c.append(head);

    if ((k === 'markdown' || k === 'json' || k === 'text') && Number(a.size) <= PREVIEW_MAX_BYTES) {
      c.append(textPreview(a, url, k));
    }
    return c;
  }

  function imagePreview(a, url) {
    const frame = el('button', 'att-image');
    frame.type = 'button';
    frame.title = `View ${a.name || 'image'}`;
    const img = el('img');
    img.alt = a.name || 'image';
    img.loading = 'lazy';
    img.decoding = 'async';
    img.src = url;
    img.addEventListener('error', () => {
      frame.classList.add('att-broken');
      frame.replaceChildren(el('span', 'att-note', 'Preview unavailable'));
      frame.disabled = true;
    });
    frame.append(img);
    frame.addEventListener('click', () => openViewer(url, a.name, baseType(a.media_type) === 'image/svg+xml'));
    return frame;
  }

  function fetchText(id, url) {
    if (!texts.has(id)) {
      const p = fetch(url, { credentials: 'omit', referrerPolicy: 'no-referrer' }).then((res) => {
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        return res.text();
      });
      p.catch(() => texts.delete(id));   // a later render tries again
      texts.set(id, p);
    }
    return texts.get(id);
  }

  function textPreview(a, url, k) {
    const wrap = el('div', 'att-preview att-preview-' + k);
    const body = el('div', 'att-preview-body');
    body.append(el('span', 'att-note', 'Loading preview…'));
    wrap.append(body);
    fetchText(String(a.id), url).then((text) => {
      grow(wrap, () => body.replaceChildren(render(k, text)));
      fold(wrap, body);
    }, () => {
      body.replaceChildren(el('span', 'att-note', 'Preview unavailable'));
    });
    return wrap;
  }

  // grow runs fn, which makes node taller, and keeps a chat that was read
  // at its end (app.js's "at the bottom") at its end.
  function grow(node, fn) {
    const box = node.closest('.messages');
    const stick = !!box && box.scrollHeight - box.scrollTop - box.clientHeight < 80;
    fn();
    if (stick) box.scrollTop = box.scrollHeight;
  }

  function render(k, text) {
    if (k === 'markdown') return markdown(text);
    if (k === 'json') return json(text);
    const pre = el('pre', 'att-text');
    pre.textContent = text;
    return pre;
  }

  // fold shortens a tall preview to FOLD_PX with a "Show more" toggle. It
  // measures once the preview is laid out (the message may still be detached).
  function fold(wrap, body) {
    const measure = () => {
      if (!wrap.isConnected) return void requestAnimationFrame(measure);
      if (body.scrollHeight <= FOLD_PX + 40) return;
      wrap.classList.add('folded');
      const more = el('button', 'att-more', 'Show more');
      more.type = 'button';
      more.setAttribute('aria-expanded', 'false');
      more.addEventListener('click', () => {
        const open = wrap.classList.toggle('folded') === false;
        more.textContent = open ? 'Show less' : 'Show more';
        more.setAttribute('aria-expanded', String(open));
      });
      wrap.append(more);
    };
    requestAnimationFrame(measure);
  }

  // ----------------------------------------------------------------- viewer

  let viewer = null;

  function openViewer(url, name, vector) {
    closeViewer();
    viewer = el('div', 'att-viewer' + (vector ? ' att-viewer-vector' : ''));
    viewer.setAttribute('role', 'dialog');
    viewer.setAttribute('aria-modal', 'true');
    viewer.setAttribute('aria-label', name || 'image');
    const img = el('img');
    img.src = url;
    img.alt = name || 'image';
    const close = el('button', 'att-viewer-close', '×');
    close.type = 'button';
    close.setAttribute('aria-label', 'Close');
    viewer.append(img, el('div', 'att-viewer-name', name || ''), close);
    viewer.addEventListener('click', closeViewer);
    document.body.append(viewer);
    close.focus();
  }

  function closeViewer() {
    if (!viewer) return;
    viewer.remove();
    viewer = null;
  }

  // Escape closes the viewer before app.js sees it (which would close the
  // widget itself): this listener runs first, in the capture phase.
  window.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && viewer) {
      e.stopImmediatePropagation();
      closeViewer();
    }
  }, true);

  // ------------------------------------------------------------------- JSON

  const JSON_TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

  // json pretty-prints text with its keys, strings, numbers and literals
  // coloured; text that is not JSON is shown as it is.
  function json(text) {
    const pre = el('pre', 'att-json');
    let pretty;
    try {
      pretty = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      pre.textContent = text;
      return pre;
    }
    let last = 0;
    for (const m of pretty.matchAll(JSON_TOKEN)) {
      if (m.index > last) pre.append(pretty.slice(last, m.index));
      if (m[1] && m[2]) pre.append(el('span', 'j-key', m[1]), m[2]);
      else if (m[1]) pre.append(el('span', 'j-str', m[1]));
      else if (m[3]) pre.append(el('span', 'j-lit', m[3]));
      else pre.append(el('span', 'j-num', m[4]));
      last = m.index + m[0].length;
    }
    if (last < pretty.length) pre.append(pretty.slice(last));
    return pre;
  }

  // --------------------------------------------------------------- Markdown

  // markdown renders the common subset — headings, paragraphs, lists (task
  // lists too), quotes, fenced code, tables, rules; emphasis, code, links —
  // into elements and text nodes. Raw HTML stays text; images stay text.
  function markdown(text) {
    const root = el('div', 'att-md');
    const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
    let i = 0;
    let para = null;
    let list = null;      // {node, ordered}
    let quote = null;
    const endBlocks = () => { para = null; list = null; quote = null; };

    while (i < lines.length) {
      const line = lines[i];
      let m;
      if ((m = /^\s*(`{3,}|~{3,})\s*([\w+-]*)\s*$/.exec(line))) {
        endBlocks();
        const fence = m[1];
        const code = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) { code.push(lines[i]); i += 1; }
        i += 1;
        const pre = el('pre', 'md-code');
        pre.append(el('code', null, code.join('\n')));
        root.append(pre);
        continue;
      }
      if (!line.trim()) { endBlocks(); i += 1; continue; }
      if ((m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
        endBlocks();
        const h = el('h' + m[1].length, 'md-h');
        inline(h, m[2]);
        root.append(h);
        i += 1;
        continue;
      }
      if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
        endBlocks();
        root.append(el('hr', 'md-hr'));
        i += 1;
        continue;
      }
      if (isTableStart(lines, i)) {
        endBlocks();
        i = table(root, lines, i);
        continue;
      }
      if ((m = /^\s{0,3}>\s?(.*)$/.exec(line))) {
        para = null;
        list = null;
        if (!quote) { quote = el('blockquote', 'md-quote'); root.append(quote); }
        else quote.append(el('br'));
        inline(quote, m[1]);
        i += 1;
        continue;
      }
      if ((m = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line))) {
        para = null;
        quote = null;
        const ordered = /\d/.test(m[2]);
        if (!list || list.ordered !== ordered) {
          list = { node: el(ordered ? 'ol' : 'ul', 'md-list'), ordered };
          if (ordered && parseInt(m[2], 10) !== 1) list.node.start = parseInt(m[2], 10);
          root.append(list.node);
        }
        const li = el('li');
        if (m[1].length >= 2) li.classList.add('md-nested');
        let item = m[3];
        const task = /^\[([ xX])\]\s+(.*)$/.exec(item);
        if (task) {
          li.classList.add('md-task');
          const done = task[1] !== ' ';
          const box = el('span', 'md-check' + (done ? ' done' : ''));
          box.setAttribute('role', 'img');
          box.setAttribute('aria-label', done ? 'done' : 'not done');
          li.append(box);
          item = task[2];
        }
        inline(li, item);
        list.node.append(li);
        i += 1;
        continue;
      }
      if (list && /^\s{2,}\S/.test(line)) {      // a list item's continuation
        const li = list.node.lastElementChild;
        li.append(el('br'));
        inline(li, line.trim());
        i += 1;
        continue;
      }
      list = null;
      quote = null;
      if (!para) { para = el('p', 'md-p'); root.append(para); }
      else para.append(el('br'));                // chat-style: a line break is kept
      inline(para, line.trim());
      i += 1;
    }
    return root;
  }

  function cells(line) {
    let s = line.trim();
    if (s.startsWith('|')) s = s.slice(1);
    if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
    return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
  }

  function isTableStart(lines, i) {
    return i + 1 < lines.length && lines[i].includes('|') &&
      /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[i + 1]);
  }

  function table(root, lines, i) {
    const head = cells(lines[i]);
    const align = cells(lines[i + 1]).map((c) => (c.endsWith(':') ? (c.startsWith(':') ? 'center' : 'right') : ''));
    const scroll = el('div', 'md-table-wrap');
    const t = el('table', 'md-table');
    const tr = el('tr');
    head.forEach((c, j) => {
      const th = el('th');
      if (align[j]) th.style.textAlign = align[j];
      inline(th, c);
      tr.append(th);
    });
    t.append(el('thead'));
    t.tHead.append(tr);
    const body = el('tbody');
    i += 2;
    while (i < lines.length && lines[i].includes('|') && lines[i].trim()) {
      const row = el('tr');
      cells(lines[i]).slice(0, head.length).forEach((c, j) => {
        const td = el('td');
        if (align[j]) td.style.textAlign = align[j];
        inline(td, c);
        row.append(td);
      });
      body.append(row);
      i += 1;
    }
    t.append(body);
    scroll.append(t);
    root.append(scroll);
    return i;
  }

  // Inline Markdown: the earliest construct wins; what it wraps is rendered
  // again (emphasis in a link, say). Code spans are literal.
  const INLINE = new RegExp([
    '(`+)([^`]|[^`][\\s\\S]*?[^`])\\1(?!`)',                         // 1,2 code
    '\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*',                             // 3 strong
    '(?<![\\w])__(?=\\S)([\\s\\S]*?\\S)__(?![\\w])',                  // 4 strong
    '~~(?=\\S)([\\s\\S]*?\\S)~~',                                     // 5 strike
    '\\*(?=[^\\s*])([\\s\\S]*?[^\\s*])\\*',                           // 6 em
    '(?<![\\w])_(?=[^\\s_])([\\s\\S]*?[^\\s_])_(?![\\w])',            // 7 em
    '\\[([^\\]\\n]+)\\]\\(\\s*(\\S+?)(?:\\s+"[^"]*")?\\s*\\)',        // 8,9 link
    '(https?:\\/\\/[^\\s<>"\']*[^\\s<>"\'.,:;!?)\\]])',               // 10 bare URL
  ].join('|'));

  function safeHref(url) {
    try {
      const u = new URL(url, location.href);
      return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : null;
    } catch {
      return null;
    }
  }

  function link(text, href, depth) {
    const a = el('a', 'md-link');
    a.href = href;
    a.target = '_blank';
    a.rel = 'noopener noreferrer nofollow';
    inline(a, text, depth + 1, false);
    return a;
  }

  // inline renders text into node; inside a link (links false) no other
  // link is made.
  function inline(node, text, depth = 0, links = true) {
    let rest = String(text);
    while (rest) {
      const m = depth < 8 ? INLINE.exec(rest) : null;
      if (!m) { node.append(rest); return; }
      if (m.index > 0) node.append(rest.slice(0, m.index));
      if (m[2] != null) node.append(el('code', 'md-inline-code', m[2]));
      else if (m[3] != null || m[4] != null) node.append(wrap('strong', m[3] ?? m[4], depth, links));
      else if (m[5] != null) node.append(wrap('del', m[5], depth, links));
      else if (m[6] != null || m[7] != null) node.append(wrap('em', m[6] ?? m[7], depth, links));
      else if (m[8] != null) {
        const href = links && safeHref(m[9]);
        node.append(href ? link(m[8], href, depth) : m[0]);
      } else {
        const href = links && safeHref(m[10]);
        node.append(href ? link(m[10], href, depth) : m[10]);
      }
      rest = rest.slice(m.index + m[0].length);
    }
  }

  function wrap(tag, text, depth, links) {
    const e = el(tag);
    inline(e, text, depth + 1, links);
    return e;
  }

  return { list, kind, humanSize, markdown, json };
})();
