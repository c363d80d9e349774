import {
  CHAT_MODEL_PREFIXES,
  DIALECTIC_LEVEL_NAMES,
  EMBEDDING_MODEL_KEYS,
  EMBEDDING_MODEL_PREFIX,
  GROUP_TITLES,
  LEVEL_DEFAULTS,
  LEVEL_KEYS,
  levelPrefix,
  MODEL_KEYS,
  SETTINGS,
  type KeySpec,
  type SettingGroup,
  type SettingSpec,
} from './settings.js';

/**
 * `.env.example` and docs/configuration.md, written from the settings table (config/settings.ts)
 * by `npm run docs:settings`; test/config/settings-table.test.ts fails when a file differs.
 */

const GENERATED = 'Generated from src/config/settings.ts by `npm run docs:settings`: edit the table, not this file.';

function byGroup(): Map<SettingGroup, [string, SettingSpec][]> {
  const groups = new Map<SettingGroup, [string, SettingSpec][]>();
  for (const [name, spec] of Object.entries(SETTINGS) as [string, SettingSpec][]) {
    const list = groups.get(spec.group) ?? [];
    list.push([name, spec]);
    groups.set(spec.group, list);
  }
  return groups;
}

/** The value a `.env` line carries for the default: empty where the default is computed or absent. */
function envValue(spec: KeySpec): string {
  if (!('default' in spec) || spec.default === undefined) return '';
  return Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default);
}

function defaultText(spec: KeySpec): string {
  if (spec.defaultText !== undefined) return spec.defaultText;
  const value = envValue(spec);
  return value === '' ? '(none)' : `\`${value}\``;
}

function allowed(spec: KeySpec): string {
  switch (spec.kind) {
    case 'integer':
      return `integer, ${spec.min} to ${spec.max}`;
    case 'number':
      return `number, ${spec.min} to ${spec.max}`;
    case 'boolean':
      return '`true` or `false`';
    case 'choice':
      return spec.values.map((value) => `\`${value}\``).join(', ');
    case 'url':
      return 'http(s) URL';
    case 'list':
      return spec.values === undefined ? 'list' : `list of ${spec.values.map((value) => `\`${value}\``).join(', ')}`;
    case 'json':
      return 'JSON object';
    default:
      return 'text';
  }
}

export function envExample(): string {
  const lines = [
    '# Engram settings. Copy to .env to change them; real environment variables win over this file.',
    '# An empty value is an unset one: the default. Every setting is described in docs/configuration.md.',
    `# ${GENERATED}`,
  ];
  for (const [group, settings] of byGroup()) {
    if (group === 'not read') continue;
    lines.push('', `# --- ${GROUP_TITLES[group]} ---`);
    for (const [name, spec] of settings) {
      const note = spec.defaultText !== undefined ? ` (default: ${spec.defaultText})` : '';
      lines.push(`# ${spec.help}${note}`, `${name}=${envValue(spec)}`);
    }
    if (group === 'providers') {
      lines.push(
        '# Each module may name a model of its own, with the keys of docs/configuration.md ("Model of each module"), e.g.',
        '# DERIVER_MODEL_CONFIG__MODEL=openai/gpt-4o-mini',
        '# DERIVER_MODEL_CONFIG__STRUCTURED_OUTPUT_MODE=json_object',
        '# DIALECTIC_LEVELS__low__MODEL_CONFIG__MODEL=anthropic/claude-haiku-4-5',
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

const cell = (text: string) => text.replaceAll('|', '\\|');

export function configurationReference(): string {
  const out: string[] = [
    '# Configuration',
    '',
    `<!-- ${GENERATED} -->`,
    '',
    'Settings come from the environment, or from a `.env` file in the working directory for keys the',
    'environment does not set (`.env.example` lists every one with its default). An empty value is an',
    'unset one. A bad value stops start-up with a message naming every bad setting at once. "Reference"',
    'marks the settings the reference server reads under the same name, so its `.env` carries over.',
    '',
  ];
  for (const [group, settings] of byGroup()) {
    out.push(`## ${GROUP_TITLES[group]}`, '');
    if (group === 'not read') {
      out.push('Named in a warning at start-up when set, each with what does its job here.', '', '| Setting | Instead |', '|---|---|');
      for (const [name, spec] of settings) out.push(`| \`${name}\` | ${cell(spec.help)} |`);
      out.push('');
      continue;
    }
    out.push('| Setting | Default | Values | Meaning |', '|---|---|---|---|');
    for (const [name, spec] of settings) {
      out.push(`| \`${name}\`${spec.reference === true ? ' (reference)' : ''} | ${cell(defaultText(spec))} | ${cell(allowed(spec))} | ${cell(spec.help)} |`);
    }
    out.push('');
  }

  out.push(
    '## Model of each module',
    '',
    'The same keys under each module\'s prefix: ' +
      [...Object.values(CHAT_MODEL_PREFIXES), `${levelPrefix('low').replace('low', '<level>')}MODEL_CONFIG__`].map((prefix) => `\`${prefix}\``).join(', ') +
      ` (level ${DIALECTIC_LEVEL_NAMES.map((level) => `\`${level}\``).join(', ')}, in lower or upper case), and under \`<PREFIX>FALLBACK__\` for the module's fallback model (docs/reasoning.md, "Fallback model"). ` +
      `The embedding model reads ${EMBEDDING_MODEL_KEYS.map((key) => `\`${EMBEDDING_MODEL_PREFIX}${key}\``).join(', ')}.`,
    '',
    '| Key | Default | Values | Meaning |',
    '|---|---|---|---|',
  );
  for (const [key, spec] of Object.entries(MODEL_KEYS) as [string, KeySpec][]) {
    out.push(`| \`${key}\` | ${cell(defaultText(spec))} | ${cell(allowed(spec))} | ${cell(spec.help)} |`);
  }
  out.push('', '## Dialectic levels', '', `\`DIALECTIC_LEVELS__<level>__<KEY>\`, with each level's default:`, '');
  out.push(`| Key | Values | ${DIALECTIC_LEVEL_NAMES.join(' | ')} | Meaning |`, `|---|---|${DIALECTIC_LEVEL_NAMES.map(() => '---|').join('')}---|`);
  for (const [key, spec] of Object.entries(LEVEL_KEYS) as [keyof typeof LEVEL_KEYS, KeySpec][]) {
    const defaults = DIALECTIC_LEVEL_NAMES.map((level) => {
      const value = (LEVEL_DEFAULTS[level] as Partial<Record<string, string | number>>)[key];
      return value === undefined ? "model's" : key === 'MAX_OUTPUT_TOKENS' && level !== 'minimal' ? `\`DIALECTIC_MAX_OUTPUT_TOKENS\`` : `\`${value}\``;
    });
    out.push(`| \`${key}\` | ${cell(allowed(spec))} | ${defaults.join(' | ')} | ${cell(spec.help)} |`);
  }
  out.push('');
  return out.join('\n');
}
