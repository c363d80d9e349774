import { CURRENT_RULES, WILDCARD_RULES, type ReadRules } from '../../domain/filters/filters.js';
import type { DreamType } from '../../domain/job-kinds.js';
import type { ConclusionRecord } from '../../storage/store.js';
import { paged, pagedReversible } from '../shared/fields.js';
import { conclusionBatchV3, observationBatchV2, peerContextQueryV2, peerContextQueryV3, representationGetV2, representationGetV3 } from '../shared/memory-schemas.js';
import { presentConclusion, presentObservation } from '../shared/present.js';
import {
  messageBatch,
  messageUpdate,
  peerConfigMap,
  peerCreate,
  peerUpdate,
  sessionCreate,
  sessionUpdate,
  webhookCreate,
  workspaceCreate,
  workspaceUpdate,
} from '../shared/resource-schemas.js';
import type { Reply } from '../shared/route.js';
import { transform, type Field, type Schema } from '../shared/validate.js';

/*
 * The two workspace generations of the interface, v2 (2.5.1) and v3 (3.0.12), as one table: a
 * row per difference the contracts fix for the routes both have (contract-v3 §9.1 unless said
 * otherwise), a column per generation. Routes are declared once (routes/) and read the rows they
 * need while they are registered, never per request. A new difference is a new row here.
 *
 * Differences handled below the routes, by generation name: the authorization algorithm (§2.4,
 * §9.2) and a body without Content-Type (§1.4) in shared/route.ts; id length, metadata limits,
 * the configuration key and the webhook URL rule in shared/resource-schemas.ts and fields.ts;
 * list ordering and filter rules by the domain, given the `rules` row.
 */

export type GenerationName = 'v2' | 'v3';

/** One difference: v2's value, then v3's. */
function row<T>(v2: T, v3: T): Record<GenerationName, T> {
  return { v2, v3 };
}

/** The paging query of a list: `reverse` only where the generation has it. */
export type Paging = { page: Field<number>; size: Field<number>; reverse?: Field<boolean> };

/** A conclusion batch body, read as its items. */
type ConclusionItems = Schema<{ content: string; observer_id: string; observed_id: string; session_id: string | null; supersedes?: string[] }[]>;

function bodiesOf(name: GenerationName) {
  return {
    workspaceCreate: workspaceCreate(name),
    workspaceUpdate: workspaceUpdate(name),
    peerCreate: peerCreate(name),
    peerUpdate: peerUpdate(name),
    sessionCreate: sessionCreate(name),
    sessionUpdate: sessionUpdate(name),
    sessionPeers: peerConfigMap(name),
    webhookCreate: webhookCreate(name),
    messageBatch: messageBatch(name),
    messageUpdate: messageUpdate(name),
  };
}

const DIFFERENCES = {
  /**
   * Status of a request that created something: a get-or-create that created (§8), messages,
   * file upload, session clone, conclusions. v2 answers 200 to all of them.
   */
  createdStatus: row<200 | 201>(200, 201),
  /** How filters, session order and refusals are read in the domain (filters/filters.ts). */
  rules: row<ReadRules>(WILDCARD_RULES, CURRENT_RULES),
  /** Query of the workspace, peer, session and peer-sessions lists ("`reverse` on ..."). */
  listPaging: row<Paging>(paged, pagedReversible),
  /** "Session clone". */
  cloneMethod: row<'GET' | 'POST'>('GET', 'POST'),
  /** "Set session-peer config": v2 answers 200 with an empty body. */
  setMemberConfig: row<{ method: 'POST' | 'PUT'; status: 200 | 204 }>({ method: 'POST', status: 200 }, { method: 'PUT', status: 204 }),
  /** "Delete webhook". */
  webhookDeleted: row<Reply>({ status: 200, body: null }, { status: 204 }),
  /** "Webhook routes auth": v2's accept any key whose `w` is absent or the path's; v3's are workspace-scoped. */
  isWebhookSelfAuthorizing: row(true, false),
  /**
   * "Delete workspace": v2 deletes at once whatever sessions remain and answers 200 with the
   * deleted workspace; v3 refuses while sessions are active (409) and answers 202.
   */
  workspaceDeletion: row<{ isAccepted: boolean; notFoundMessage: (workspaceId: string) => string }>(
    { isAccepted: false, notFoundMessage: () => 'Resource not found' },
    { isAccepted: true, notFoundMessage: (workspaceId) => `Workspace ${workspaceId} not found` },
  ),
  /**
   * "Create messages": the path suffixes that create messages. v2 only the trailing slash (the
   * slash-less path redirects, 307); v3 both, the slash one hidden from the OpenAPI (§8).
   */
  messageCreatePaths: row<readonly { suffix: '' | '/'; isHidden?: boolean }[]>(
    [{ suffix: '/' }],
    [
      { suffix: '', isHidden: false },
      { suffix: '/', isHidden: true },
    ],
  ),
  /** "Observations vs conclusions" (§7.5): names, body, item shape, delete answer. */
  conclusions: row<{
    /** Path segment, tag and the noun of summaries. */
    plural: 'observations' | 'conclusions';
    /** One of them with its article (summaries). */
    one: 'an observation' | 'a conclusion';
    /** How a summary says whom they are about. */
    aboutPeer: 'of a peer' | 'about a peer';
    idParam: 'observation_id' | 'conclusion_id';
    /** `{"observations": [...]}` (session required) or `{"conclusions": [...]}`. */
    batch: ConclusionItems;
    present: (c: ConclusionRecord) => unknown;
    deleted: Reply;
  }>(
    {
      plural: 'observations',
      one: 'an observation',
      aboutPeer: 'of a peer',
      idParam: 'observation_id',
      batch: transform(observationBatchV2, (body) => body.observations),
      present: presentObservation,
      deleted: { status: 200, body: { message: 'Observation deleted successfully' } },
    },
    {
      plural: 'conclusions',
      one: 'a conclusion',
      aboutPeer: 'about a peer',
      idParam: 'conclusion_id',
      batch: transform(conclusionBatchV3, (body) => body.conclusions),
      present: presentConclusion,
      deleted: { status: 204 },
    },
  ),
  /** "Queue status". */
  queueStatusPath: row<'deriver/status' | 'queue/status'>('deriver/status', 'queue/status'),
  /** "Dreams": v2 triggers (both its types are the omni dream), v3 schedules, for a session, rebuilding. */
  dreams: row<{
    path: 'trigger_dream' | 'schedule_dream';
    title: 'TriggerDreamRequest' | 'ScheduleDreamRequest';
    summary: string;
    /** Wire dream type → the dream it runs. */
    types: Readonly<Record<string, DreamType>>;
    /** v3's `session_id` and `rebuild`. */
    hasScheduleOptions: boolean;
  }>(
    {
      path: 'trigger_dream',
      title: 'TriggerDreamRequest',
      summary: 'Trigger a dream (skipped when one is already pending or running for the collection)',
      types: { consolidate: 'omni', agent: 'omni' },
      hasScheduleOptions: false,
    },
    {
      path: 'schedule_dream',
      title: 'ScheduleDreamRequest',
      summary: 'Schedule a dream (skipped when one of that type is already pending or running for the collection)',
      types: { omni: 'omni', card_refresh: 'card_refresh' },
      hasScheduleOptions: true,
    },
  ),
  /** "Chat options": v3 adds `reasoning_level`, `filters` (§5.6) and `response_format`. */
  hasChatOptions: row(false, true),
  /** "Auth model": v3's narrowest claim brings the peer-key rules of §2.5 (member config, chat sessions). */
  hasPeerKeyRules: row(false, true),
  /**
   * "Context/representation params": the names v2 gave the memory options. The `sessions`
   * allowlist of session context, the `filters` allowlist of representation (§5.6) and
   * `search_max_distance` of peer context and representation are read in v3 only (v2 accepts
   * the last and ignores it). v2's peer and session context carry a `Representation` object,
   * v3's markdown.
   */
  memory: row<{
    searchQuery: 'last_message' | 'search_query';
    includeMost: 'include_most_derived' | 'include_most_frequent';
    maxConclusions: 'max_observations' | 'max_conclusions';
    hasV3Options: boolean;
    peerContextQuery: typeof peerContextQueryV2 | typeof peerContextQueryV3;
    representationBody: typeof representationGetV2 | typeof representationGetV3;
    isRepresentationObject: boolean;
    representationSummary: string;
  }>(
    {
      searchQuery: 'last_message',
      includeMost: 'include_most_derived',
      maxConclusions: 'max_observations',
      hasV3Options: false,
      peerContextQuery: peerContextQueryV2,
      representationBody: representationGetV2,
      isRepresentationObject: true,
      representationSummary: 'The working representation: stored observations about a peer, rendered as markdown',
    },
    {
      searchQuery: 'search_query',
      includeMost: 'include_most_frequent',
      maxConclusions: 'max_conclusions',
      hasV3Options: true,
      peerContextQuery: peerContextQueryV3,
      representationBody: representationGetV3,
      isRepresentationObject: false,
      representationSummary: 'The stored conclusions about a peer, rendered as markdown',
    },
  ),
  /** "Keys" (§7.7): v3 needs a workspace for peer and session keys. */
  keyNeedsWorkspace: row(false, true),
  /** "ID max length", "Metadata limits", "Configuration key", "Webhook URL private-IP rule": the request bodies. */
  bodies: row(bodiesOf('v2'), bodiesOf('v3')),
};

/** One generation's column of the table, with its name (the path prefix: `/v2`, `/v3`). */
export type WorkspaceGeneration = { name: GenerationName } & { [K in keyof typeof DIFFERENCES]: (typeof DIFFERENCES)[K]['v2'] };

function column(name: GenerationName): WorkspaceGeneration {
  const values = Object.entries(DIFFERENCES).map(([key, byGeneration]) => [key, byGeneration[name]]);
  return { name, ...Object.fromEntries(values) } as WorkspaceGeneration;
}

export const V2 = column('v2');
export const V3 = column('v3');
