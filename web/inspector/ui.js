// Small pieces every view uses: links that stay in the page, times, pages, loading and errors,
// and the confirmation dialog.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export const BASE = '/inspector';

/** Moves to `path` (below /inspector) without reloading, as a link click does. */
export function navigate(path) {
  history.pushState(null, '', BASE + path);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function Link({ to, children, ...rest }) {
  const onClick = (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return html`<a href=${BASE + to} onClick=${onClick} ...${rest}>${children}</a>`;
}

const UNITS = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** `iso` as "3 minutes ago", the exact time in its title (shown on hover). */
export function Time({ iso }) {
  if (iso === null || iso === undefined) return html`<span>never</span>`;
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return html`<span>${iso}</span>`;
  const seconds = Math.round((at.getTime() - Date.now()) / 1000);
  const [unit, size] = UNITS.find(([, s]) => Math.abs(seconds) >= s) ?? ['second', 1];
  return html`<time datetime=${iso} title=${at.toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'long' })}>${relative.format(Math.round(seconds / size), unit)}</time>`;
}

/**
 * Runs `load` when `deps` change; its state as { data, error, loading, reload }. A later load
 * wins over an earlier one still on its way.
 */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: undefined, error: undefined, loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => current && setState({ data, error: undefined, loading: false }),
      (error) => current && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, round]);
  return { ...state, reload: () => setRound((r) => r + 1) };
}

/** What a load shows while it runs or when it failed; `children(data)` once it is there. */
export function Loaded({ state, children }) {
  if (state.error !== undefined) return html`<${ErrorNote} error=${state.error} />`;
  if (state.data === undefined) return html`<p class="muted" role="status">Loading…</p>`;
  const render = Array.isArray(children) ? children.find((c) => typeof c === 'function') : children;
  return render(state.data);
}

export function ErrorNote({ error }) {
  const status = error?.status;
  const hint =
    status === 401 ? 'This server needs a key: enter one above.' : status === 403 || status === 404 ? 'Your key may not read this, or it does not exist.' : '';
  return html`<p class="error" role="alert">${status !== undefined ? `${status}: ` : ''}${error?.message ?? String(error)} ${hint}</p>`;
}

/** "Page 2 of 7" with previous and next; nothing when everything fits on one page. */
export function Pager({ page, onPage, label }) {
  if (page === undefined || page.pages <= 1) return null;
  return html`<nav class="pager" aria-label=${label}>
    <button type="button" disabled=${page.page <= 1} onClick=${() => onPage(page.page - 1)}>Previous</button>
    <span>Page ${page.page} of ${page.pages} (${page.total} in all)</span>
    <button type="button" disabled=${page.page >= page.pages} onClick=${() => onPage(page.page + 1)}>Next</button>
  </nav>`;
}

/** The `page` query of a view's URL, so that a link keeps the page it shows. */
export function usePageParam(name) {
  const read = () => Math.max(1, Number(new URLSearchParams(location.search).get(name)) || 1);
  const [page, setPage] = useState(read);
  const set = (value) => {
    const params = new URLSearchParams(location.search);
    if (value <= 1) params.delete(name);
    else params.set(name, String(value));
    const query = params.toString();
    history.replaceState(null, '', location.pathname + (query === '' ? '' : `?${query}`));
    setPage(value);
  };
  return [page, set];
}

/**
 * Asks before a change: a modal dialog with `title`, `children` (what will happen) and a
 * `confirmLabel` button; `onConfirm` runs when it is pressed, its error shown in the dialog.
 */
export function Confirm({ title, children, confirmLabel, onConfirm, onClose, danger = false }) {
  const dialog = useRef(null);
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    try {
      await onConfirm();
      dialog.current?.close();
    } catch (failed) {
      setError(failed);
      setBusy(false);
    }
  };
  return html`<dialog ref=${dialog} onClose=${onClose} aria-labelledby="confirm-title">
    <form method="dialog" onSubmit=${submit}>
      <h2 id="confirm-title">${title}</h2>
      ${children}
      ${error !== undefined ? html`<${ErrorNote} error=${error} />` : null}
      <div class="actions">
        <button type="button" onClick=${() => dialog.current?.close()}>Cancel</button>
        <button type="submit" class=${danger ? 'danger' : 'primary'} disabled=${busy}>${confirmLabel}</button>
      </div>
    </form>
  </dialog>`;
}

/** A search field with a label and a submit button; `onSearch` gets the trimmed text. */
export function SearchForm({ label, initial = '', onSearch, id }) {
  const [text, setText] = useState(initial);
  return html`<form class="search" role="search" onSubmit=${(e) => {
    e.preventDefault();
    onSearch(text.trim());
  }}>
    <label for=${id}>${label}</label>
    <input id=${id} type="search" value=${text} onInput=${(e) => setText(e.currentTarget.value)} />
    <button type="submit">Search</button>
  </form>`;
}
