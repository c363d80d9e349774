import { LEVEL_KEYS, MODEL_KEYS, SETTINGS, type KeySpec, type ModelKey, type SettingName } from './settings.js';

/** Reads one setting by name: undefined when it is not set or empty. */
export type Read = (key: string) => string | undefined;

type Parsed<S> = S extends { kind: 'integer' | 'number' }
  ? number
  : S extends { kind: 'boolean' }
    ? boolean
    : S extends { kind: 'choice'; values: readonly (infer V)[] }
      ? V
      : S extends { kind: 'list' }
        ? string[]
        : S extends { kind: 'json' }
          ? Record<string, unknown>
          : S extends { kind: 'text' | 'url' }
            ? string
            : never;

/** The type of a setting's value as its declaration gives it: undefined only where it has no default. */
export type ValueOf<S> = S extends { default: unknown } ? Parsed<S> : Parsed<S> | undefined;
export type SettingValue<N extends SettingName> = ValueOf<(typeof SETTINGS)[N]>;
export type ModelKeyValue<K extends ModelKey> = ValueOf<(typeof MODEL_KEYS)[K]>;

/**
 * Reads settings by their declarations (config/settings.ts): each returns its value, or its
 * default (or undefined) after adding a line naming the setting, what it must be and what it was
 * to `problems`, so one start-up reports every bad setting.
 */
export function settingReader(read: Read, problems: string[]) {
  const parse = (name: string, spec: KeySpec): unknown => {
    const raw = read(name);
    const fallback = 'default' in spec ? (Array.isArray(spec.default) ? [...(spec.default as string[])] : spec.default) : undefined;
    if (raw === undefined) return fallback;
    const bad = (what: string) => {
      problems.push(`${name} must be ${what}, got "${raw}"`);
      return fallback;
    };
    switch (spec.kind) {
      case 'integer':
      case 'number': {
        const value = Number(raw.trim());
        const integer = spec.kind === 'integer';
        if (raw.trim() === '' || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < spec.min || value > spec.max) {
          return bad(`${integer ? 'an integer' : 'a number'} from ${spec.min} to ${spec.max}`);
        }
        return value;
      }
      case 'boolean': {
        const lowered = raw.toLowerCase();
        if (['true', '1', 'yes', 'on'].includes(lowered)) return true;
        if (['false', '0', 'no', 'off'].includes(lowered)) return false;
        return bad('true or false');
      }
      case 'choice': {
        const chosen = spec.values.find((value) => value.toLowerCase() === raw.toLowerCase());
        return chosen ?? bad(`one of ${spec.values.join(', ')}`);
      }
      case 'url':
        return /^https?:\/\/[^\s/]+/i.test(raw) ? raw.replace(/\/+$/, '') : bad('an http:// or https:// URL');
      case 'list': {
        const items = parseList(raw);
        if (items === undefined) return bad('a JSON list of strings or a comma-separated list');
        const unknown = spec.values === undefined ? [] : items.filter((item) => !spec.values!.includes(item));
        if (unknown.length > 0) {
          problems.push(`${name} may list ${spec.values!.join(' and ')}, got ${unknown.map((item) => `"${item}"`).join(', ')}`);
          return items.filter((item) => spec.values!.includes(item));
        }
        return items;
      }
      case 'json': {
        let value: unknown;
        try {
          value = JSON.parse(raw);
        } catch {
          value = undefined;
        }
        return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : bad('a JSON object');
      }
      case 'text':
        return raw;
      case 'not read':
        throw new Error(`${name} is declared as not read`);
    }
  };

  return {
    /** A setting of the table. */
    get: <N extends SettingName>(name: N): SettingValue<N> => parse(name, SETTINGS[name]) as SettingValue<N>,
    /** One key of a model under its prefix (`DERIVER_MODEL_CONFIG__` + `TEMPERATURE`). */
    model: <K extends ModelKey>(prefix: string, key: K): ModelKeyValue<K> => parse(`${prefix}${key}`, MODEL_KEYS[key]) as ModelKeyValue<K>,
    /** One key of a dialectic level (`DIALECTIC_LEVELS__low__` + `TOOL_CHOICE`). */
    level: <K extends keyof typeof LEVEL_KEYS>(prefix: string, key: K): ValueOf<(typeof LEVEL_KEYS)[K]> => parse(`${prefix}${key}`, LEVEL_KEYS[key]) as ValueOf<(typeof LEVEL_KEYS)[K]>,
  };
}

export type SettingReader = ReturnType<typeof settingReader>;

/** A JSON list of strings, or a comma-separated list; undefined when it is neither. */
function parseList(raw: string): string[] | undefined {
  if (!raw.trim().startsWith('[')) {
    return raw
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
  }
  try {
    const parsed: unknown = JSON.parse(raw);
    if (Array.isArray(parsed) && parsed.every((item) => typeof item === 'string')) return parsed;
  } catch {
    // not a list
  }
  return undefined;
}
