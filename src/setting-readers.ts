/** Reads one setting by name: undefined when it is not set or empty. */
export type Read = (key: string) => string | undefined;

/**
 * Typed readers over `read` for the configuration (config.ts, config-reasoning.ts): each returns
 * the value, or its fallback (or undefined) after adding a line naming the setting, what it must
 * be and what it was to `problems`, so one start-up reports every bad setting.
 */
export function settingReaders(read: Read, problems: string[]) {
  const number = (key: string, min: number, max: number, integer: boolean): number | undefined => {
    const raw = read(key);
    if (raw === undefined) return undefined;
    const value = Number(raw.trim());
    if (raw.trim() === '' || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
      problems.push(`${key} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got "${raw}"`);
      return undefined;
    }
    return value;
  };
  const integer = (key: string, fallback: number, min: number, max: number) => number(key, min, max, true) ?? fallback;
  const boolean = (key: string, fallback: boolean): boolean => {
    const raw = read(key);
    if (raw === undefined) return fallback;
    const lowered = raw.toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(lowered)) return true;
    if (['false', '0', 'no', 'off'].includes(lowered)) return false;
    problems.push(`${key} must be true or false, got "${raw}"`);
    return fallback;
  };
  const oneOf = <T extends string>(key: string, allowed: readonly T[]): T | undefined => {
    const raw = read(key);
    if (raw === undefined) return undefined;
    const lowered = raw.toLowerCase() as T;
    if (allowed.includes(lowered)) return lowered;
    problems.push(`${key} must be one of ${allowed.join(', ')}, got "${raw}"`);
    return undefined;
  };
  const url = (key: string): string | undefined => {
    const raw = read(key);
    if (raw === undefined) return undefined;
    if (!/^https?:\/\/[^\s/]+/i.test(raw)) {
      problems.push(`${key} must be an http:// or https:// URL, got "${raw}"`);
      return undefined;
    }
    return raw.replace(/\/+$/, '');
  };
  const list = (key: string): string[] | undefined => {
    const raw = read(key);
    if (raw === undefined) return undefined;
    if (raw.trim().startsWith('[')) {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (Array.isArray(parsed) && parsed.every((item) => typeof item === 'string')) return parsed;
      } catch {
        // reported below
      }
      problems.push(`${key} must be a JSON list of strings or a comma-separated list, got "${raw}"`);
      return undefined;
    }
    return raw.split(',').map((item) => item.trim()).filter((item) => item !== '');
  };

  return { number, integer, boolean, oneOf, url, list };
}
