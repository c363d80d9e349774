/**
 * Every environment setting Engram reads, declared once: its type, default, allowed values, whether
 * the reference server reads the same name, and one line of help. `loadConfig` reads through this
 * table (config/read-settings.ts), the `Config` fields take their types from it, and
 * `.env.example` and docs/configuration.md are generated from it (`npm run docs:settings`; a test
 * fails when either is stale, and another when the code reads a name the table lacks).
 *
 * A model's keys (`<PREFIX>MODEL`, `<PREFIX>TEMPERATURE`, ...) are declared once in MODEL_KEYS
 * and read under each prefix of MODEL_PREFIXES.
 */

export type SettingGroup =
  | 'server'
  | 'database'
  | 'sqlite'
  | 'auth'
  | 'limits'
  | 'webhooks'
  | 'jobs'
  | 'providers'
  | 'calls'
  | 'deriver'
  | 'summaries'
  | 'dreams'
  | 'chat'
  | 'embeddings'
  | 'not read'
  | 'command line';

export const GROUP_TITLES: Record<SettingGroup, string> = {
  server: 'Server',
  database: 'Database',
  sqlite: 'SQLite',
  auth: 'Authentication',
  limits: 'Limits that protect the process',
  webhooks: 'Webhooks',
  jobs: 'Background work',
  providers: 'Model providers',
  calls: 'Model calls',
  deriver: 'Deriver',
  summaries: 'Summaries',
  dreams: 'Peer cards and dreams',
  chat: 'Chat (dialectic)',
  embeddings: 'Embeddings',
  'not read': 'Reference settings Engram does not read',
  'command line': 'Command line',
};

interface Common {
  group: SettingGroup;
  /** One line for people: what the setting does. */
  help: string;
  /** The reference server reads the same name, so its `.env` carries over. */
  reference?: boolean;
  /** The default as people read it, where it is computed rather than a constant. */
  defaultText?: string;
}

export type SettingSpec = Common &
  (
    | { kind: 'integer' | 'number'; default?: number; min: number; max: number }
    | { kind: 'boolean'; default: boolean }
    | { kind: 'text'; default?: string }
    | { kind: 'choice'; values: readonly [string, ...string[]]; default?: string }
    | { kind: 'url' }
    | { kind: 'list'; default?: readonly string[]; values?: readonly string[] }
    | { kind: 'json' }
    /** A reference setting Engram does not read: `help` says what does its job here. */
    | { kind: 'not read' }
  );

/** A declaration without its group: a key read under several prefixes. */
export type KeySpec = SettingSpec extends infer S ? (S extends unknown ? Omit<S, 'group'> : never) : never;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const TRANSPORT_NAMES = ['openai', 'anthropic', 'gemini'] as const;

export const SETTINGS = {
  // server
  PORT: { group: 'server', kind: 'integer', default: 8000, min: 0, max: 65535, help: 'TCP port of the HTTP server' },
  HOST: { group: 'server', kind: 'text', default: '127.0.0.1', help: 'interface to listen on (0.0.0.0 to accept remote clients)' },
  CORS_ORIGINS: {
    group: 'server',
    kind: 'list',
    default: ['http://localhost', 'http://127.0.0.1:8000', 'https://api.honcho.dev'],
    help: 'origins whose browser pages may call the API, comma-separated as browsers send them (scheme://host[:port]); * for any, none for no cross-origin calls',
  },
  LOG_LEVEL: { group: 'server', kind: 'choice', values: LOG_LEVELS, default: 'info', help: 'pino level; at info a JSON line per request, written in batches (docs/operations.md, "Logs")' },
  SHUTDOWN_TIMEOUT_MS: { group: 'server', kind: 'integer', default: 10_000, min: 0, max: 600_000, help: 'how long a graceful stop waits for in-flight requests (ms)' },
  WEB_CONCURRENCY: {
    group: 'server',
    kind: 'integer',
    min: 1,
    max: 1024,
    defaultText: 'one per core',
    help: 'server processes `engram serve` runs on the one port (`--processes N` wins)',
  },
  METRICS_ENABLED: { group: 'server', kind: 'boolean', default: false, reference: true, help: 'Prometheus metrics at GET /metrics' },
  SESSION_OBSERVERS_LIMIT: { group: 'server', kind: 'integer', default: 10, min: 0, max: 1_000_000, reference: true, help: 'most peers with observe_others: true in one session' },
  // database
  DATABASE_URL: {
    group: 'database',
    kind: 'text',
    default: './data/engram.db',
    help: 'postgres://user:pass@host:5432/db selects PostgreSQL; anything else is a SQLite file path',
  },
  DATABASE_POOL_SIZE: {
    group: 'database',
    kind: 'integer',
    min: 2,
    max: 1000,
    defaultText: 'two per core and one, at most 10',
    help: "PostgreSQL: most connections of a process's pool (filtered lists and searches take up to 4 more): the server's max_connections must allow processes x (this + 4)",
  },
  DATABASE_CONNECT_TIMEOUT_MS: { group: 'database', kind: 'integer', default: 5000, min: 100, max: 600_000, help: 'PostgreSQL: longest wait for a connection before a request answers 503 (ms)' },
  DATABASE_PREPARED_STATEMENTS: {
    group: 'database',
    kind: 'boolean',
    default: true,
    help: 'PostgreSQL: frequent statements prepared by name; false behind a pooler that does not keep them (PgBouncer in transaction mode)',
  },
  VECTOR_BUILD_MEMORY_MB: {
    group: 'database',
    kind: 'integer',
    default: 512,
    min: 0,
    max: 1_048_576,
    help: "PostgreSQL: most memory one build of a message vector part's HNSW index may take (MiB; maintenance_work_mem raised for that build to what the part needs, never lowered); 0 leaves the role's setting",
  },
  FILTER_TIME_LIMIT_MS: {
    group: 'database',
    kind: 'integer',
    default: 5000,
    min: 10,
    max: 3_600_000,
    help: "longest one statement may spend testing rows against a request's filters; past it the request answers 422 (ms)",
  },
  // sqlite
  SQLITE_SYNCHRONOUS: { group: 'sqlite', kind: 'choice', values: ['NORMAL', 'FULL'], default: 'NORMAL', help: 'commit durability: NORMAL survives a crash of the process, FULL also a power loss' },
  SQLITE_CACHE_MB: { group: 'sqlite', kind: 'integer', default: 16, min: 1, max: 1_048_576, help: "SQLite's page cache per process (MiB)" },
  SQLITE_MMAP_MB: {
    group: 'sqlite',
    kind: 'integer',
    default: 2047,
    min: 0,
    max: 1_048_576,
    help: 'how much of the file is read through a memory map, shared by the processes (MiB; 0: off; 2047 is the whole file up to SQLite\'s limit); the server connection\'s: the read thread of vector scans reads without a map',
  },
  SQLITE_CHECKPOINTS: {
    group: 'sqlite',
    kind: 'choice',
    values: ['background', 'inline'],
    default: 'background',
    help: 'where the WAL is copied into the database: a thread of each process, or the commit that fills it',
  },
  SQLITE_VECTOR_SCANS: {
    group: 'sqlite',
    kind: 'choice',
    values: ['thread', 'inline'],
    default: 'thread',
    help: 'where vector searches scan: a connection in a thread of each process, or the server connection',
  },
  // auth
  AUTH_USE_AUTH: { group: 'auth', kind: 'boolean', default: false, reference: true, help: 'require bearer JWTs on every route' },
  AUTH_JWT_SECRET: { group: 'auth', kind: 'text', reference: true, help: 'HS256 secret of the JWTs; required when AUTH_USE_AUTH is true' },
  // limits
  HEADERS_TIMEOUT_MS: { group: 'limits', kind: 'integer', default: 10_000, min: 100, max: 3_600_000, help: 'time a client may take to send the headers; 408 after (ms)' },
  REQUEST_TIMEOUT_MS: { group: 'limits', kind: 'integer', default: 60_000, min: 100, max: 3_600_000, help: 'time a client may take to send the whole request; 408 after (ms)' },
  KEEP_ALIVE_TIMEOUT_MS: { group: 'limits', kind: 'integer', default: 72_000, min: 100, max: 3_600_000, help: "idle keep-alive connections close after this; keep it above a load balancer's idle timeout (ms)" },
  MAX_HEADER_BYTES: { group: 'limits', kind: 'integer', default: 16_384, min: 1024, max: 1_048_576, help: 'largest request line plus headers; 431 above (bytes)' },
  MAX_CONNECTIONS: { group: 'limits', kind: 'integer', default: 1000, min: 0, max: 1_000_000, help: 'most open client connections per server process (0: no limit); further ones are closed at once' },
  // webhooks
  WEBHOOK_SECRET: { group: 'webhooks', kind: 'text', reference: true, help: 'signs deliveries (X-Honcho-Signature); none are sent while it is empty' },
  WEBHOOK_MAX_WORKSPACE_LIMIT: { group: 'webhooks', kind: 'integer', default: 10, min: 0, max: 1_000_000, reference: true, help: 'most webhook endpoints per workspace' },
  WEBHOOK_ALLOW_PRIVATE_URLS: { group: 'webhooks', kind: 'boolean', default: false, help: 'let deliveries reach private or loopback addresses (local development)' },
  WEBHOOK_TIMEOUT_MS: { group: 'webhooks', kind: 'integer', default: 30_000, min: 1, max: 600_000, help: 'how long one delivery may take (ms)' },
  WEBHOOK_ORDERED: {
    group: 'webhooks',
    kind: 'boolean',
    default: true,
    help: 'deliveries to one endpoint one at a time, in order; false sends them side by side (docs/webhooks.md, "Throughput")',
  },
  // jobs
  RUN_WORKERS: { group: 'jobs', kind: 'boolean', default: true, help: '`engram serve` also runs the background workers (false: run `engram worker` apart)' },
  WORKER_CONCURRENCY: {
    group: 'jobs',
    kind: 'integer',
    default: 8,
    min: 1,
    max: 1000,
    help: 'jobs one process runs at once (webhook deliveries and each kind of reasoning work take at most half)',
  },
  WORKER_POLL_MS: { group: 'jobs', kind: 'integer', default: 250, min: 1, max: 60_000, help: 'idle poll interval of a worker (ms)' },
  JOB_MAX_ATTEMPTS: { group: 'jobs', kind: 'integer', default: 10, min: 1, max: 1000, help: 'attempts before a background job is dead-lettered' },
  JOB_RETRY_BASE_MS: { group: 'jobs', kind: 'integer', default: 1000, min: 1, max: 3_600_000, help: 'first retry delay, doubling with jitter (ms)' },
  JOB_RETRY_MAX_MS: { group: 'jobs', kind: 'integer', default: 300_000, min: 1, max: 86_400_000, help: 'longest retry delay (ms)' },
  JOB_DEAD_RETENTION_DAYS: { group: 'jobs', kind: 'integer', default: 30, min: 1, max: 3650, help: 'days a dead-lettered job is kept with its last error; finished jobs are kept a day' },
  // providers
  LLM_OPENAI_API_KEY: { group: 'providers', kind: 'text', help: 'key of the openai transport (OpenAI or any OpenAI-compatible server; may be empty for a local one)' },
  LLM_OPENAI_BASE_URL: {
    group: 'providers',
    kind: 'url',
    defaultText: 'https://api.openai.com/v1',
    help: 'endpoint of the openai transport (Ollama: http://localhost:11434/v1, no key needed)',
  },
  LLM_ANTHROPIC_API_KEY: { group: 'providers', kind: 'text', help: 'key of the anthropic transport (Messages API; no embeddings)' },
  LLM_ANTHROPIC_BASE_URL: { group: 'providers', kind: 'url', defaultText: 'https://api.anthropic.com', help: 'endpoint of the anthropic transport' },
  LLM_GEMINI_API_KEY: { group: 'providers', kind: 'text', help: 'key of the gemini transport' },
  LLM_GEMINI_BASE_URL: { group: 'providers', kind: 'url', defaultText: 'https://generativelanguage.googleapis.com', help: 'endpoint of the gemini transport' },
  LLM_MODEL: {
    group: 'providers',
    kind: 'text',
    defaultText: 'openai/gpt-5.4-mini',
    help: 'model of every chat module that names none: transport/model or a model name (transport openai)',
  },
  LLM_DEFAULT_MAX_TOKENS: { group: 'providers', kind: 'integer', default: 2500, min: 1, max: 1_000_000, reference: true, help: 'output limit of a module that sets none' },
  // calls
  LLM_TIMEOUT_MS: { group: 'calls', kind: 'integer', default: 120_000, min: 1, max: 3_600_000, help: "one attempt's limit; for a stream, the longest wait for each chunk (ms)" },
  LLM_MAX_CONCURRENT_CALLS: { group: 'calls', kind: 'integer', default: 8, min: 1, max: 1000, help: 'calls in flight at once per endpoint, all modules and the embedder together' },
  LLM_MAX_RETRIES: { group: 'calls', kind: 'integer', default: 3, min: 0, max: 20, help: 'further attempts after a 429, 408, 409, 5xx or a dropped connection' },
  LLM_RETRY_BASE_MS: { group: 'calls', kind: 'integer', default: 1000, min: 1, max: 600_000, help: 'first backoff, doubling with jitter; a Retry-After from the provider is used instead (ms)' },
  LLM_RETRY_MAX_MS: { group: 'calls', kind: 'integer', default: 30_000, min: 1, max: 3_600_000, help: 'longest wait inside a call; a longer Retry-After fails the call as retryable (ms)' },
  LLM_FALLBACK_REST_MS: {
    group: 'calls',
    kind: 'integer',
    default: 60_000,
    min: 0,
    max: 86_400_000,
    help: "after a module's model failed as if down, how long its calls go straight to its FALLBACK__ model (ms; 0: never)",
  },
  // deriver
  DERIVER_ENABLED: { group: 'deriver', kind: 'boolean', default: true, reference: true, help: 'queue representation work when messages are created' },
  DERIVER_DEDUPLICATE: { group: 'deriver', kind: 'boolean', default: true, reference: true, help: 'semantic deduplication of new conclusions' },
  DERIVER_MAX_INPUT_TOKENS: { group: 'deriver', kind: 'integer', default: 25_000, min: 1, max: 10_000_000, reference: true, help: 'most input tokens of one deriver call' },
  DERIVER_MAX_CUSTOM_INSTRUCTIONS_TOKENS: { group: 'deriver', kind: 'integer', default: 2000, min: 0, max: 1_000_000, reference: true, help: 'most tokens of custom_instructions' },
  DERIVER_REPRESENTATION_BATCH_WORK_UNIT_TARGET_TOKENS: {
    group: 'deriver',
    kind: 'integer',
    default: 512,
    min: 0,
    max: 10_000_000,
    reference: true,
    help: 'a unit is taken once its unprocessed messages reach this many tokens (0: no token gate)',
  },
  DERIVER_REPRESENTATION_BATCH_TARGET_INPUT_TOKENS: { group: 'deriver', kind: 'integer', default: 1024, min: 1, max: 10_000_000, reference: true, help: 'size of one batch (tokens)' },
  DERIVER_REPRESENTATION_BATCH_MAX_AGE_SECONDS: {
    group: 'deriver',
    kind: 'integer',
    default: 1800,
    min: 0,
    max: 31_536_000,
    reference: true,
    help: 'a unit is also taken once its oldest message is this old (seconds)',
  },
  DERIVER_FLUSH_ENABLED: { group: 'deriver', kind: 'boolean', default: false, reference: true, help: 'take every unit at once, whatever its size and age' },
  // summaries
  SUMMARY_ENABLED: { group: 'summaries', kind: 'boolean', default: true, reference: true, help: 'write session summaries' },
  SUMMARY_MESSAGES_PER_SHORT_SUMMARY: { group: 'summaries', kind: 'integer', default: 20, min: 10, max: 1_000_000, reference: true, help: 'a short summary every this many messages' },
  SUMMARY_MESSAGES_PER_LONG_SUMMARY: {
    group: 'summaries',
    kind: 'integer',
    default: 60,
    min: 20,
    max: 1_000_000,
    reference: true,
    help: 'a long summary every this many messages (greater than the short one)',
  },
  SUMMARY_MAX_TOKENS_SHORT: { group: 'summaries', kind: 'integer', default: 1000, min: 1, max: 1_000_000, reference: true, help: 'output limit of a short summary' },
  SUMMARY_MAX_TOKENS_LONG: { group: 'summaries', kind: 'integer', default: 4000, min: 1, max: 1_000_000, reference: true, help: 'output limit of a long summary' },
  // dreams and cards
  PEER_CARD_ENABLED: { group: 'dreams', kind: 'boolean', default: true, reference: true, help: 'default of peer_card.use and peer_card.create' },
  DREAM_ENABLED: { group: 'dreams', kind: 'boolean', default: true, reference: true, help: 'dreams (consolidation of conclusions)' },
  DREAM_DOCUMENT_THRESHOLD: { group: 'dreams', kind: 'integer', default: 50, min: 1, max: 10_000_000, reference: true, help: 'new explicit conclusions before a dream is due' },
  DREAM_IDLE_TIMEOUT_MINUTES: { group: 'dreams', kind: 'integer', default: 60, min: 0, max: 525_600, reference: true, help: 'quiet time before a due dream runs (minutes)' },
  DREAM_MIN_HOURS_BETWEEN_DREAMS: { group: 'dreams', kind: 'integer', default: 8, min: 0, max: 87_600, reference: true, help: 'least time between dreams (hours)' },
  DREAM_ENABLED_TYPES: {
    group: 'dreams',
    kind: 'list',
    default: ['omni'],
    values: ['omni', 'card_refresh'],
    reference: true,
    help: 'types run automatically (JSON list or comma list of omni, card_refresh)',
  },
  DREAM_MAX_TOOL_ITERATIONS: { group: 'dreams', kind: 'integer', default: 20, min: 1, max: 1000, reference: true, help: 'most tool turns of one dream specialist' },
  DREAM_HISTORY_TOKEN_LIMIT: {
    group: 'dreams',
    kind: 'integer',
    default: 16_384,
    min: 256,
    max: 10_000_000,
    reference: true,
    help: "a specialist's input budget; older tool turns are dropped past it (tokens)",
  },
  // chat
  DIALECTIC_MAX_OUTPUT_TOKENS: { group: 'chat', kind: 'integer', default: 8192, min: 1, max: 1_000_000, reference: true, help: "default of every level's MAX_OUTPUT_TOKENS (minimal keeps 250 unless this is lower)" },
  DIALECTIC_MAX_INPUT_TOKENS: {
    group: 'chat',
    kind: 'integer',
    default: 100_000,
    min: 1000,
    max: 10_000_000,
    reference: true,
    help: 'a turn whose input is over this drops the oldest tool turns (the prompt and the question stay)',
  },
  DIALECTIC_SESSION_HISTORY_MAX_TOKENS: {
    group: 'chat',
    kind: 'integer',
    default: 4096,
    min: 0,
    max: 10_000_000,
    reference: true,
    help: 'the newest messages of session_id shown in the prompt, within this many tokens (0: none)',
  },
  LLM_MAX_TOOL_OUTPUT_CHARS: { group: 'chat', kind: 'integer', default: 10_000, min: 100, max: 10_000_000, reference: true, help: 'most characters of one tool result (dreams too)' },
  LLM_MAX_MESSAGE_CONTENT_CHARS: { group: 'chat', kind: 'integer', default: 2000, min: 50, max: 10_000_000, reference: true, help: 'most characters of one message shown by a tool or in the history' },
  // embeddings
  EMBEDDING_MODEL: {
    group: 'embeddings',
    kind: 'text',
    defaultText: 'openai/text-embedding-3-small',
    help: 'the embedding model, transport/model or a name (EMBEDDING_MODEL_CONFIG__MODEL wins)',
  },
  EMBED_MESSAGES: { group: 'embeddings', kind: 'boolean', default: true, reference: true, help: 'embed messages in the background (conclusions are always embedded)' },
  EMBEDDING_VECTOR_DIMENSIONS: {
    group: 'embeddings',
    kind: 'integer',
    min: 1,
    max: 65_536,
    reference: true,
    defaultText: 'learnt from the first answer',
    help: 'the vector size; sent to text-embedding-3-* and gemini models, checked on every answer',
  },
  EMBEDDING_MAX_INPUT_TOKENS: { group: 'embeddings', kind: 'integer', default: 8192, min: 16, max: 1_000_000, reference: true, help: 'longer texts are embedded in overlapping chunks' },
  EMBEDDING_MAX_CONCURRENT_EMBEDDINGS: {
    group: 'embeddings',
    kind: 'integer',
    default: 10,
    min: 1,
    max: 1000,
    reference: true,
    help: "embedding calls in flight at once, within the endpoint's LLM_MAX_CONCURRENT_CALLS",
  },
  EMBEDDING_MAX_TOKENS_PER_REQUEST: {
    group: 'embeddings',
    kind: 'integer',
    default: 300_000,
    min: 16,
    max: 100_000_000,
    reference: true,
    help: 'most tokens sent in one embedding request (besides at most 64 texts)',
  },
  EMBEDDING_ENCODING_FORMAT: {
    group: 'embeddings',
    kind: 'choice',
    values: ['float', 'base64'],
    defaultText: "base64 from OpenAI's API, float from any other server",
    help: 'openai transport: how vectors come back (base64 is a quarter of the size; not every compatible server has it)',
  },
  // reference settings not read
  DERIVER_WORKERS: {
    group: 'not read',
    kind: 'not read',
    reference: true,
    help: 'each server process runs WORKER_CONCURRENCY background jobs at a time, reasoning work at most half of them',
  },
  DERIVER_WORKING_REPRESENTATION_MAX_OBSERVATIONS: { group: 'not read', kind: 'not read', reference: true, help: "the deriver's prompt holds the batch's messages only, not the stored conclusions" },
  DIALECTIC_HISTORY_TOKEN_LIMIT: {
    group: 'not read',
    kind: 'not read',
    reference: true,
    help: "a chat's input is bounded by DIALECTIC_MAX_INPUT_TOKENS and DIALECTIC_SESSION_HISTORY_MAX_TOKENS",
  },
  EMBEDDING_MODEL_CONFIG__ENCODING_FORMAT_MODE: { group: 'not read', kind: 'not read', reference: true, help: 'set EMBEDDING_ENCODING_FORMAT (float or base64)' },
  EMBEDDING_MODEL_CONFIG__TIMEOUT: { group: 'not read', kind: 'not read', reference: true, help: 'LLM_TIMEOUT_MS bounds every model call' },
  GET_CONTEXT_MAX_TOKENS: { group: 'not read', kind: 'not read', reference: true, help: 'the context routes take tokens up to 100,000, as their interface documents' },
  // command line
  ENGRAM_API_KEY: { group: 'command line', kind: 'text', help: 'key `engram mcp --url` and `engram eval` send to a running Engram when --api-key is not given' },
  EVAL_JUDGE_MODEL: { group: 'command line', kind: 'text', help: 'the judge model of `engram eval` when --judge-model is not given' },
  EVAL_JUDGE_BASE_URL: { group: 'command line', kind: 'text', help: "the judge's OpenAI-compatible API (`engram eval`) when --judge-base-url is not given; default https://api.openai.com/v1" },
  EVAL_JUDGE_API_KEY: { group: 'command line', kind: 'text', help: "the judge's key (`engram eval`) when --judge-api-key is not given" },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

/**
 * The keys of one model, read under each prefix of MODEL_PREFIXES (and, but for the embedding
 * model, under `<PREFIX>FALLBACK__` for the module's fallback model).
 */
export const MODEL_KEYS = {
  MODEL: { kind: 'text', defaultText: 'LLM_MODEL', help: 'model name, or transport/model' },
  TRANSPORT: { kind: 'choice', values: TRANSPORT_NAMES, defaultText: 'from MODEL, else openai', help: 'openai, anthropic or gemini; a MODEL prefix that disagrees is an error' },
  TEMPERATURE: { kind: 'number', min: 0, max: 2, defaultText: "the provider's", help: 'sampling temperature (reasoning models may refuse it: leave it unset)' },
  TOP_P: { kind: 'number', min: 0, max: 1, defaultText: "the provider's", help: 'nucleus sampling' },
  TOP_K: { kind: 'integer', min: 1, max: 1_000_000, defaultText: "the provider's", help: 'top-k sampling (anthropic and gemini only)' },
  FREQUENCY_PENALTY: { kind: 'number', min: -2, max: 2, defaultText: "the provider's", help: 'frequency penalty (openai and gemini)' },
  PRESENCE_PENALTY: { kind: 'number', min: -2, max: 2, defaultText: "the provider's", help: 'presence penalty (openai and gemini)' },
  SEED: { kind: 'integer', min: -(2 ** 53 - 1), max: 2 ** 53 - 1, defaultText: "the provider's", help: 'sampling seed' },
  STOP_SEQUENCES: { kind: 'list', help: 'a JSON list or a comma-separated list' },
  MAX_OUTPUT_TOKENS: { kind: 'integer', min: 1, max: 1_000_000, defaultText: "LLM_DEFAULT_MAX_TOKENS; dialectic: the level's", help: 'output limit' },
  STRUCTURED_OUTPUT_MODE: {
    kind: 'choice',
    values: ['json_schema', 'json_object', 'none'],
    default: 'json_schema',
    help: 'how JSON is asked for; json_object for servers without structured outputs',
  },
  THINKING_EFFORT: { kind: 'choice', values: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'], help: 'openai reasoning_effort, gemini thinking level' },
  REASONING_EFFORT: { kind: 'choice', values: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'], help: 'another name of THINKING_EFFORT' },
  THINKING_BUDGET_TOKENS: { kind: 'integer', min: 0, max: 1_000_000, help: 'anthropic extended thinking (at least 1024; 0 is off), gemini thinking budget' },
  OVERRIDES__API_KEY: { kind: 'text', defaultText: "the transport's", help: "this model's own key" },
  OVERRIDES__API_KEY_ENV: { kind: 'text', help: 'the name of the variable holding its key' },
  OVERRIDES__BASE_URL: { kind: 'url', defaultText: "the transport's", help: "this model's own endpoint" },
  OVERRIDES__PROVIDER_PARAMS: { kind: 'json', help: 'a JSON object of fields added to every request body of this model' },
} as const satisfies Record<string, KeySpec>;

export type ModelKey = keyof typeof MODEL_KEYS;

/** The keys the embedding model reads under EMBEDDING_MODEL_CONFIG__. */
export const EMBEDDING_MODEL_KEYS = ['MODEL', 'TRANSPORT', 'OVERRIDES__API_KEY', 'OVERRIDES__BASE_URL'] as const satisfies readonly ModelKey[];

export const DIALECTIC_LEVEL_NAMES = ['minimal', 'low', 'medium', 'high', 'max'] as const;

/** The keys of a dialectic level besides its model, `DIALECTIC_LEVELS__<level>__<KEY>`. */
export const LEVEL_KEYS = {
  MAX_TOOL_ITERATIONS: { kind: 'integer', min: 1, max: 100, help: 'most tool turns of a chat at this level' },
  MAX_OUTPUT_TOKENS: { kind: 'integer', min: 1, max: 1_000_000, help: 'output limit of a chat at this level' },
  TOOL_CHOICE: { kind: 'choice', values: ['auto', 'required', 'none'], help: "how the model is told to use tools (unset: the model's default)" },
} as const satisfies Record<string, KeySpec>;

/** The reference's table of dialectic levels: each level's defaults of LEVEL_KEYS. */
export const LEVEL_DEFAULTS = {
  minimal: { MAX_TOOL_ITERATIONS: 1, MAX_OUTPUT_TOKENS: 250, TOOL_CHOICE: 'auto' },
  low: { MAX_TOOL_ITERATIONS: 5, MAX_OUTPUT_TOKENS: 8192, TOOL_CHOICE: 'auto' },
  medium: { MAX_TOOL_ITERATIONS: 2, MAX_OUTPUT_TOKENS: 8192 },
  high: { MAX_TOOL_ITERATIONS: 4, MAX_OUTPUT_TOKENS: 8192 },
  max: { MAX_TOOL_ITERATIONS: 10, MAX_OUTPUT_TOKENS: 8192 },
} as const satisfies Record<(typeof DIALECTIC_LEVEL_NAMES)[number], { MAX_TOOL_ITERATIONS: number; MAX_OUTPUT_TOKENS: number; TOOL_CHOICE?: 'auto' }>;

/** The chat modules' prefixes (each also has `<PREFIX>FALLBACK__`), then the embedding model's. */
export const CHAT_MODEL_PREFIXES = {
  deriver: 'DERIVER_MODEL_CONFIG__',
  summary: 'SUMMARY_MODEL_CONFIG__',
  dream_deduction: 'DREAM_DEDUCTION_MODEL_CONFIG__',
  dream_induction: 'DREAM_INDUCTION_MODEL_CONFIG__',
} as const;
export const levelPrefix = (level: (typeof DIALECTIC_LEVEL_NAMES)[number]) => `DIALECTIC_LEVELS__${level}__`;
export const EMBEDDING_MODEL_PREFIX = 'EMBEDDING_MODEL_CONFIG__';

/**
 * Every name the table declares, the model keys expanded under each prefix: what the code may
 * read (the test of the table compares it with what loadConfig reads).
 */
export function declaredNames(): string[] {
  const names: string[] = Object.keys(SETTINGS);
  const modelPrefixes = [...Object.values(CHAT_MODEL_PREFIXES), ...DIALECTIC_LEVEL_NAMES.map((level) => `${levelPrefix(level)}MODEL_CONFIG__`)];
  for (const prefix of modelPrefixes) {
    for (const key of Object.keys(MODEL_KEYS)) names.push(`${prefix}${key}`, `${prefix}FALLBACK__${key}`);
  }
  for (const level of DIALECTIC_LEVEL_NAMES) for (const key of Object.keys(LEVEL_KEYS)) names.push(`${levelPrefix(level)}${key}`);
  for (const key of EMBEDDING_MODEL_KEYS) names.push(`${EMBEDDING_MODEL_PREFIX}${key}`);
  for (const transport of TRANSPORT_NAMES) names.push(`LLM_${transport.toUpperCase()}_API_KEY`, `LLM_${transport.toUpperCase()}_BASE_URL`);
  return [...new Set(names)];
}
