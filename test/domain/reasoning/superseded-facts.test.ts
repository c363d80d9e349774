import { describe, expect, it, vi } from 'vitest';
import { drainWorkspace, type ReasoningSetup, reasoningSuite } from '../../support/reasoning-harness.js';
import { heldAnswer, type RecordedRequest } from '../../support/fake-model-server.js';

/*
 * Facts over time with a model (docs/reasoning.md, "Facts over time"): the deriver is shown the
 * current facts a batch may change and declares replacements, which are checked as untrusted
 * input; chat's tools and peer card formation see current facts only. The fake model server
 * answers through the real openai transport, on SQLite or PostgreSQL.
 */

const suite = reasoningSuite();
const apps = suite.apps;

interface Conclusion {
  id: string;
  content: string;
  observer_id: string;
  valid_from: string;
  superseded_at: string | null;
  superseded_by: string | null;
  source_ids: string[] | null;
}

async function conclusions(s: ReasoningSetup, observer: string, include = false): Promise<Conclusion[]> {
  const page = await s.api.post(`/v3/workspaces/${s.ws}/conclusions/list?size=100${include ? '&include_superseded=true' : ''}`, {
    filters: { observer_id: observer, observed_id: 'alice' },
  });
  expect(page.status, page.text).toBe(200);
  return page.body.items as Conclusion[];
}

async function seed(s: ReasoningSetup, items: { observer: string; content: string }[]): Promise<Conclusion[]> {
  const created = await s.api.post(`/v3/workspaces/${s.ws}/conclusions`, {
    conclusions: items.map((item) => ({ content: item.content, observer_id: item.observer, observed_id: 'alice', session_id: 's1' })),
  });
  expect(created.status, created.text).toBe(201);
  return created.body as Conclusion[];
}

const prompt = (r: RecordedRequest) => String(r.body.messages[0].content);
const isDeriver = (r: RecordedRequest) => prompt(r).includes('Participant: alice');

async function jobs(s: ReasoningSetup) {
  return s.api.database.driver.all<{ status: string; attempts: number | string }>("SELECT status, attempts FROM jobs WHERE workspace_id = ? AND kind = 'reasoning.represent'", [s.ws]);
}

describe('the deriver and facts that change', () => {
  it('is shown the current facts and supersedes the one a new fact replaces, in every observer\'s collection; bad references are ignored, not failures', async () => {
    const s = await apps.start();
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: { observe_others: true } })).status).toBe(200);
    const [lisbon] = await seed(s, [{ observer: 'alice', content: 'alice lives in Lisbon' }]);
    const [lisbonByBob] = await seed(s, [{ observer: 'bob', content: 'alice lives in Lisbon' }]);
    const [tea] = await seed(s, [{ observer: 'alice', content: 'alice likes green tea' }]);
    // the only self-stated fact already superseded before the batch: never shown
    const [old] = await seed(s, [{ observer: 'alice', content: 'alice lived in Faro' }]);
    expect((await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice left Faro', observer_id: 'alice', observed_id: 'alice', supersedes: [old.id] }] })).status).toBe(201);

    suite.fake().script.defaultChat((request) => {
      if (!isDeriver(request)) return { text: 'ok' };
      const text = prompt(request);
      // the numbers the model is shown: the facts' texts and their place
      const shown = [...text.matchAll(/^\[(\d+)\] \d{4}-\d\d-\d\d: (.*)$/gm)].map((m) => [Number(m[1]), m[2]] as const);
      const lisbonAt = shown.find(([, content]) => content === 'alice lives in Lisbon')![0];
      return {
        json: {
          explicit: [
            { content: 'alice moved to Porto', replaces: [lisbonAt] },
            // not shown (a number out of range, an id never shown, a fact already replaced above, a bad type)
            { content: 'alice has a dog', replaces: [99, 'no-such-id', lisbonAt, { id: 1 }] },
            { content: 'alice drinks coffee now' },
          ],
        },
      };
    });
    const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'Big news: I moved to Porto last week, got a dog, and switched to coffee' }] });
    expect(sent.status).toBe(201);
    await drainWorkspace(s);

    const deriverPrompts = suite.fake().requests('chat').filter(isDeriver).map(prompt);
    expect(deriverPrompts).toHaveLength(1);
    expect(deriverPrompts[0]).toContain('Facts already known about alice');
    expect(deriverPrompts[0]).toContain('alice lives in Lisbon');
    expect(deriverPrompts[0]).toContain('alice likes green tea');
    // superseded facts are not shown, nor another observer's
    expect(deriverPrompts[0]).not.toContain('alice lived in Faro');
    // the answer asked for may name replacements
    expect(suite.fake().requests('chat').filter(isDeriver)[0].body.response_format.json_schema.schema.properties.explicit.items.properties.replaces).toEqual({ type: 'array', items: { type: 'integer' } });

    // the job succeeded once, whatever the bad references
    expect((await jobs(s)).map((j) => [j.status, Number(j.attempts)])).toEqual([['done', 1]]);

    for (const [observer, replaced] of [
      ['alice', lisbon],
      ['bob', lisbonByBob],
    ] as const) {
      const current = await conclusions(s, observer);
      const porto = current.find((c) => c.content === 'alice moved to Porto')!;
      expect(porto, observer).toBeDefined();
      expect(current.map((c) => c.content)).not.toContain('alice lives in Lisbon');
      const all = await conclusions(s, observer, true);
      expect(all.find((c) => c.id === replaced.id)).toMatchObject({ superseded_by: porto.id });
      // a fact holds from the time of the message it was drawn from
      expect(porto.valid_from).toBe(sent.body[0].created_at);
      expect(porto.source_ids).toEqual([sent.body[0].id]);
      const history = await api.get(`/v3/workspaces/${ws}/conclusions/${porto.id}/history`);
      expect(history.status).toBe(200);
      expect((history.body as Conclusion[]).map((c) => c.id)).toEqual([replaced.id, porto.id]);
      expect((history.body as { source_messages: { id: string }[] }[])[1].source_messages.map((m) => m.id)).toEqual([sent.body[0].id]);
    }
    // the facts nothing replaced are still current
    expect((await conclusions(s, 'alice')).map((c) => c.id)).toContain(tea.id);
    expect((await conclusions(s, 'alice')).map((c) => c.content).sort()).toEqual(['alice drinks coffee now', 'alice has a dog', 'alice left Faro', 'alice likes green tea', 'alice moved to Porto']);
  });

  it('a fact superseded or deleted while the model answers is left as it is; the job still succeeds', async () => {
    const s = await apps.start();
    const { api, ws, worker } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {} })).status).toBe(200);
    const [lisbon, tea] = await seed(s, [
      { observer: 'alice', content: 'alice lives in Lisbon' },
      { observer: 'alice', content: 'alice likes green tea' },
    ]);
    const hold = heldAnswer();
    suite.fake().script.defaultChat((request) => {
      if (!isDeriver(request)) return { text: 'ok' };
      const shown = [...prompt(request).matchAll(/^\[(\d+)\] \d{4}-\d\d-\d\d: (.*)$/gm)];
      const at = (content: string) => Number(shown.find((m) => m[2] === content)![1]);
      return { until: hold.until, json: { explicit: [{ content: 'alice moved to Porto', replaces: [at('alice lives in Lisbon')] }, { content: 'alice prefers coffee', replaces: [at('alice likes green tea')] }] } };
    });
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'Moved to Porto; coffee person now' }] })).status).toBe(201);
    worker.start();
    await vi.waitFor(() => expect(suite.fake().requests('chat').filter(isDeriver)).toHaveLength(1), { timeout: 10_000 });
    // meanwhile a user supersedes one known fact and deletes the other
    const braga = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice lives in Braga', observer_id: 'alice', observed_id: 'alice', supersedes: [lisbon.id] }] });
    expect(braga.status).toBe(201);
    expect((await api.delete(`/v3/workspaces/${ws}/conclusions/${tea.id}`)).status).toBe(204);
    hold.release();
    await drainWorkspace(s);

    expect((await jobs(s)).map((j) => [j.status, Number(j.attempts)])).toEqual([['done', 1]]);
    const all = await conclusions(s, 'alice', true);
    // Lisbon keeps the supersession the user made; the deleted fact stays deleted
    expect(all.find((c) => c.id === lisbon.id)).toMatchObject({ superseded_by: braga.body[0].id });
    expect(all.map((c) => c.id)).not.toContain(tea.id);
    expect((await conclusions(s, 'alice')).map((c) => c.content).sort()).toEqual(['alice lives in Braga', 'alice moved to Porto', 'alice prefers coffee']);
  });
});

describe('chat and peer cards over facts that changed', () => {
  it('chat\'s prefetch and search_memory see current facts only', async () => {
    const s = await apps.start({ DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {} })).status).toBe(200);
    const [lisbon] = await seed(s, [{ observer: 'alice', content: 'alice lives in Lisbon' }]);
    expect((await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice lives in Porto', observer_id: 'alice', observed_id: 'alice', supersedes: [lisbon.id] }] })).status).toBe(201);

    suite.fake().script.chat({ toolCalls: [{ name: 'search_memory', arguments: { query: 'where does alice live Lisbon Porto' } }] });
    suite.fake().script.chat({ toolCalls: [{ name: 'get_observation_context', arguments: { observation_id: lisbon.id } }] });
    suite.fake().script.chat({ text: 'Alice lives in Porto.' });
    const answer = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'Where does alice live? Lisbon or Porto?' });
    expect(answer.status, answer.text).toBe(200);
    const requests = suite.fake().requests('chat');
    const first = requests[0].body.messages.map((m: { content: string }) => m.content).join('\n');
    expect(first).toContain('alice lives in Porto');
    expect(first).not.toContain('alice lives in Lisbon');
    const results = requests.at(-1)!.body.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content) as string[];
    expect(results).toHaveLength(2);
    expect(results[0]).toContain('alice lives in Porto');
    expect(results[0]).not.toContain('alice lives in Lisbon');
    // a superseded fact cannot be opened by id either
    expect(results[1]).not.toContain('alice lives in Lisbon');
  });

  it('a dream forming the peer card reads current facts only', async () => {
    const s = await apps.start({ DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {} })).status).toBe(200);
    const [lisbon] = await seed(s, [{ observer: 'alice', content: 'alice lives in Lisbon' }]);
    expect((await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice lives in Porto', observer_id: 'alice', observed_id: 'alice', supersedes: [lisbon.id] }] })).status).toBe(201);
    suite.fake().script.chat({ toolCalls: [{ name: 'get_recent_observations', arguments: {} }, { name: 'search_memory', arguments: { query: 'Lisbon Porto' } }] });
    suite.fake().script.defaultChat({ text: 'done' });
    expect((await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'card_refresh' })).status).toBe(204);
    await drainWorkspace(s, { allJobs: true });
    const second = suite.fake().requests('chat')[1];
    expect(second).toBeDefined();
    const results = second.body.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content) as string[];
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect(result).toContain('alice lives in Porto');
      expect(result).not.toContain('alice lives in Lisbon');
    }
  });
});
