import type { JsonObject } from '../../storage/store.js';
import type { ReasoningSettings } from '../reasoning-settings.js';

/**
 * The configuration that applies to one message: each field from the most specific level that
 * sets it (message > session > workspace), else the settings (reasoning.md R1). v3 stores the
 * reasoning section as `reasoning`, v2 as `deriver`; the legacy `skip_deriver: true` turns it off.
 */
export interface EffectiveConfiguration {
  reasoningEnabled: boolean;
  customInstructions: string | undefined;
  summaryEnabled: boolean;
  messagesPerShortSummary: number;
  messagesPerLongSummary: number;
  peerCardUse: boolean;
  peerCardCreate: boolean;
  dreamEnabled: boolean;
}

export interface ConfigurationLevels {
  workspace: JsonObject;
  session: JsonObject;
  /** A message's configuration may only carry `reasoning`. */
  message?: JsonObject;
}

function section(configuration: JsonObject | undefined, name: string): JsonObject | undefined {
  if (configuration === undefined || !Object.hasOwn(configuration, name)) return undefined;
  const value = configuration[name];
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

function field(value: JsonObject | undefined, name: string): unknown {
  return value !== undefined && Object.hasOwn(value, name) ? value[name] : undefined;
}

/** `reasoning.enabled` of one level: `reasoning`, then legacy `deriver`, then `skip_deriver`. */
function reasoningEnabledAt(configuration: JsonObject | undefined): boolean | undefined {
  for (const name of ['reasoning', 'deriver']) {
    const enabled = field(section(configuration, name), 'enabled');
    if (typeof enabled === 'boolean') return enabled;
  }
  const skip = configuration !== undefined && Object.hasOwn(configuration, 'skip_deriver') ? configuration.skip_deriver : undefined;
  return typeof skip === 'boolean' ? !skip : undefined;
}

function customInstructionsAt(configuration: JsonObject | undefined): string | undefined {
  for (const name of ['reasoning', 'deriver']) {
    const text = field(section(configuration, name), 'custom_instructions');
    if (typeof text === 'string') return text;
  }
  return undefined;
}

/** The first level (most specific first) whose `read` gives a value. */
function firstSet<T>(levels: (JsonObject | undefined)[], read: (configuration: JsonObject | undefined) => T | undefined): T | undefined {
  for (const level of levels) {
    const value = read(level);
    if (value !== undefined) return value;
  }
  return undefined;
}

const bool = (name: string, key: string) => (configuration: JsonObject | undefined) => {
  const value = field(section(configuration, name), key);
  return typeof value === 'boolean' ? value : undefined;
};

const positiveInt = (name: string, key: string) => (configuration: JsonObject | undefined) => {
  const value = field(section(configuration, name), key);
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
};

export function effectiveConfiguration(settings: ReasoningSettings, levels: ConfigurationLevels): EffectiveConfiguration {
  const all = [levels.message, levels.session, levels.workspace];
  const sessionDown = [levels.session, levels.workspace];
  return {
    reasoningEnabled: settings.deriver.enabled && (firstSet(all, reasoningEnabledAt) ?? true),
    customInstructions: firstSet(all, customInstructionsAt),
    summaryEnabled: firstSet(sessionDown, bool('summary', 'enabled')) ?? settings.summary.enabled,
    messagesPerShortSummary: firstSet(sessionDown, positiveInt('summary', 'messages_per_short_summary')) ?? settings.summary.messagesPerShortSummary,
    messagesPerLongSummary: firstSet(sessionDown, positiveInt('summary', 'messages_per_long_summary')) ?? settings.summary.messagesPerLongSummary,
    peerCardUse: firstSet(sessionDown, bool('peer_card', 'use')) ?? settings.peerCardEnabled,
    peerCardCreate: firstSet(sessionDown, bool('peer_card', 'create')) ?? settings.peerCardEnabled,
    dreamEnabled: firstSet(sessionDown, bool('dream', 'enabled')) ?? settings.dream.enabled,
  };
}
