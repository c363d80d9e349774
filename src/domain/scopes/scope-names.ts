/*
 * A scope named `x` is the peer `scope.x` of kind 'scope' (shared/reference/scopes.md S1). The
 * prefix holds a `.`, which the public id pattern forbids, so no peer created through the API can
 * take a scope's name; a peer that holds one anyway (legacy data) is a squatter, never a scope.
 */

export const SCOPE_PREFIX = 'scope.';
/** 512, the longest peer name, less the prefix. */
export const MAX_SCOPE_NAME = 512 - SCOPE_PREFIX.length;
const NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;

/** The peer behind the scope `name`. */
export const scopePeerId = (name: string): string => SCOPE_PREFIX + name;

/** The scope's name from its peer's id (the id itself when it has no prefix). */
export const scopeNameOf = (peerId: string): string => (peerId.startsWith(SCOPE_PREFIX) ? peerId.slice(SCOPE_PREFIX.length) : peerId);

/** A peer name in the reserved namespace (a scope, or a name only a scope may take). */
export const isReservedName = (peerId: string): boolean => peerId.startsWith(SCOPE_PREFIX);

/** What is wrong with a scope name, in the reference's words and order; undefined when it is a good one. */
export function scopeNameProblem(name: string): string | undefined {
  const length = [...name].length;
  if (length < 1 || length > MAX_SCOPE_NAME) return `Scope name must be between 1 and ${MAX_SCOPE_NAME} characters`;
  if (name.startsWith(SCOPE_PREFIX)) return "Scope name must not start with the reserved prefix 'scope.' (scope names are unprefixed)";
  if (!NAME_PATTERN.test(name)) return 'Scope name must match pattern ^[a-zA-Z0-9_-]+$';
  return undefined;
}

/** A Python list of strings as the reference prints one in a message: `['a', 'b']`. */
export function pythonList(items: readonly string[]): string {
  return `[${items.map(pythonString).join(', ')}]`;
}

/** A string as Python's repr writes it (single quotes unless it holds one and no double quote). */
function pythonString(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  return quote + text.replace(/\\/g, '\\\\').split(quote).join(`\\${quote}`) + quote;
}
