import { describe, expect, it } from 'vitest';
import { drainWorkspace, facts, reasoningSuite } from '../../support/reasoning-harness.js';
import { type RecordedRequest } from '../../support/fake-model-server.js';

/*
 * The reference's end-to-end case of scopes (shared/reference/scopes.md S11, scope_confines_recall):
 * a scope created with the work session before any message; alice tells work facts there and her
 * hobbies in another session; the deriver (the fake model) fans the work facts out to the scope.
 * Read through the scope, neither the representation nor the chat's prompt and tools hold a hobby;
 * without the scope the chat sees them.
 */

const suite = reasoningSuite();
const apps = suite.apps;

const everything = (r: RecordedRequest) => JSON.stringify(r.body.messages);

describe('a scope confines recall', () => {
  it('the scoped representation and chat hold the work facts and never the hobbies', async () => {
    const s = await apps.start({ DREAM_ENABLED: 'false' });
    const { api, ws } = s;
    const w = `/v3/workspaces/${ws}`;
    suite.fake().script.defaultChat((request) =>
      JSON.stringify(request.body.messages).includes('marathon')
        ? facts('alice runs marathons', 'alice plays bass in a band')
        : facts('alice is a data engineer', 'alice works on the billing pipeline'),
    );
    expect((await api.post(`${w}/sessions`, { id: 'work_session', peers: { alice: {}, assistant: { observe_others: true } } })).status).toBe(201);
    expect((await api.post(`${w}/sessions`, { id: 'personal_session', peers: { alice: {}, assistant: { observe_others: true } } })).status).toBe(201);
    expect((await api.post(`${w}/scopes`, { id: 'work' })).status).toBe(201);
    expect((await api.post(`${w}/scopes/work/sessions`, { session_ids: ['work_session'] })).status).toBe(204);
    await api.post(`${w}/sessions/work_session/messages`, { messages: [{ peer_id: 'alice', content: 'I am a data engineer on the billing pipeline' }] });
    await api.post(`${w}/sessions/personal_session/messages`, { messages: [{ peer_id: 'alice', content: 'I run a marathon every year and play bass' }] });
    await drainWorkspace(s);

    // the deriver wrote the work facts into the scope's collection too, once
    const scoped = await api.post(`${w}/conclusions/list`, { filters: { observer_id: 'scope.work', observed_id: 'alice' } });
    expect(scoped.body.items.map((c: { content: string }) => c.content).sort()).toEqual(['alice is a data engineer', 'alice works on the billing pipeline']);

    const representation = await api.post(`${w}/peers/assistant/representation`, { scope: 'work', target: 'alice' });
    expect(representation.status).toBe(200);
    expect(representation.body.representation).toContain('data engineer');
    expect(representation.body.representation).not.toMatch(/marathon|bass/);

    suite.fake().reset();
    // the agent searches for the hobbies itself: its tools find nothing outside the scope
    suite.fake().script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'marathon' } }] });
    suite.fake().script.chat({ toolCalls: [{ name: 'search_memory', arguments: { query: 'marathon bass hobbies' } }] });
    suite.fake().script.chat({ toolCalls: [{ name: 'search_messages', arguments: { query: 'marathon' } }] });
    suite.fake().script.defaultChat({ text: 'I only know about her work.' });
    const scopedChat = await api.post(`${w}/peers/assistant/chat`, { scope: 'work', target: 'alice', query: 'What are her hobbies outside work?' });
    expect(scopedChat.status).toBe(200);
    expect(scopedChat.body).toEqual({ content: 'I only know about her work.' });
    const asked = suite.fake().requests('chat');
    expect(asked.length).toBeGreaterThan(0);
    expect(asked).toHaveLength(4);
    const toolResults = asked[3].body.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content);
    expect(toolResults).toHaveLength(3);
    for (const result of toolResults) expect(result).not.toMatch(/marathon every year|runs marathons|plays bass/);
    expect(JSON.stringify(asked[0].body.messages)).toContain('data engineer');
    expect(JSON.stringify(asked[0].body.messages)).not.toMatch(/marathons|bass/);

    // the control: the same chat without the scope sees the hobbies
    suite.fake().reset();
    suite.fake().script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'marathon' } }] });
    suite.fake().script.defaultChat({ text: 'She runs marathons.' });
    const open = await api.post(`${w}/peers/assistant/chat`, { target: 'alice', query: 'What are her hobbies outside work?' });
    expect(open.status).toBe(200);
    expect(everything(suite.fake().requests('chat')[0])).toContain('runs marathons');
    expect(everything(suite.fake().requests('chat')[1])).toContain('marathon every year');
  });

  it('a list of scopes confines the path peer’s own memory to their sessions', async () => {
    const s = await apps.start({ DREAM_ENABLED: 'false' });
    const { api, ws } = s;
    const w = `/v3/workspaces/${ws}`;
    suite.fake().script.defaultChat((request) =>
      JSON.stringify(request.body.messages).includes('marathon') ? facts('alice runs marathons') : facts('alice is a data engineer'),
    );
    await api.post(`${w}/sessions`, { id: 'work_session', peers: { alice: {} }, scopes: ['work'] });
    await api.post(`${w}/sessions`, { id: 'personal_session', peers: { alice: {} } });
    await api.post(`${w}/sessions/work_session/messages`, { messages: [{ peer_id: 'alice', content: 'I am a data engineer' }] });
    await api.post(`${w}/sessions/personal_session/messages`, { messages: [{ peer_id: 'alice', content: 'I run a marathon' }] });
    await drainWorkspace(s);
    suite.fake().reset();
    suite.fake().script.defaultChat({ text: 'ok' });
    expect((await api.post(`${w}/peers/alice/chat`, { scope: ['work'], query: 'What does she do?' })).status).toBe(200);
    const prompt = everything(suite.fake().requests('chat')[0]);
    expect(prompt).toContain('data engineer');
    expect(prompt).not.toContain('marathon');
  });
});
