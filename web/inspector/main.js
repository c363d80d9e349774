// The memory inspector: a page of the server at /inspector, a client of its public API. Its
// addresses (each one can be reloaded or shared):
//   /inspector                              workspaces with their counts
//   /inspector/workspaces/{w}               peers and sessions, a search over messages and conclusions
//   /inspector/workspaces/{w}/peers/{p}     conclusions about p by observer, card, representation
//   /inspector/workspaces/{w}/sessions/{s}  transcript, summaries, members
//   /inspector/workspaces/{w}/queue         queued, failing and dead work
import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { keyClaims, keyStore, onUnauthorized } from './api.js';
import { BASE, Link } from './ui.js';
import { HomeView, PeerView, QueueView, SessionView, WorkspaceView } from './views.js';
import './styles.css';

/** The view of `path` (below /inspector) and its parameters. */
function route(path) {
  const parts = path.split('/').filter((p) => p !== '').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  if (parts.length === 0) return { view: 'home' };
  if (parts[0] !== 'workspaces' || parts.length < 2) return { view: 'missing' };
  const w = parts[1];
  if (parts.length === 2) return { view: 'workspace', w };
  if (parts.length === 3 && parts[2] === 'queue') return { view: 'queue', w };
  if (parts.length === 4 && parts[2] === 'peers') return { view: 'peer', w, p: parts[3] };
  if (parts.length === 4 && parts[2] === 'sessions') return { view: 'session', w, s: parts[3] };
  return { view: 'missing' };
}

const currentPath = () => (location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/');

function KeyForm({ onSaved, needed }) {
  const [text, setText] = useState('');
  return html`<form class="key" onSubmit=${(e) => {
    e.preventDefault();
    keyStore.set(text.trim());
    onSaved();
  }}>
    ${needed ? html`<p role="alert">This server asks for a key. Enter an admin key, or a key for one workspace.</p>` : null}
    <label for="api-key">API key</label>
    <input id="api-key" type="password" autocomplete="off" value=${text} onInput=${(e) => setText(e.currentTarget.value)} />
    <button type="submit">Use key</button>
    <p class="muted">Kept in this tab only (sessionStorage) until you close it.</p>
  </form>`;
}

function Breadcrumbs({ at }) {
  if (at.view === 'home' || at.view === 'missing') return null;
  const w = encodeURIComponent(at.w);
  return html`<nav aria-label="Breadcrumbs" class="crumbs"><ol>
    <li><${Link} to="/">Workspaces<//></li>
    <li><${Link} to=${`/workspaces/${w}`} aria-current=${at.view === 'workspace' ? 'page' : undefined}>${at.w}<//></li>
    ${at.view === 'peer' ? html`<li><span aria-current="page">peer ${at.p}</span></li>` : null}
    ${at.view === 'session' ? html`<li><span aria-current="page">session ${at.s}</span></li>` : null}
    ${at.view === 'queue' ? html`<li><span aria-current="page">queue</span></li>` : null}
  </ol></nav>`;
}

function App() {
  const [path, setPath] = useState(currentPath);
  const [keyed, setKeyed] = useState(() => keyStore.get() !== '');
  const [needKey, setNeedKey] = useState(false);
  const [askKey, setAskKey] = useState(false);
  // a new key (or none) reads everything again
  const [epoch, setEpoch] = useState(0);
  useEffect(() => {
    const moved = () => {
      setPath(currentPath());
      scrollTo(0, 0);
      // a keyboard or screen reader user goes on from the new view's start, not from a link that is gone
      requestAnimationFrame(() => document.getElementById('main')?.focus({ preventScroll: true }));
    };
    addEventListener('popstate', moved);
    const stop = onUnauthorized(() => setNeedKey(true));
    return () => {
      removeEventListener('popstate', moved);
      stop();
    };
  }, []);
  const at = route(path);
  useEffect(() => {
    const what = at.view === 'home' ? 'Workspaces' : at.view === 'peer' ? `Peer ${at.p}` : at.view === 'session' ? `Session ${at.s}` : at.view === 'queue' ? `Queue of ${at.w}` : at.w ?? 'Not found';
    document.title = `${what} - Engram inspector`;
  }, [path]);
  const claims = keyClaims();
  const view =
    at.view === 'home' ? html`<${HomeView} />`
    : at.view === 'workspace' ? html`<${WorkspaceView} w=${at.w} />`
    : at.view === 'peer' ? html`<${PeerView} w=${at.w} p=${at.p} />`
    : at.view === 'session' ? html`<${SessionView} w=${at.w} s=${at.s} />`
    : at.view === 'queue' ? html`<${QueueView} w=${at.w} />`
    : html`<h1>Not found</h1><p class="empty">The inspector has no page at this address. <${Link} to="/">See the workspaces<//>.</p>`;
  return html`<a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <p class="brand"><${Link} to="/">Engram inspector<//></p>
      ${keyed
        ? html`<p class="who">Key for ${claims.ad ? 'the whole server' : claims.w ? `workspace ${claims.w}` : 'this server'}
            <button type="button" onClick=${() => {
              keyStore.clear();
              setKeyed(false);
              setEpoch(epoch + 1);
            }}>Forget key</button></p>`
        : needKey || askKey
          ? html`<${KeyForm} needed=${needKey} onSaved=${() => {
              setKeyed(true);
              setNeedKey(false);
              setEpoch(epoch + 1);
            }} />`
          : html`<p class="who"><button type="button" onClick=${() => setAskKey(true)}>Use an API key</button></p>`}
    </header>
    <${Breadcrumbs} at=${at} />
    <main id="main" tabindex="-1" key=${`${path}#${epoch}`}>${view}</main>`;
}

render(html`<${App} />`, document.getElementById('app'));
