// Switchboard embed script.
//
//   <script src="https://chat.example.com/widget.js"
//           data-user="bryan" data-sig="…hex HMAC…"   (optional: signed-in user)
//           data-bot="mattyatlas"                      (optional: open this bot first)
//           data-open="true"                           (optional: start opened)
//           async></script>
//
// Adds a floating chat button (bottom-right) that opens an iframe on the
// gateway's own chat page, `<origin of this script>/?embed=1&user=…&sig=…`.
// The UI lives in a shadow root so the host page's CSS cannot reach it and
// ours cannot leak out; styles go through a constructed stylesheet where
// available so a host CSP without 'unsafe-inline' styles still works.
// The iframe is created on first open: no WebSocket, and no anonymous
// identity, for visitors who never open the chat.
(function () {
  'use strict';

  if (window.__switchboardWidget) return; // included twice: keep the first
  window.__switchboardWidget = true;

  var script = document.currentScript;
  if (!script) {
    // currentScript is null when run from a module or after the fact; find ourselves.
    var all = document.querySelectorAll('script[src]');
    for (var i = all.length - 1; i >= 0; i--) {
      if (/\/widget\.js(?:[?#]|$)/.test(all[i].src)) { script = all[i]; break; }
    }
  }
  if (!script || !script.src) return;

  var ORIGIN = new URL(script.src, location.href).origin;
  var data = script.dataset || {};

  function chatUrl() {
    var q = new URLSearchParams();
    q.set('embed', '1');
    if (data.user) q.set('user', data.user);
    if (data.sig) q.set('sig', data.sig);
    if (data.bot) q.set('bot', data.bot);
    return ORIGIN + '/?' + q.toString();
  }

  var CSS = [
    ':host { all: initial; }',
    '.sb-launcher {',
    '  position: fixed; right: 20px; bottom: 20px; z-index: 2147483000;',
    '  width: 58px; height: 58px; border: 0; border-radius: 50%; padding: 0;',
    '  display: flex; align-items: center; justify-content: center; cursor: pointer;',
    '  background: #4f46e5; color: #fff;',
    '  box-shadow: 0 8px 24px rgba(79,70,229,.35), 0 2px 6px rgba(0,0,0,.15);',
    '  transition: transform .15s ease, background-color .15s ease;',
    '}',
    '.sb-launcher:hover { background: #4338ca; transform: scale(1.05); }',
    '.sb-launcher:focus-visible { outline: 3px solid #a5b4fc; outline-offset: 3px; }',
    '.sb-launcher svg { width: 26px; height: 26px; transition: transform .2s ease, opacity .2s ease; position: absolute; }',
    '.sb-launcher .sb-icon-close { opacity: 0; transform: rotate(-90deg); }',
    '.sb-open .sb-launcher .sb-icon-chat { opacity: 0; transform: rotate(90deg); }',
    '.sb-open .sb-launcher .sb-icon-close { opacity: 1; transform: none; }',
    '.sb-badge {',
    '  position: absolute; top: -2px; right: -2px; min-width: 20px; height: 20px; padding: 0 5px;',
    '  border-radius: 10px; background: #dc2626; color: #fff; border: 2px solid #fff;',
    '  font: 700 11px/16px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; text-align: center;',
    '  box-sizing: border-box;',
    '}',
    '.sb-panel {',
    '  position: fixed; right: 20px; bottom: 92px; z-index: 2147483000;',
    '  width: 380px; height: 620px; max-height: calc(100vh - 116px); max-width: calc(100vw - 40px);',
    '  border-radius: 16px; overflow: hidden; background: #fff;',
    '  box-shadow: 0 16px 48px rgba(20,24,40,.25), 0 2px 8px rgba(20,24,40,.12);',
    '  opacity: 0; transform: translateY(12px) scale(.98); transform-origin: bottom right;',
    '  visibility: hidden; transition: opacity .18s ease, transform .18s ease, visibility .18s;',
    '}',
    '.sb-open .sb-panel { opacity: 1; transform: none; visibility: visible; }',
    '.sb-panel iframe { display: block; width: 100%; height: 100%; border: 0; color-scheme: normal; }',
    '@media (max-width: 480px) {',
    '  .sb-panel { right: 0; bottom: 0; width: 100vw; height: 100%; max-width: none; max-height: none; border-radius: 0; }',
    // On a phone the panel is full screen; the chat header has its own close button.
    '  .sb-open .sb-launcher { display: none; }',
    '}',
    '@media (prefers-reduced-motion: reduce) { .sb-launcher, .sb-panel, .sb-launcher svg { transition: none; } }',
  ].join('\n');

  var SVG_NS = 'http://www.w3.org/2000/svg';
  function icon(cls, d, filled) {
    var svg = document.createElementNS(SVG_NS, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    svg.setAttribute('class', cls);
    var path = document.createElementNS(SVG_NS, 'path');
    path.setAttribute('d', d);
    if (filled) {
      path.setAttribute('fill', 'currentColor');
    } else {
      path.setAttribute('fill', 'none');
      path.setAttribute('stroke', 'currentColor');
      path.setAttribute('stroke-width', '2.2');
      path.setAttribute('stroke-linecap', 'round');
    }
    svg.appendChild(path);
    return svg;
  }

  var host, root, wrap, launcher, badge, panel, iframe;
  var isOpen = false;
  var unread = 0;

  function mount() {
    host = document.createElement('div');
    host.id = 'switchboard-widget';
    root = host.attachShadow ? host.attachShadow({ mode: 'open' }) : host;

    var sheetDone = false;
    if (root !== host && 'adoptedStyleSheets' in root && typeof CSSStyleSheet === 'function') {
      try {
        var sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        root.adoptedStyleSheets = [sheet];
        sheetDone = true;
      } catch (e) { /* older engine: fall back to <style> */ }
    }
    if (!sheetDone) {
      var style = document.createElement('style');
      style.textContent = CSS;
      root.appendChild(style);
    }

    wrap = document.createElement('div');
    wrap.className = 'sb-wrap';

    panel = document.createElement('div');
    panel.className = 'sb-panel';
    panel.setAttribute('role', 'dialog');
    panel.setAttribute('aria-label', 'Chat');

    launcher = document.createElement('button');
    launcher.type = 'button';
    launcher.className = 'sb-launcher';
    launcher.setAttribute('aria-label', 'Open chat');
    launcher.setAttribute('aria-expanded', 'false');
    launcher.appendChild(icon('sb-icon-chat', 'M4 5.5A2.5 2.5 0 0 1 6.5 3h11A2.5 2.5 0 0 1 20 5.5v8a2.5 2.5 0 0 1-2.5 2.5H10l-4.2 3.6A.5.5 0 0 1 5 19.2V16h0a2.5 2.5 0 0 1-1-2V5.5z', true));
    launcher.appendChild(icon('sb-icon-close', 'M6 6l12 12M18 6L6 18', false));
    badge = document.createElement('span');
    badge.className = 'sb-badge';
    badge.hidden = true;
    launcher.appendChild(badge);
    launcher.addEventListener('click', toggle);

    wrap.appendChild(panel);
    wrap.appendChild(launcher);
    root.appendChild(wrap);
    document.body.appendChild(host);

    if (data.open === 'true') open();
  }

  function ensureFrame() {
    if (iframe) return;
    iframe = document.createElement('iframe');
    iframe.src = chatUrl();
    iframe.title = 'Switchboard chat';
    iframe.setAttribute('allow', 'clipboard-write');
    // Re-send the open/closed state once the page can hear it.
    iframe.addEventListener('load', notifyFrame);
    panel.appendChild(iframe);
  }

  // Tell the page whether it is on screen, so it counts unread messages while
  // the panel is closed (a display-hidden iframe still reports "visible").
  function notifyFrame() {
    if (!iframe || !iframe.contentWindow) return;
    try {
      iframe.contentWindow.postMessage({ source: 'switchboard-widget', type: 'visibility', open: isOpen }, ORIGIN);
    } catch (e) { /* frame not ready yet; the page assumes open on load */ }
  }

  function open() {
    ensureFrame();
    isOpen = true;
    wrap.classList.add('sb-open');
    launcher.setAttribute('aria-expanded', 'true');
    launcher.setAttribute('aria-label', 'Close chat');
    renderBadge();
    notifyFrame();
    try { iframe.focus(); } catch (e) { /* ignore */ }
  }

  function close() {
    if (!isOpen) return;
    isOpen = false;
    wrap.classList.remove('sb-open');
    launcher.setAttribute('aria-expanded', 'false');
    launcher.setAttribute('aria-label', 'Open chat');
    renderBadge();
    notifyFrame();
    launcher.focus();
  }

  function toggle() { if (isOpen) close(); else open(); }

  // Messages from the chat page: unread count for the badge, close request.
  // Only trusted from the gateway's origin and from our own iframe.
  window.addEventListener('message', function (ev) {
    if (ev.origin !== ORIGIN || !iframe || ev.source !== iframe.contentWindow) return;
    var msg = ev.data;
    if (!msg || msg.source !== 'switchboard') return;
    if (msg.type === 'close') close();
    if (msg.type === 'unread') {
      unread = Number(msg.count) || 0;
      renderBadge();
    }
  });

  function renderBadge() {
    badge.hidden = unread <= 0 || isOpen;
    badge.textContent = unread > 99 ? '99+' : String(unread);
    launcher.setAttribute('aria-label', (isOpen ? 'Close chat' : 'Open chat') + (unread > 0 && !isOpen ? ' (' + unread + ' unread)' : ''));
  }

  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape' && isOpen) close();
  });

  // A small programmatic handle for host pages ("Chat with us" links).
  window.Switchboard = { open: function () { open(); }, close: function () { close(); }, toggle: function () { toggle(); } };

  if (document.body) mount();
  else document.addEventListener('DOMContentLoaded', mount);
})();
