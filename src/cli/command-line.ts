/**
 * What `engram` accepts: each command with its options and usage. Parsing happens before any
 * setting is read or store opened, so `--help`, `help <command>` and a mistyped command or option
 * print and exit without side effects.
 */

export interface CommandSpec {
  /** Options taking a value (`--name value` or `--name=value`), with the placeholder shown. */
  options: Record<string, string>;
  /** Positional arguments, in order; all required. */
  positionals: string[];
  /** Positional arguments after `positionals` that may be left out. */
  optionalPositionals?: string[];
  /** Options that take no value (`--name`; read as the value "true"). */
  flags?: string[];
  /** Options of `options` that may be given more than once (every value is in `lists`). */
  repeatable?: string[];
  summary: string;
  usage: string;
}

export const COMMANDS: Record<string, CommandSpec> = {
  serve: {
    options: { '--processes': '<n>' },
    positionals: [],
    summary: 'start the HTTP server and the background workers (the default command)',
    usage: `usage: engram serve [--processes <n>]

Starts the HTTP server on HOST:PORT (127.0.0.1:8000 by default) with the background workers
(RUN_WORKERS), on DATABASE_URL (./data/engram.db by default), applying migrations first.

  --processes <n>  server processes sharing the port, 1 to 1024 (default: WEB_CONCURRENCY,
                   else one per core); see README, "More cores"

Stops gracefully on SIGTERM or SIGINT.`,
  },
  worker: {
    options: {},
    positionals: [],
    summary: 'run only the background workers (webhook delivery, reasoning), no HTTP API',
    usage: `usage: engram worker

Runs the background workers alone on DATABASE_URL, beside API processes started with
RUN_WORKERS=false. With METRICS_ENABLED=true it serves GET /metrics and /health on HOST:PORT.
Stops on SIGTERM or SIGINT, finishing or releasing the jobs it claimed.`,
  },
  migrate: {
    options: {},
    positionals: [],
    summary: 'apply database migrations and exit',
    usage: `usage: engram migrate

Applies the migrations DATABASE_URL lacks and lists each one (\`npm run db:migrate\` runs this).`,
  },
  derive: {
    options: { '--workspace': '<id>', '--session': '<id>' },
    positionals: [],
    summary: 'queue reasoning for stored messages that have none',
    usage: `usage: engram derive [--workspace <id>] [--session <id>]

Queues representation work for messages stored while no model was configured; a running server
or worker then forms their conclusions. Needs a deriver model (docs/reasoning.md); exits 2
without one.

  --workspace <id>  only this workspace's messages
  --session <id>    only this session's messages (needs --workspace)`,
  },
  reembed: {
    options: {},
    positionals: [],
    summary: 'drop the stored vectors and queue every conclusion and message to be embedded again',
    usage: `usage: engram reembed

After changing the embedding model or EMBEDDING_VECTOR_DIMENSIONS: drops the stored vectors and
their fixed size and queues the embedding of every conclusion and message again (the workers of
\`engram serve\` or \`engram worker\` make the new vectors; search uses full text meanwhile).`,
  },
  backup: {
    options: {},
    positionals: ['<file>'],
    summary: 'SQLite: write a consistent copy of the database to a new file while servers serve it',
    usage: `usage: engram backup <file>

SQLite: writes a consistent, checked copy of DATABASE_URL to <file>, a new file (never
overwritten; its folder is made if missing), while servers keep serving the store. On
PostgreSQL it refuses: use pg_dump. See README, "Backups".`,
  },
  export: {
    options: { '--workspace': '<id>', '--output': '<file>' },
    flags: ['--with-vectors'],
    repeatable: ['--workspace'],
    positionals: [],
    summary: 'write workspaces (or all) as one NDJSON stream, to a file or stdout',
    usage: `usage: engram export [--workspace <id> ...] [--output <file>] [--with-vectors]

Writes the store's memory as NDJSON (docs/portability.md): a header line, then every workspace,
peer, session, membership, message, conclusion, peer card, summary, webhook endpoint and the v1
generation's rows, in dependency order. Reads page by page, holding one page of rows at a time.
Servers may keep serving meanwhile.

  --workspace <id>  only this workspace (repeat for several; default: every workspace)
  --output <file>   write to this new file (default: stdout)
  --with-vectors    include the stored vectors (default: left out, made again on import)`,
  },
  import: {
    options: { '--from-honcho': '<url>', '--api-key': '<key>', '--workspace': '<id>', '--batch': '<lines>' },
    repeatable: ['--workspace'],
    positionals: [],
    optionalPositionals: ['<file>'],
    summary: 'load an export (a file, or - for stdin), or copy workspaces from a running server',
    usage: `usage: engram import <file>|-  [--batch <lines>]
       engram import --from-honcho <url> [--api-key <key>] [--workspace <id> ...]

Loads an export into DATABASE_URL (empty or in use): each line is checked, every <lines> lines
(1000) are written in one transaction, and rows already stored are left as they are, so running
it again (after a crash too) adds only what is missing. With --from-honcho it copies workspaces
from a running server through its v3 API instead (docs/portability.md lists what that API does
not expose). Progress goes to stderr.

  --batch <lines>       lines per transaction (default 1000)
  --from-honcho <url>   the server's base URL (e.g. https://api.honcho.dev)
  --api-key <key>       its key (default: none, for a server without auth)
  --workspace <id>      with --from-honcho: only this workspace (repeat for several)`,
  },
  mcp: {
    options: { '--workspace': '<id>', '--url': '<engram url>', '--api-key': '<key>' },
    positionals: [],
    summary: 'an MCP server on stdin/stdout, over this store or forwarding to a running Engram',
    usage: `usage: engram mcp [--workspace <id>] [--url <engram url> [--api-key <key>]]

An MCP server on stdin/stdout for hosts that start a command (docs/mcp.md): over the store
DATABASE_URL names (migrations and workers as at start-up), or, with --url, forwarding to a
running Engram's /mcp. Only protocol messages go to stdout; logs go to stderr.

  --workspace <id>    the workspace tools use when a call names none
  --url <engram url>  forward to this running Engram (e.g. http://127.0.0.1:8000)
  --api-key <key>     its key (default: ENGRAM_API_KEY)`,
  },
  eval: {
    options: {
      '--url': '<engram url>',
      '--api-key': '<key>',
      '--workspace': '<id>',
      '--state': '<file>',
      '--limit': '<n>',
      '--reasoning-level': '<level>',
      '--judge-model': '<model>',
      '--judge-base-url': '<url>',
      '--judge-api-key': '<key>',
      '--price-input': '<usd>',
      '--price-output': '<usd>',
      '--judge-price-input': '<usd>',
      '--judge-price-output': '<usd>',
      '--format': '<table|json>',
      '--json': '<file>',
    },
    positionals: ['<dataset file>'],
    summary: 'measure memory quality: a LoCoMo or LongMemEval file run against a running Engram',
    usage: `usage: engram eval <dataset file> --judge-model <model> [options]

Runs a dataset file in the LoCoMo or LongMemEval format (docs/evaluation.md) against a running
Engram with its own models: stores the sessions with their dates in one workspace, waits for the
queue, asks each question through peer chat, has a judge model grade each answer, and prints the
accuracy per category, time, tokens and cost per question. A state file records every step, so
running the same command again after a stop continues without storing or asking twice. Progress
goes to stderr.

  --url <engram url>        the server (default: http://127.0.0.1:PORT of the settings)
  --api-key <key>           its key (default: ENGRAM_API_KEY)
  --workspace <id>          the workspace to store into (default: eval-<file name>)
  --state <file>            the state file (default: <workspace>.eval-state.json)
  --limit <n>               only the first n questions (and the sessions they need)
  --reasoning-level <level> chat's level: minimal, low, medium, high or max (default: the server's)
  --judge-model <model>     the judge (default: EVAL_JUDGE_MODEL; required)
  --judge-base-url <url>    its OpenAI-compatible API (default: EVAL_JUDGE_BASE_URL, else
                            https://api.openai.com/v1)
  --judge-api-key <key>     its key (default: EVAL_JUDGE_API_KEY)
  --price-input <usd>       US dollars per million input tokens of Engram's models
  --price-output <usd>      US dollars per million output tokens of Engram's models
  --judge-price-input <usd>, --judge-price-output <usd>   the same for the judge
  --format <table|json>     what stdout shows (default: table)
  --json <file>             also write the report as JSON to this file`,
  },
  token: {
    options: { '--workspace': '<id>', '--peer': '<id>', '--session': '<id>', '--expires': '<ISO date>' },
    positionals: [],
    summary: 'print a JWT signed with AUTH_JWT_SECRET (admin, or scoped with --workspace)',
    usage: `usage: engram token [--workspace <id> [--peer <id>] [--session <id>]] [--expires <ISO date>]

Prints a JWT signed with AUTH_JWT_SECRET (\`npm run token -- ...\` runs this): an admin token,
or with --workspace a key scoped to that workspace, and with --peer or --session to that peer
or session in it.

  --workspace <id>      the workspace the key is for
  --peer <id>           the peer the key is for (needs --workspace)
  --session <id>        the session the key is for (needs --workspace)
  --expires <ISO date>  when the key stops working (e.g. 2027-01-01T00:00:00Z)`,
  },
  help: {
    options: {},
    positionals: [],
    summary: 'this list, or `engram help <command>` for one command',
    usage: '',
  },
};

export const USAGE = `usage: engram <command> [options]    (engram <command> --help, or engram help <command>)

commands:
${Object.entries(COMMANDS)
  .map(([name, spec]) => `  ${name.padEnd(9)}${spec.summary}`)
  .join('\n')}

Settings come from the environment or a .env file (README, "Settings").`;

export type CommandLine =
  | { kind: 'run'; command: string; options: Record<string, string>; positionals: string[]; lists?: Record<string, string[]> }
  | { kind: 'help'; text: string }
  | { kind: 'error'; message: string };

/** The usage of one command, or of all. */
export function usageOf(command: string | undefined): string {
  return command === undefined || command === 'help' ? USAGE : COMMANDS[command].usage;
}

const validOptions = (spec: CommandSpec) =>
  Object.keys(spec.options).length === 0 && (spec.flags ?? []).length === 0
    ? 'it takes no options'
    : `valid: ${[...Object.entries(spec.options).map(([name, value]) => `${name} ${value}`), ...(spec.flags ?? [])].join(', ')}`;

/** Reads `engram`'s arguments: which command to run with which options, or what to print instead. */
export function parseCommandLine(args: string[]): CommandLine {
  const [first = 'serve', ...rest] = args;
  if (first === '--help' || first === '-h') return { kind: 'help', text: USAGE };
  if (!Object.hasOwn(COMMANDS, first)) {
    const what = first.startsWith('-') ? 'option' : 'command';
    return { kind: 'error', message: `unknown ${what} "${first}"; the commands are ${Object.keys(COMMANDS).join(', ')}\n\n${USAGE}` };
  }
  const spec = COMMANDS[first];
  // --help anywhere after the command wins: it never runs the command
  if (rest.includes('--help') || rest.includes('-h')) return { kind: 'help', text: usageOf(first) };
  if (first === 'help') {
    const [topic, ...extra] = rest;
    if (extra.length > 0) return { kind: 'error', message: `usage: engram help [command]` };
    if (topic !== undefined && !Object.hasOwn(COMMANDS, topic)) {
      return { kind: 'error', message: `no command "${topic}"; the commands are ${Object.keys(COMMANDS).join(', ')}` };
    }
    return { kind: 'help', text: usageOf(topic) };
  }
  const options: Record<string, string> = {};
  const lists: Record<string, string[]> = {};
  const positionals: string[] = [];
  const allowed = spec.positionals.length + (spec.optionalPositionals?.length ?? 0);
  const wrong = (message: string): CommandLine => ({ kind: 'error', message: `${first}: ${message}\n\n${spec.usage}` });
  for (let index = 0; index < rest.length; index++) {
    const arg = rest[index];
    if (arg.startsWith('-') && arg !== '-') {
      const [name, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
      if (spec.flags?.includes(name) === true) {
        if (inline !== undefined) return wrong(`${name} takes no value`);
        options[name] = 'true';
        continue;
      }
      if (!Object.hasOwn(spec.options, name)) return wrong(`unknown option "${name}"; ${validOptions(spec)}`);
      const value = inline ?? rest[++index];
      if (value === undefined || (inline === undefined && value.startsWith('--'))) return wrong(`${name} needs a value: ${name} ${spec.options[name]}`);
      if (spec.repeatable?.includes(name) === true) (lists[name] ??= []).push(value);
      options[name] = value;
    } else {
      if (positionals.length >= allowed) {
        return wrong(`unexpected argument "${arg}"${allowed === 0 ? '; it takes none' : ''}`);
      }
      positionals.push(arg);
    }
  }
  if (positionals.length < spec.positionals.length) return wrong(`missing ${spec.positionals.slice(positionals.length).join(' ')}`);
  return Object.keys(lists).length === 0 ? { kind: 'run', command: first, options, positionals } : { kind: 'run', command: first, options, positionals, lists };
}
