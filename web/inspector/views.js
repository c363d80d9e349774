// The page's views, one per address (see main.js for the addresses). Each reads one page of what it
// shows through the public API; none loads a whole collection.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, enc, keyClaims, ws } from './api.js';
import { Confirm, ErrorNote, Link, Loaded, Pager, SearchForm, Time, useLoad, usePageParam } from './ui.js';

const PAGE = 20;

/** The workspace's statistics route: its kept counts, queued work and model usage of the last `hours`. */
const statistics = (w, hours = 24) => call('GET', `${ws(w)}/statistics?hours=${hours}`);

/** Counts of one workspace, from its statistics (counts kept by the server, one request). */
function WorkspaceCounts({ id }) {
  const state = useLoad(() => statistics(id, 1), [id]);
  if (state.error !== undefined) return html`<td colspan="5" class="muted">${state.error.message}</td>`;
  const s = state.data;
  if (s === undefined) return html`<td>…</td><td>…</td><td>…</td><td>…</td><td>…</td>`;
  return html`<td>${s.peers}</td><td>${s.sessions}</td><td>${s.messages}</td><td>${s.conclusions}</td><td>${s.pending_work_units + s.in_progress_work_units}</td>`;
}

export function HomeView() {
  const [page, setPage] = usePageParam('page');
  const claims = keyClaims();
  // a key for one workspace cannot list workspaces (an admin route): it shows its own
  const scoped = typeof claims.w === 'string' && claims.w !== '' && !claims.ad;
  const state = useLoad(
    () =>
      scoped
        ? Promise.resolve({ items: [{ id: claims.w, created_at: null }], total: 1, page: 1, size: 1, pages: 1 })
        : call('POST', `/workspaces/list?page=${page}&size=${PAGE}`, {}),
    [page, scoped, claims.w],
  );
  return html`<h1>Workspaces</h1>
    <${Loaded} state=${state}>
      ${(data) =>
        data.total === 0
          ? html`<p class="empty">No workspaces yet. A workspace appears when an agent first writes to it (for example <code>POST /v3/workspaces</code> with an id).</p>`
          : html`<div class="table-wrap"><table>
                <caption class="sr-only">Workspaces with their counts</caption>
                <thead><tr><th scope="col">Workspace</th><th scope="col">Peers</th><th scope="col">Sessions</th><th scope="col">Messages</th><th scope="col">Conclusions</th><th scope="col">Queued work</th></tr></thead>
                <tbody>
                  ${data.items.map(
                    (w) => html`<tr key=${w.id}>
                      <th scope="row"><${Link} to=${`/workspaces/${enc(w.id)}`}>${w.id}<//></th>
                      <${WorkspaceCounts} id=${w.id} />
                    </tr>`,
                  )}
                </tbody>
              </table></div>
              <${Pager} page=${data} onPage=${setPage} label="Pages of workspaces" />`}
    <//>`;
}

/** One paged, searchable list of a workspace (its peers or its sessions). */
function IdList({ w, noun, path, linkTo, empty }) {
  const [page, setPage] = usePageParam(`${noun}-page`);
  const [query, setQuery] = useState('');
  const state = useLoad(
    () => call('POST', `${ws(w)}/${path}/list?page=${page}&size=${PAGE}`, query === '' ? {} : { filters: { id: { contains: query } } }),
    [w, page, query],
  );
  return html`<section aria-labelledby=${`${noun}-heading`}>
    <h2 id=${`${noun}-heading`}>${noun[0].toUpperCase() + noun.slice(1)}</h2>
    <${SearchForm} id=${`${noun}-search`} label=${`Find ${noun} by id`} onSearch=${(text) => {
      setPage(1);
      setQuery(text);
    }} />
    <${Loaded} state=${state}>
      ${(data) =>
        data.total === 0
          ? html`<p class="empty">${query === '' ? empty : `No ${noun} whose id contains "${query}".`}</p>`
          : html`<ul class="ids">
                ${data.items.map((item) => html`<li key=${item.id}><${Link} to=${linkTo(item.id)}>${item.id}<//> <span class="muted">created <${Time} iso=${item.created_at} /></span></li>`)}
              </ul>
              <${Pager} page=${data} onPage=${setPage} label=${`Pages of ${noun}`} />`}
    <//>
  </section>`;
}

/** Messages and conclusions of a workspace matching a text. */
function WorkspaceSearch({ w }) {
  const [query, setQuery] = useState('');
  const state = useLoad(
    () =>
      query === ''
        ? Promise.resolve(undefined)
        : Promise.all([
            call('POST', `${ws(w)}/search`, { query, limit: PAGE }),
            call('POST', `${ws(w)}/conclusions/list?size=${PAGE}`, { filters: { content: { icontains: query } } }),
          ]),
    [w, query],
  );
  return html`<section aria-labelledby="search-heading">
    <h2 id="search-heading">Search</h2>
    <${SearchForm} id="workspace-search" label="Search messages and conclusions" onSearch=${setQuery} />
    ${query === ''
      ? null
      : state.error !== undefined
        ? html`<${ErrorNote} error=${state.error} />`
        : state.loading || state.data === undefined
          ? html`<p class="muted" role="status">Searching…</p>`
          : html`<div class="columns">
              <div>
                <h3>Messages (${state.data[0].length})</h3>
                ${state.data[0].length === 0 ? html`<p class="empty">No message matches "${query}".</p>` : null}
                <ul class="cards">${state.data[0].map((m) => html`<li key=${m.id}><${MessageItem} w=${w} message=${m} withSession=${true} /></li>`)}</ul>
              </div>
              <div>
                <h3>Conclusions (${state.data[1].total})</h3>
                ${state.data[1].total === 0 ? html`<p class="empty">No conclusion contains "${query}".</p>` : null}
                <ul class="cards">
                  ${state.data[1].items.map(
                    (c) => html`<li key=${c.id}><p>${c.content}</p><p class="muted">${c.observer_id} about <${Link} to=${`/workspaces/${enc(w)}/peers/${enc(c.observed_id)}`}>${c.observed_id}<//>, <${Time} iso=${c.created_at} /></p></li>`,
                  )}
                </ul>
              </div>
            </div>`}
  </section>`;
}

export function WorkspaceView({ w }) {
  return html`<h1>Workspace ${w}</h1>
    <p><${Link} to=${`/workspaces/${enc(w)}/queue`}>Queued work of this workspace<//></p>
    <${WorkspaceSearch} w=${w} />
    <div class="columns">
      <${IdList} w=${w} noun="peers" path="peers" linkTo=${(p) => `/workspaces/${enc(w)}/peers/${enc(p)}`} empty="No peers yet. Peers appear when a session gets members or a message is sent." />
      <${IdList} w=${w} noun="sessions" path="sessions" linkTo=${(s) => `/workspaces/${enc(w)}/sessions/${enc(s)}`} empty="No active sessions. Create one with POST /v3/workspaces/{workspace}/sessions." />
    </div>`;
}

function MessageItem({ w, message, withSession = false }) {
  return html`<article class="message" aria-label=${`message from ${message.peer_id}`}>
    <header><strong>${message.peer_id}</strong> <span class="muted"><${Time} iso=${message.created_at} />${withSession
      ? html` in <${Link} to=${`/workspaces/${enc(w)}/sessions/${enc(message.session_id)}`}>${message.session_id}<//>`
      : null}</span></header>
    <p class="content">${message.content}</p>
  </article>`;
}

/** What a conclusion was drawn from: its source messages (explicit) or premises (derived). */
function Sources({ w, conclusion }) {
  const ids = conclusion.source_ids ?? [];
  const explicit = conclusion.level === 'explicit';
  const state = useLoad(
    () =>
      Promise.all(
        ids.slice(0, 10).map((id) =>
          explicit && conclusion.session_id !== null
            ? call('GET', `${ws(w)}/sessions/${enc(conclusion.session_id)}/messages/${enc(id)}`).then((m) => ({ message: m }), (error) => ({ id, error }))
            : call('GET', `${ws(w)}/conclusions/${enc(id)}`).then((c) => ({ premise: c }), (error) => ({ id, error })),
        ),
      ),
    [conclusion.id],
  );
  if (ids.length === 0) return html`<p class="muted">Recorded without sources (written through the API, or before sources were kept).</p>`;
  return html`<div class="sources">
    <h4>${explicit ? 'Source messages' : 'Premises'}${ids.length > 10 ? ` (first 10 of ${ids.length})` : ''}</h4>
    <${Loaded} state=${state}>
      ${(items) => html`<ul>
        ${items.map((item) =>
          item.message !== undefined
            ? html`<li key=${item.message.id}><${MessageItem} w=${w} message=${item.message} /></li>`
            : item.premise !== undefined
              ? html`<li key=${item.premise.id}><span class="level">${item.premise.level}</span> ${item.premise.content}</li>`
              : html`<li key=${item.id} class="muted">${item.id}: ${item.error.status === 404 ? 'no longer there' : item.error.message}</li>`,
        )}
      </ul>`}
    <//>
  </div>`;
}

function ConclusionItem({ w, conclusion, onDelete }) {
  const [open, setOpen] = useState(false);
  const detailsId = `sources-${conclusion.id}`;
  return html`<li class="conclusion">
    <p><span class="level">${conclusion.level}</span> ${conclusion.content}</p>
    <p class="muted">
      <${Time} iso=${conclusion.created_at} />${conclusion.times_derived > 1 ? `, derived ${conclusion.times_derived} times` : ''}${conclusion.session_id !== null
        ? html`, in <${Link} to=${`/workspaces/${enc(w)}/sessions/${enc(conclusion.session_id)}`}>${conclusion.session_id}<//>`
        : null}
    </p>
    <div class="actions">
      <button type="button" aria-expanded=${open} aria-controls=${detailsId} onClick=${() => setOpen(!open)}>${open ? 'Hide sources' : 'Show sources'}</button>
      <button type="button" class="danger" onClick=${() => onDelete(conclusion)}>Delete</button>
    </div>
    ${open ? html`<div id=${detailsId}><${Sources} w=${w} conclusion=${conclusion} /></div>` : null}
  </li>`;
}

function PeerCard({ w, p }) {
  const state = useLoad(() => call('GET', `${ws(w)}/peers/${enc(p)}/card`), [w, p]);
  const [editing, setEditing] = useState(undefined);
  return html`<section aria-labelledby="card-heading">
    <h2 id="card-heading">Peer card</h2>
    <${Loaded} state=${state}>
      ${(data) => html`${data.peer_card === null || data.peer_card.length === 0
        ? html`<p class="empty">No card yet. The deriver writes one as it learns stable facts; you can write it yourself.</p>`
        : html`<ul class="card-lines">${data.peer_card.map((line, i) => html`<li key=${i}>${line}</li>`)}</ul>`}
        <button type="button" onClick=${() => setEditing((data.peer_card ?? []).join('\n'))}>Edit card</button>`}
    <//>
    ${editing !== undefined
      ? html`<${Confirm}
          title=${`Edit the card of ${p}`}
          confirmLabel="Save card"
          onClose=${() => setEditing(undefined)}
          onConfirm=${async () => {
            const lines = editing.split('\n').map((l) => l.trim()).filter((l) => l !== '');
            await call('PUT', `${ws(w)}/peers/${enc(p)}/card`, { peer_card: lines });
            state.reload();
          }}
        >
          <label for="card-text">One fact a line. Saving replaces the whole card.</label>
          <textarea id="card-text" rows="8" value=${editing} onInput=${(e) => setEditing(e.currentTarget.value)}></textarea>
        <//>`
      : null}
  </section>`;
}

function Representation({ w, p }) {
  const [shown, setShown] = useState(false);
  const state = useLoad(() => (shown ? call('POST', `${ws(w)}/peers/${enc(p)}/representation`, {}) : Promise.resolve(null)), [w, p, shown]);
  return html`<section aria-labelledby="representation-heading">
    <h2 id="representation-heading">Representation</h2>
    <p class="muted">What the API gives an agent that asks about ${p} (<code>POST …/peers/${p}/representation</code>).</p>
    ${!shown
      ? html`<button type="button" onClick=${() => setShown(true)}>Show representation</button>`
      : html`<${Loaded} state=${state}>${(data) =>
          data === null ? null : data.representation === '' ? html`<p class="empty">Empty: nothing is known about ${p} yet.</p>` : html`<pre class="representation">${data.representation}</pre>`}<//>`}
  </section>`;
}

function ScheduleDream({ w, p }) {
  const [asking, setAsking] = useState(false);
  const [done, setDone] = useState(false);
  return html`${asking
      ? html`<${Confirm}
          title=${`Schedule a dream about ${p}`}
          confirmLabel="Schedule dream"
          onClose=${() => setAsking(false)}
          onConfirm=${async () => {
            await call('POST', `${ws(w)}/schedule_dream`, { observer: p, observed: p, dream_type: 'omni' });
            setDone(true);
          }}
        >
          <p>A dream reviews what ${p} is known to have said about itself: it merges duplicates, draws deductions and refreshes the card. It runs in the background and uses the model.</p>
        <//>`
      : null}
    <button type="button" onClick=${() => setAsking(true)}>Schedule a dream</button>
    ${done ? html` <span role="status">Dream scheduled.</span>` : null}`;
}

export function PeerView({ w, p }) {
  const [page, setPage] = usePageParam('page');
  const [observer, setObserver] = useState('');
  const state = useLoad(
    () =>
      call('POST', `${ws(w)}/conclusions/list?page=${page}&size=${PAGE}`, {
        filters: observer === '' ? { observed_id: p } : { observed_id: p, observer_id: observer },
      }),
    [w, p, page, observer],
  );
  const [deleting, setDeleting] = useState(undefined);
  const groups = (items) => {
    const byObserver = new Map();
    for (const c of items) byObserver.set(c.observer_id, [...(byObserver.get(c.observer_id) ?? []), c]);
    return [...byObserver];
  };
  return html`<h1>Peer ${p}</h1>
    <p class="muted">in workspace <${Link} to=${`/workspaces/${enc(w)}`}>${w}<//></p>
    <${ScheduleDream} w=${w} p=${p} />
    <div class="columns">
      <${PeerCard} w=${w} p=${p} />
      <${Representation} w=${w} p=${p} />
    </div>
    <section aria-labelledby="conclusions-heading">
      <h2 id="conclusions-heading">Conclusions about ${p}</h2>
      <${SearchForm} id="observer-filter" label="Only those of observer (peer id)" onSearch=${(text) => {
        setPage(1);
        setObserver(text);
      }} />
      <${Loaded} state=${state}>
        ${(data) =>
          data.total === 0
            ? html`<p class="empty">
                No conclusions about ${p}${observer === '' ? '' : ` by ${observer}`} yet. Conclusions are formed in the background from the messages ${p} sends, when a model is
                configured (see the queue of this workspace); they can also be written with <code>POST /v3/workspaces/${w}/conclusions</code>.
              </p>`
            : html`<p class="muted">${data.total} in all, newest first.</p>
                ${groups(data.items).map(
                  ([by, items]) => html`<section class="group" key=${by} aria-label=${`as observed by ${by}`}>
                    <h3>As ${by === p ? `${p} sees itself` : `${by} sees ${p}`}</h3>
                    <ul class="cards">${items.map((c) => html`<${ConclusionItem} key=${c.id} w=${w} conclusion=${c} onDelete=${setDeleting} />`)}</ul>
                  </section>`,
                )}
                <${Pager} page=${data} onPage=${setPage} label="Pages of conclusions" />`}
      <//>
    </section>
    ${deleting !== undefined
      ? html`<${Confirm}
          title="Delete this conclusion?"
          confirmLabel="Delete conclusion"
          danger=${true}
          onClose=${() => setDeleting(undefined)}
          onConfirm=${async () => {
            await call('DELETE', `${ws(w)}/conclusions/${enc(deleting.id)}`);
            state.reload();
          }}
        >
          <blockquote>${deleting.content}</blockquote>
          <p>Agents will no longer be told this. It cannot be undone.</p>
        <//>`
      : null}`;
}

function Summaries({ w, s }) {
  const state = useLoad(() => call('GET', `${ws(w)}/sessions/${enc(s)}/summaries`), [w, s]);
  const one = (label, summary) =>
    summary === null
      ? html`<p class="empty">No ${label} summary yet: one is written every so many messages when a model is configured.</p>`
      : html`<div class="summary"><h3>${label[0].toUpperCase() + label.slice(1)} summary</h3><p class="content">${summary.content}</p><p class="muted">up to message ${summary.message_id}, <${Time} iso=${summary.created_at} />, ${summary.token_count} tokens</p></div>`;
  return html`<section aria-labelledby="summaries-heading">
    <h2 id="summaries-heading">Summaries</h2>
    <${Loaded} state=${state}>${(data) => html`${one('short', data.short_summary)}${one('long', data.long_summary)}`}<//>
  </section>`;
}

function MemberConfig({ w, s, p }) {
  const state = useLoad(() => call('GET', `${ws(w)}/sessions/${enc(s)}/peers/${enc(p)}/config`), [w, s, p]);
  const show = (v) => (v === null || v === undefined ? 'default' : v ? 'yes' : 'no');
  if (state.error !== undefined) return html`<td colspan="2" class="muted">${state.error.message}</td>`;
  if (state.data === undefined) return html`<td>…</td><td>…</td>`;
  return html`<td>${show(state.data.observe_me)}</td><td>${show(state.data.observe_others)}</td>`;
}

function Members({ w, s }) {
  const [page, setPage] = useState(1);
  const state = useLoad(() => call('GET', `${ws(w)}/sessions/${enc(s)}/peers?page=${page}&size=${PAGE}`), [w, s, page]);
  return html`<section aria-labelledby="members-heading">
    <h2 id="members-heading">Members</h2>
    <${Loaded} state=${state}>
      ${(data) =>
        data.total === 0
          ? html`<p class="empty">No members. Peers join by sending a message or through <code>POST …/sessions/${s}/peers</code>.</p>`
          : html`<div class="table-wrap"><table>
                <caption class="sr-only">Members and their observation settings</caption>
                <thead><tr><th scope="col">Peer</th><th scope="col">Observed</th><th scope="col">Observes others</th></tr></thead>
                <tbody>${data.items.map(
                  (m) => html`<tr key=${m.id}><th scope="row"><${Link} to=${`/workspaces/${enc(w)}/peers/${enc(m.id)}`}>${m.id}<//></th><${MemberConfig} w=${w} s=${s} p=${m.id} /></tr>`,
                )}</tbody>
              </table></div>
              <${Pager} page=${data} onPage=${setPage} label="Pages of members" />`}
    <//>
  </section>`;
}

/** The conclusions drawn from one message (those whose sources name it), loaded when asked for. */
function DrawnFrom({ w, message }) {
  const [open, setOpen] = useState(false);
  const state = useLoad(
    () => (open ? call('POST', `${ws(w)}/conclusions/list?size=${PAGE}`, { filters: { source_ids: { contains: message.id } } }) : Promise.resolve(null)),
    [w, message.id, open],
  );
  const id = `drawn-${message.id}`;
  return html`<div class="drawn">
    <button type="button" aria-expanded=${open} aria-controls=${id} onClick=${() => setOpen(!open)}>${open ? 'Hide what came of it' : 'What came of it'}</button>
    ${open
      ? html`<div id=${id}><${Loaded} state=${state}>
          ${(data) =>
            data === null
              ? null
              : data.total === 0
                ? html`<p class="muted">No conclusion was drawn from this message: not derived yet (see the work pending above), nothing worth keeping in it, or its sender is not observed.</p>`
                : html`<ul class="drawn-list">${data.items.map(
                    (c) => html`<li key=${c.id}><span class="level">${c.level}</span> ${c.content} <span class="muted">(${c.observer_id} about <${Link} to=${`/workspaces/${enc(w)}/peers/${enc(c.observed_id)}`}>${c.observed_id}<//>)</span></li>`,
                  )}</ul>`}
        <//></div>`
      : null}
  </div>`;
}

/** The session's reasoning work still to do: whether its messages are derived yet. */
function SessionWork({ w, s }) {
  const state = useLoad(() => call('GET', `${ws(w)}/queue/status?session_id=${enc(s)}`), [w, s]);
  if (state.data === undefined) return null;
  const open = state.data.pending_work_units + state.data.in_progress_work_units;
  return html`<p class="muted" role="status">${open === 0
    ? 'No reasoning work is waiting for this session: every message that was queued has been derived.'
    : `${open} work unit${open === 1 ? '' : 's'} of this session still to derive (${state.data.in_progress_work_units} in progress).`}
    <${Link} to=${`/workspaces/${enc(w)}/queue`}>See the queue<//></p>`;
}

export function SessionView({ w, s }) {
  const [page, setPage] = usePageParam('page');
  const [newest, setNewest] = useState(false);
  const state = useLoad(() => call('POST', `${ws(w)}/sessions/${enc(s)}/messages/list?page=${page}&size=${PAGE}&reverse=${newest}`, {}), [w, s, page, newest]);
  return html`<h1>Session ${s}</h1>
    <p class="muted">in workspace <${Link} to=${`/workspaces/${enc(w)}`}>${w}<//></p>
    <div class="columns">
      <${Summaries} w=${w} s=${s} />
      <${Members} w=${w} s=${s} />
    </div>
    <section aria-labelledby="transcript-heading">
      <h2 id="transcript-heading">Transcript</h2>
      <${SessionWork} w=${w} s=${s} />
      <label class="inline"><input type="checkbox" checked=${newest} onChange=${(e) => {
        setPage(1);
        setNewest(e.currentTarget.checked);
      }} /> Newest first</label>
      <${Loaded} state=${state}>
        ${(data) =>
          data.total === 0
            ? html`<p class="empty">No messages in this session. Agents add them with <code>POST …/sessions/${s}/messages</code>.</p>`
            : html`<${Pager} page=${data} onPage=${setPage} label="Pages of the transcript (top)" />
                <ol class="transcript">${data.items.map((m) => html`<li key=${m.id}><${MessageItem} w=${w} message=${m} /><${DrawnFrom} w=${w} message=${m} /></li>`)}</ol>
                <${Pager} page=${data} onPage=${setPage} label="Pages of the transcript" />`}
      <//>
    </section>`;
}

const STATUSES = [
  ['dead', 'Dead (gave up)'],
  ['failed', 'Failing (will retry)'],
  ['running', 'Running'],
  ['pending', 'Pending'],
];

function JobList({ w, status, label }) {
  const [page, setPage] = useState(1);
  const state = useLoad(() => call('POST', `${ws(w)}/queue/jobs/list?page=${page}&size=${PAGE}`, { status }), [w, status, page]);
  const [retrying, setRetrying] = useState(undefined);
  return html`<section aria-labelledby=${`jobs-${status}`}>
    <h2 id=${`jobs-${status}`}>${label}</h2>
    <${Loaded} state=${state}>
      ${(data) =>
        data.total === 0
          ? html`<p class="empty">None.</p>`
          : html`<ul class="cards">
                ${data.items.map(
                  (job) => html`<li key=${job.id} class="job">
                    <p><strong>${job.kind}</strong> ${job.session_id !== null ? html`in <${Link} to=${`/workspaces/${enc(w)}/sessions/${enc(job.session_id)}`}>${job.session_id}<//>` : null}
                      ${job.observed !== null ? html` about <${Link} to=${`/workspaces/${enc(w)}/peers/${enc(job.observed)}`}>${job.observed}<//>` : null}</p>
                    <p class="muted">queued <${Time} iso=${job.created_at} />, ${job.attempts} of ${job.max_attempts} attempts${job.finished_at !== null ? html`, gave up <${Time} iso=${job.finished_at} />` : null}</p>
                    ${job.last_error !== null ? html`<pre class="error-text">${job.last_error}</pre>` : null}
                    ${job.status === 'dead' ? html`<button type="button" onClick=${() => setRetrying(job)}>Retry</button>` : null}
                  </li>`,
                )}
              </ul>
              <${Pager} page=${data} onPage=${setPage} label=${`Pages of ${label}`} />`}
    <//>
    ${retrying !== undefined
      ? html`<${Confirm}
          title="Retry this work?"
          confirmLabel="Retry"
          onClose=${() => setRetrying(undefined)}
          onConfirm=${async () => {
            await call('POST', `${ws(w)}/queue/jobs/${enc(retrying.id)}/retry`);
            state.reload();
          }}
        >
          <p>The ${retrying.kind} job goes back to the queue with a fresh set of attempts.</p>
        <//>`
      : null}
  </section>`;
}

const USAGE_WINDOWS = [
  [24, 'Last 24 hours'],
  [168, 'Last 7 days'],
  [720, 'Last 30 days'],
];

/** The workspace's model calls and tokens by module and model, over a window the person picks. */
function ModelUsage({ w }) {
  const [hours, setHours] = useState(24);
  const state = useLoad(() => statistics(w, hours), [w, hours]);
  return html`<section aria-labelledby="usage-heading">
    <h2 id="usage-heading">Model calls and tokens</h2>
    <label class="usage-window">Counted over <select value=${hours} onChange=${(event) => setHours(Number(event.currentTarget.value))}>
      ${USAGE_WINDOWS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
    </select></label>
    <${Loaded} state=${state}>
      ${(s) =>
        s.model_usage.modules.length === 0
          ? html`<p class="empty">No model calls for this workspace since <${Time} iso=${s.model_usage.since} />. The deriver, summaries, dreams, chat and embeddings call the model only when one is configured.</p>`
          : html`<div class="table-wrap"><table class="usage">
              <caption class="sr-only">Model calls and tokens by module and model</caption>
              <thead><tr><th scope="col">Module</th><th scope="col">Model</th><th scope="col">Calls</th><th scope="col">Failed</th><th scope="col">Input tokens</th><th scope="col">Output tokens</th></tr></thead>
              <tbody>
                ${s.model_usage.modules.map(
                  (u) => html`<tr key=${`${u.module} ${u.model}`}>
                    <th scope="row">${u.module}</th><td>${u.model}</td><td>${u.calls}</td><td>${u.failed_calls}</td><td>${u.input_tokens}</td><td>${u.output_tokens}</td>
                  </tr>`,
                )}
              </tbody>
            </table></div>`}
    <//>
  </section>`;
}

export function QueueView({ w }) {
  const state = useLoad(() => call('GET', `${ws(w)}/queue/status`), [w]);
  return html`<h1>Queued work of ${w}</h1>
    <p class="muted">in workspace <${Link} to=${`/workspaces/${enc(w)}`}>${w}<//></p>
    <section aria-labelledby="status-heading">
      <h2 id="status-heading">Reasoning work units</h2>
      <${Loaded} state=${state}>
        ${(q) => html`<dl class="counts">
          <div><dt>Pending</dt><dd>${q.pending_work_units}</dd></div>
          <div><dt>In progress</dt><dd>${q.in_progress_work_units}</dd></div>
          <div><dt>Completed</dt><dd>${q.completed_work_units}</dd></div>
          <div><dt>Total</dt><dd>${q.total_work_units}</dd></div>
        </dl>
        ${q.total_work_units === 0 ? html`<p class="empty">Nothing queued. Messages queue work for the deriver when a model is configured; with none configured, conclusions are not being formed.</p>` : null}`}
      <//>
    </section>
    <${ModelUsage} w=${w} />
    ${STATUSES.map(([status, label]) => html`<${JobList} key=${status} w=${w} status=${status} label=${label} />`)}`;
}
